#include "server/live_streams.h"

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "server/proto_convert.h"

namespace bench {
namespace {

namespace v1 = benchfleet::v1;

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(message, &out, options).ok()) return "{}";
  return out;
}

void ToProtoGpu(const GpuSample& s, v1::GpuSample* p) {
  p->set_job_id(s.job_id);
  p->set_attempt(s.attempt);
  p->set_rank(s.rank);
  p->set_seq(s.seq);
  p->set_gpu_uuid(s.gpu_uuid);
  p->set_gpu_index(s.gpu_index);
  p->set_time_unix_ns(s.time_unix_ns);
  if (s.power_w) p->set_power_w(*s.power_w);
  if (s.power_average_w) p->set_power_average_w(*s.power_average_w);
  if (s.energy_j) p->set_energy_j(*s.energy_j);
  if (s.sm_clock_mhz) p->set_sm_clock_mhz(*s.sm_clock_mhz);
  if (s.memory_clock_mhz) p->set_memory_clock_mhz(*s.memory_clock_mhz);
  if (s.temperature_c) p->set_temperature_c(*s.temperature_c);
  if (s.gpu_utilization_pct) p->set_gpu_utilization_pct(*s.gpu_utilization_pct);
  if (s.memory_utilization_pct) p->set_memory_utilization_pct(*s.memory_utilization_pct);
  if (s.memory_used_bytes) p->set_memory_used_bytes(*s.memory_used_bytes);
  if (s.throttle_reasons) p->set_throttle_reasons(*s.throttle_reasons);
}

std::string JobJson(const JobView& view) {
  v1::JobStatus proto;
  ToProto(view, &proto);
  return ToJson(proto);
}

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      absl::StrAppend(&out, "\\u00", c < 16 ? "0" : "1",
                      absl::string_view(&"0123456789abcdef"[c & 15], 1));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
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
    // Iterations: per rank, each read continuing where the last stopped.
    std::vector<IterationSample> batch;
    auto flush_samples = [&]() {
      if (batch.empty()) return true;
      std::string json = "[";
      for (size_t i = 0; i < batch.size(); ++i) {
        v1::IterationSample proto;
        ToProto(batch[i], &proto);
        absl::StrAppend(&json, i ? "," : "", ToJson(proto));
      }
      json += "]";
      batch.clear();
      wrote = true;
      return stream_.Send("samples", json);
    };
    for (int rank = 0; iterations && rank < ranks; ++rank) {
      while (true) {
        const int left = limit - static_cast<int>(batch.size());
        auto rows = store_->ReadSamplesPage(job.id, attempt_, 0, rank,
                                            Store::SampleCursor{rank, last_iteration_[rank]},
                                            left);
        if (!rows.ok()) {
          Log("job stream ", job.id, ": ", rows.status().ToString());
          break;
        }
        for (IterationSample& s : *rows) {
          last_iteration_[rank] = s.iteration;
          batch.push_back(std::move(s));
        }
        if (static_cast<int>(batch.size()) >= limit && !flush_samples()) return false;
        if (static_cast<int>(rows->size()) < left) break;
      }
    }
    if (!flush_samples()) return false;

    std::vector<GpuSample> gpu;
    auto flush_gpu = [&]() {
      if (gpu.empty()) return true;
      std::string json = "[";
      for (size_t i = 0; i < gpu.size(); ++i) {
        v1::GpuSample proto;
        ToProtoGpu(gpu[i], &proto);
        absl::StrAppend(&json, i ? "," : "", ToJson(proto));
      }
      json += "]";
      gpu.clear();
      wrote = true;
      return stream_.Send("gpu", json);
    };
    for (int rank = 0; gpu_rows && rank < ranks; ++rank) {
      while (true) {
        const int left = limit - static_cast<int>(gpu.size());
        auto rows = store_->ReadGpuSamplesAfter(job.id, attempt_, rank, last_seq_[rank], left);
        if (!rows.ok()) {
          Log("job stream ", job.id, ": ", rows.status().ToString());
          break;
        }
        for (GpuSample& s : *rows) {
          last_seq_[rank] = s.seq;
          gpu.push_back(std::move(s));
        }
        if (static_cast<int>(gpu.size()) >= limit && !flush_gpu()) return false;
        if (static_cast<int>(rows->size()) < left) break;
      }
    }
    return flush_gpu();
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

void AppendNumber(std::string& out, const char* name, const std::optional<double>& value) {
  if (!value || !std::isfinite(*value)) return;
  absl::StrAppend(&out, ",\"", name, "\":", *value);
}

std::string FleetJson(JobManager* manager, LiveMetrics* live) {
  v1::ListAgentsResponse agents;
  for (const AgentView& view : manager->ListAgents()) ToProto(view, agents.add_agents());
  std::string json = ToJson(agents);  // {"agents":[...]}
  while (!json.empty() && json.back() != '}') json.pop_back();
  if (!json.empty()) json.pop_back();
  json += ",\"gpus\":[";
  if (live != nullptr) {
    bool first = true;
    for (const auto& [job_id, job] : live->Take(absl::Now()).jobs) {
      if (job.ended) continue;
      for (const auto& [rank, state] : job.ranks) {
        if (!state.gpu) continue;
        const GpuSample& g = *state.gpu;
        absl::StrAppend(&json, first ? "" : ",", "{\"job_id\":", JsonString(job_id),
                        ",\"rank\":", rank, ",\"node\":", JsonString(state.node),
                        ",\"gpu_index\":", g.gpu_index, ",\"gpu_uuid\":", JsonString(g.gpu_uuid),
                        ",\"time_unix_ns\":", g.time_unix_ns);
        AppendNumber(json, "power_w", g.power_w);
        AppendNumber(json, "sm_clock_mhz", g.sm_clock_mhz);
        AppendNumber(json, "temperature_c", g.temperature_c);
        AppendNumber(json, "gpu_utilization_pct", g.gpu_utilization_pct);
        json += "}";
        first = false;
      }
    }
  }
  return json + "]}";
}

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
  http.HandleEvents("/api/v1/fleet/events",
                    [manager, live, options](const HttpRequest&, EventStream& stream) {
                      // An event every fleet_period: no pings needed.
                      while (stream.Send("fleet", FleetJson(manager, live)) &&
                             stream.Wait(options.fleet_period)) {
                      }
                      return absl::OkStatus();
                    });
}

}  // namespace bench
