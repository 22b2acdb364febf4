#include "server/http/live_streams.h"

#include <atomic>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "report/json_output.h"
#include "server/http/fleet_event.h"
#include "server/http/sample_json.h"
#include "server/rpc/proto_convert.h"

namespace bench {
namespace {

namespace v1 = benchfleet::v1;

// One line of the proto's JSON mapping (report/json_output.h), without its newline.
std::string ToJson(const google::protobuf::Message& message) {
  std::string json = report::ToJson(message);
  json.pop_back();
  return json;
}

std::string JobJson(const JobView& view) {
  v1::JobStatus proto;
  ToProto(view, &proto);
  return ToJson(proto);
}

// The latest view the manager's watch reported; the callbacks only record.
struct WatchState {
  absl::Mutex mu;
  std::optional<JobView> latest ABSL_GUARDED_BY(mu);
  bool final ABSL_GUARDED_BY(mu) = false;
  bool closed ABSL_GUARDED_BY(mu) = false;  // benchd is shutting down
  // Calls so far: the manager notifies after each commit that stored iterations of the
  // job, so an unchanged count means no new iterations to read.
  int64_t updates ABSL_GUARDED_BY(mu) = 0;
};

class JobStream {
 public:
  JobStream(JobManager* manager, Store* store, const LiveStreamOptions& options,
            EventStream& stream)
      : manager_(manager), store_(store), options_(options), stream_(stream) {}

  absl::Status Run(const std::string& job_id) {
    auto state = std::make_shared<WatchState>();
    auto handle = manager_->Watch(
        job_id,
        [state](const JobView& view, bool final) {
          absl::MutexLock lock(&state->mu);
          state->latest = view;
          state->final = final;
          ++state->updates;
        },
        [state](const absl::Status&) {
          absl::MutexLock lock(&state->mu);
          state->closed = true;
        });
    if (!handle.ok()) return handle.status();  // NOT_FOUND before anything is sent
    absl::Status status = Loop(*state);
    manager_->Unwatch(*handle);
    return status;
  }

 private:
  absl::Status Loop(WatchState& state) {
    std::optional<JobView> sent;  // the last view sent as a `job` event
    absl::Time last_write = absl::Now();
    while (true) {
      std::optional<JobView> view;
      bool final = false, closed = false;
      int64_t updates = 0;
      {
        absl::MutexLock lock(&state.mu);
        view = state.latest;
        final = state.final;
        closed = state.closed;
        updates = state.updates;
      }
      if (!view) return absl::InternalError("watch gave no view");
      const Job& job = view->job;
      if (!sent) {
        if (!stream_.Send("job", JobJson(*view))) return absl::OkStatus();
        sent = view;
        last_write = absl::Now();
      }
      if (job.attempt != attempt_) {  // a new attempt: its rows start over
        attempt_ = job.attempt;
        last_iteration_.clear();
        last_seq_.clear();
        updates_read_ = -1;
        gpu_read_ = absl::InfinitePast();
      }
      // Rows stored before the view was taken go out before its `job` event.
      // Iterations are read after a notification (or at the end); GPU readings, which
      // come without one when no iteration does, at least every kGpuPeriod as well.
      if (attempt_ > 0 && job.state != JobState::kQueued) {
        const bool iterations = final || updates != updates_read_;
        const bool gpu = iterations || absl::Now() - gpu_read_ >= kGpuPeriod;
        bool wrote = false;
        if ((iterations || gpu) && !SendRows(job, iterations, gpu, wrote)) {
          return absl::OkStatus();
        }
        if (iterations) updates_read_ = updates;
        if (gpu) gpu_read_ = absl::Now();
        if (wrote) last_write = absl::Now();
      }
      if (job.state != sent->job.state || job.attempt != sent->job.attempt ||
          job.reason != sent->job.reason || final) {
        if (!stream_.Send("job", JobJson(*view))) return absl::OkStatus();
        sent = view;
        last_write = absl::Now();
      }
      if (final || closed) return absl::OkStatus();
      if (absl::Now() - last_write >= options_.ping_period) {
        if (!stream_.Ping()) return absl::OkStatus();
        last_write = absl::Now();
      }
      if (!stream_.Wait(options_.poll_period)) return absl::OkStatus();
    }
  }

  // Sends the current attempt's rows after the cursors; false once the client is gone.
  bool SendRows(const Job& job, bool iterations, bool gpu_rows, bool& wrote) {
    const int ranks = std::max(job.spec.devices, 1);
    const int limit = std::max(options_.batch_rows, 1);
    std::vector<IterationSample> batch;
    auto flush_samples = [&]() {
      if (batch.empty()) return true;
      std::string json = "[";
      for (size_t i = 0; i < batch.size(); ++i) {
        if (i > 0) json += ",";
        AppendSampleJson(json, batch[i]);
      }
      json += "]";
      batch.clear();
      wrote = true;
      return stream_.Send("samples", json);
    };
    // Iterations: the attempt's rows in stored order (iteration, then rank) from the
    // least advanced rank's cursor on, one pass however many ranks; rows a rank's
    // cursor has passed were sent before.
    if (iterations) {
      Store::AttemptCursor cursor{LeastOf(last_iteration_, ranks), std::numeric_limits<int>::max()};
      while (true) {
        auto rows = store_->ReadSamplesAfter(job.id, attempt_, cursor, limit);
        if (!rows.ok()) {
          Log("job stream ", job.id, ": ", rows.status().ToString());
          break;
        }
        for (IterationSample& s : *rows) {
          cursor = {s.iteration, s.rank};
          int& last = last_iteration_[s.rank];
          if (s.iteration <= last) continue;
          last = s.iteration;
          batch.push_back(std::move(s));
          if (static_cast<int>(batch.size()) >= limit && !flush_samples()) return false;
        }
        if (static_cast<int>(rows->size()) < limit) break;
      }
    }
    if (!flush_samples()) return false;

    std::vector<GpuSample> gpu;
    auto flush_gpu = [&]() {
      if (gpu.empty()) return true;
      std::string json = "[";
      for (size_t i = 0; i < gpu.size(); ++i) {
        if (i > 0) json += ",";
        AppendGpuSampleJson(json, gpu[i]);
      }
      json += "]";
      gpu.clear();
      wrote = true;
      return stream_.Send("gpu", json);
    };
    if (gpu_rows) {
      Store::AttemptCursor cursor{LeastOf(last_seq_, ranks), std::numeric_limits<int>::max()};
      while (true) {
        auto rows = store_->ReadGpuSamplesAfter(job.id, attempt_, cursor, limit);
        if (!rows.ok()) {
          Log("job stream ", job.id, ": ", rows.status().ToString());
          break;
        }
        for (GpuSample& s : *rows) {
          cursor = {s.seq, s.rank};
          int64_t& last = last_seq_[s.rank];
          if (s.seq <= last) continue;
          last = s.seq;
          gpu.push_back(std::move(s));
          if (static_cast<int>(gpu.size()) >= limit && !flush_gpu()) return false;
        }
        if (static_cast<int>(rows->size()) < limit) break;
      }
    }
    return flush_gpu();
  }

  // The smallest of the ranks' cursors (0 for a rank with none yet).
  template <typename Position>
  static int64_t LeastOf(const std::map<int, Position>& last_by_rank, int ranks) {
    int64_t least = std::numeric_limits<int64_t>::max();
    for (int rank = 0; rank < ranks; ++rank) {
      auto it = last_by_rank.find(rank);
      least = std::min<int64_t>(least, it == last_by_rank.end() ? 0 : it->second);
    }
    return least;
  }

  JobManager* const manager_;
  Store* const store_;
  const LiveStreamOptions options_;
  EventStream& stream_;
  static constexpr absl::Duration kGpuPeriod = absl::Seconds(1);
  int attempt_ = 0;
  int64_t updates_read_ = -1;         // `updates` when iterations were last read
  absl::Time gpu_read_ = absl::InfinitePast();
  std::map<int, int> last_iteration_;  // by rank, of attempt_
  std::map<int, int64_t> last_seq_;    // by rank, of attempt_
};

}  // namespace

void RegisterLiveStreams(HttpServer& http, JobManager* manager, Store* store,
                         LiveMetrics* live, LiveStreamOptions options) {
  http.HandleEvents("/api/v1/jobs/*/events",
                    [manager, store, options](const HttpRequest& request, EventStream& stream) {
                      std::vector<std::string> parts = absl::StrSplit(request.path, '/');
                      // "", "api", "v1", "jobs", id, "events"
                      const std::string job_id = parts.size() == 6 ? parts[4] : "";
                      JobStream job_stream(manager, store, options, stream);
                      return job_stream.Run(job_id);
                    });
  // One rendering per fleet_period, shared by every open fleet stream.
  const absl::Duration fleet_period = options.fleet_period;
  std::atomic<int64_t>* renders = options.fleet_renders;
  auto fleet =
      std::make_shared<FleetEventCache>(fleet_period, [manager, live, renders](absl::Time now) {
        if (renders != nullptr) renders->fetch_add(1);
        return RenderFleetEvent(manager->ListAgents(), live, now);
      });
  http.HandleEvents(
      "/api/v1/fleet/events", [fleet, fleet_period](const HttpRequest&, EventStream& stream) {
        // An event every fleet_period: no pings needed.
        while (stream.Send("fleet", *fleet->Get(absl::Now())) && stream.Wait(fleet_period)) {
        }
        return absl::OkStatus();
      });
}

}  // namespace bench
