// The web API's answer times over a large database (run by hand; docs/PERFORMANCE.md).
//
//   build/bin/web_api_bench [DIR] [JOBS] [SAMPLES]
//       defaults: a new temporary directory, 100000 jobs, 10000000 samples
//
// Builds DIR/bench.db unless it exists (then it is reused as it is): JOBS ended jobs
// written through the Store's write API in big asynchronous batches (models, devices,
// precisions, batch sizes, GPU names, labels and states mixed), one of them of 100,000
// iterations, the rest sharing the remaining samples (rank 0, one row per iteration).
// Then a JobManager recovers over it (timed) and the handlers of server/http/web_api.h are
// called as plain functions (what the HTTP server calls, without the socket), each
// several times: the results grid, the first page of the jobs list, a filtered jobs page
// (state, model, label), and the 100,000-iteration job's samples downsampled to 1000
// points; then one configuration's history and, once, the variability report (no bar).
// Prints min, median and max in milliseconds, and the size of each answer.
// Bars (issue 14): results and jobs < 200 ms, the downsampled chart < 300 ms.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/core/job_manager.h"
#include "server/core/read_service.h"
#include "server/http/web_api.h"
#include "server/store/store.h"

namespace {

using Clock = std::chrono::steady_clock;
using bench::Job;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

constexpr int kBigJobIterations = 100000;
const char* const kModels[] = {"resnet18", "resnet34", "resnet50", "resnet101"};
const int kDevices[] = {1, 2, 4, 8};
const int kBatches[] = {64, 128, 256};
const char* const kGpus[] = {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"};
const char* const kTeams[] = {"vision", "infra", "perf"};

std::string JobId(int64_t seq) { return absl::StrCat("job-", 1000000 + seq); }

Job MakeJob(int64_t seq, int iterations, absl::Time created) {
  Job job;
  job.seq = seq;
  job.id = JobId(seq);
  job.spec.model = kModels[seq % 4];
  job.spec.devices = kDevices[(seq / 4) % 4];
  job.spec.precision = (seq / 16) % 2 ? bench::Precision::kAmp : bench::Precision::kFp32;
  job.spec.batch_size = kBatches[(seq / 32) % 3];
  job.spec.iterations = iterations;
  job.spec.warmup_iterations = std::min(10, iterations - 1);
  job.spec.image_size = 224;
  job.spec.name = absl::StrCat("nightly ", seq);
  job.spec.labels = {{"team", kTeams[seq % 3]}, {"suite", "nightly"}};
  job.created = created;
  job.history.push_back({bench::JobState::kQueued, "submitted", created});
  // 1 in 20 failed, 1 in 50 cancelled; the rest succeeded.
  const bench::JobState state = seq % 20 == 7    ? bench::JobState::kFailed
                                : seq % 50 == 11 ? bench::JobState::kCancelled
                                                 : bench::JobState::kSucceeded;
  job.history.push_back({bench::JobState::kRunning, "", created + absl::Seconds(1)});
  job.history.push_back({state, bench::JobStateText(state), created + absl::Seconds(60)});
  job.state = state;
  job.reason = bench::JobStateText(state);
  job.attempt = 1;
  job.device_kind = bench::DeviceKind::kCuda;
  job.telemetry_note = "benchmark data: no GPU readings";
  const std::string gpu = kGpus[(seq / 96) % 2];
  const int per_node = std::min(job.spec.devices, 8);
  for (int node = 0; node * per_node < job.spec.devices; ++node) {
    bench::Placement placement;
    placement.agent = absl::StrCat("node-", (seq + node) % 64);
    for (int i = 0; i < per_node; ++i) {
      const int rank = node * per_node + i;
      placement.ranks.push_back(rank);
      placement.device_indices.push_back(i);
      job.rank_devices.push_back({rank, placement.agent, placement.agent, i,
                                  absl::StrCat("GPU-", seq, "-", rank), gpu});
    }
    job.placements.push_back(placement);
  }
  if (state == bench::JobState::kSucceeded) {
    for (int rank = 0; rank < job.spec.devices; ++rank) {
      const double window = 10.0 + (seq % 7) * 0.1;
      job.summaries[rank] = bench::RankSummary{
          rank, iterations - job.spec.warmup_iterations,
          int64_t{iterations - job.spec.warmup_iterations} * job.spec.batch_size, window, 0.1};
    }
  }
  return job;
}

int Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "web_api_bench: %s: %s\n", what.c_str(), status.ToString().c_str());
  return 1;
}

// Writes the database: jobs through InsertJobAsync + UpdateJobAsync, samples through
// AppendSamples, in batches, waiting only for each batch's last write.
absl::Status Build(bench::Store& store, int64_t jobs, int64_t samples) {
  const absl::Time start = absl::FromUnixSeconds(1'750'000'000);
  const int64_t big_seq = jobs / 2;  // the 100,000-iteration job
  const int64_t rest = std::max<int64_t>(samples - kBigJobIterations, 0);
  const int per_job = static_cast<int>(std::max<int64_t>(rest / std::max<int64_t>(jobs - 1, 1), 2));
  std::vector<bench::IterationSample> batch;
  std::vector<std::future<absl::Status>> pending;
  auto flush_samples = [&store, &batch, &pending] {
    if (batch.empty()) return;
    auto done = std::make_shared<std::promise<absl::Status>>();
    pending.push_back(done->get_future());
    store.AppendSamples(std::move(batch), [done](absl::StatusOr<bench::AppendResult> r) {
      done->set_value(r.status());
    });
    batch.clear();
  };
  auto wait = [&pending]() -> absl::Status {
    for (auto& f : pending) {
      if (absl::Status s = f.get(); !s.ok()) return s;
    }
    pending.clear();
    return absl::OkStatus();
  };
  const Clock::time_point t0 = Clock::now();
  for (int64_t seq = 1; seq <= jobs; ++seq) {
    const int iterations = seq == big_seq ? kBigJobIterations : per_job;
    Job job = MakeJob(seq, iterations, start + absl::Seconds(seq * 90));
    auto inserted = std::make_shared<std::promise<absl::Status>>();
    auto updated = std::make_shared<std::promise<absl::Status>>();
    pending.push_back(inserted->get_future());
    pending.push_back(updated->get_future());
    store.InsertJobAsync(job, [inserted](absl::Status s) { inserted->set_value(s); });
    store.UpdateJobAsync(job, [updated](absl::Status s) { updated->set_value(s); });
    for (int it = 1; it <= iterations; ++it) {
      bench::IterationSample s;
      s.job_id = job.id;
      s.attempt = 1;
      s.rank = 0;
      s.iteration = it;
      s.step_time_s = 0.1 + (it % 13) * 0.001;
      s.images = job.spec.batch_size;
      s.loss = 7.0 / (1 + it * 0.01);
      s.data_time_s = 0.002;
      s.elapsed_s = it * 0.1;
      s.warmup = it <= job.spec.warmup_iterations;
      s.received_unix_ns = absl::ToUnixNanos(job.created) + int64_t{it} * 100'000'000;
      batch.push_back(std::move(s));
      if (batch.size() >= 50000) flush_samples();
    }
    if (seq % 5000 == 0) {
      flush_samples();
      if (absl::Status s = wait(); !s.ok()) return s;
      std::fprintf(stderr, "\rweb_api_bench: %lld/%lld jobs written (%.0f s)",
                   static_cast<long long>(seq), static_cast<long long>(jobs),
                   Ms(Clock::now() - t0) / 1000);
    }
  }
  flush_samples();
  if (absl::Status s = wait(); !s.ok()) return s;
  std::fprintf(stderr, "\n");
  return absl::OkStatus();
}

struct Timing {
  std::string what;
  std::vector<double> ms;
  size_t bytes = 0;
  int status = 0;
};

template <typename F>
Timing Time(const std::string& what, int runs, F call) {
  Timing timing{what, {}, 0, 0};
  for (int i = 0; i < runs; ++i) {
    const Clock::time_point t = Clock::now();
    bench::HttpResponse response = call();
    timing.ms.push_back(Ms(Clock::now() - t));
    timing.bytes = response.body.size();
    timing.status = response.status;
  }
  std::sort(timing.ms.begin(), timing.ms.end());
  return timing;
}

bench::HttpRequest Request(const std::string& path,
                           std::multimap<std::string, std::string> query = {}) {
  bench::HttpRequest request;
  request.method = "GET";
  request.path = path;
  request.query = std::move(query);
  return request;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "";
  const int64_t jobs = argc > 2 ? std::atoll(argv[2]) : 100000;
  const int64_t samples = argc > 3 ? std::atoll(argv[3]) : 10000000;
  if (jobs < 2 || samples < kBigJobIterations) {
    std::fprintf(stderr, "usage: web_api_bench [DIR] [JOBS>=2] [SAMPLES>=%d]\n",
                 kBigJobIterations);
    return 2;
  }
  if (dir.empty()) {
    char pattern[] = "/tmp/web_api_bench_XXXXXX";
    if (mkdtemp(pattern) == nullptr) {
      std::perror("mkdtemp");
      return 1;
    }
    dir = pattern;
  }
  const std::string path = dir + "/bench.db";
  const bool exists = std::filesystem::exists(path);
  absl::StatusOr<std::unique_ptr<bench::Store>> store = bench::Store::Open(path);
  if (!store.ok()) return Fail("open " + path, store.status());
  if (!exists) {
    const Clock::time_point t = Clock::now();
    if (absl::Status s = Build(**store, jobs, samples); !s.ok()) return Fail("build", s);
    std::printf("built %s: %lld jobs, %lld samples in %.1f s\n", path.c_str(),
                static_cast<long long>(jobs), static_cast<long long>(samples),
                Ms(Clock::now() - t) / 1000);
  } else {
    std::printf("reusing %s\n", path.c_str());
  }
  bench::JobManager manager(store->get(), bench::JobManagerOptions{});
  const Clock::time_point recover_start = Clock::now();
  if (absl::Status s = manager.Recover(); !s.ok()) return Fail("recover", s);
  std::printf("JobManager::Recover: %.0f ms\n", Ms(Clock::now() - recover_start));
  bench::ReadService reads(store->get(), &manager);
  const bench::WebApi api(&manager, &reads, store->get());

  const std::string big = JobId(jobs / 2);
  // WEB_API_BENCH_RUNS=N: more runs (e.g. under perf).
  const int runs = std::getenv("WEB_API_BENCH_RUNS") ? std::atoi(std::getenv("WEB_API_BENCH_RUNS")) : 7;
  std::vector<Timing> timings;
  timings.push_back(Time("GET /api/v1/results", runs,
                         [&] { return api.Serve(Request("/api/v1/results")); }));
  timings.push_back(Time("  of which ReadService::Results (domain cells)", runs, [&] {
    bench::HttpResponse response;
    response.body.resize(reads.Results(bench::ResultsFilter{}).size());
    return response;
  }));
  timings.push_back(Time("GET /api/v1/results?model=resnet50", runs, [&] {
    return api.Serve(Request("/api/v1/results", {{"model", "resnet50"}}));
  }));
  timings.push_back(
      Time("GET /api/v1/jobs (first page, 100)", runs, [&] { return api.Serve(Request("/api/v1/jobs")); }));
  timings.push_back(Time("GET /api/v1/jobs?state=FAILED&model=resnet101&label=team=perf", runs, [&] {
    return api.Serve(Request("/api/v1/jobs", {{"state", "FAILED"},
                                              {"model", "resnet101"},
                                              {"label", "team=perf"}}));
  }));
  timings.push_back(Time("GET /api/v1/jobs?label=team=none (no match: full scan)", runs, [&] {
    return api.Serve(Request("/api/v1/jobs", {{"label", "team=none"}}));
  }));
  timings.push_back(Time("GET /api/v1/jobs/" + big + "/samples?points=1000", runs, [&] {
    return api.Serve(Request("/api/v1/jobs/" + big + "/samples", {{"points", "1000"}}));
  }));
  timings.push_back(Time("GET /api/v1/jobs/" + big + "/samples (first page, 1000)", runs, [&] {
    return api.Serve(Request("/api/v1/jobs/" + big + "/samples"));
  }));
  timings.push_back(Time("GET /api/v1/history?model=resnet50&devices=8&precision=amp&batch_size=256",
                         runs, [&] {
                           return api.Serve(Request("/api/v1/history", {{"model", "resnet50"},
                                                                        {"devices", "8"},
                                                                        {"precision", "amp"},
                                                                        {"batch_size", "256"}}));
                         }));
  // No bar: it reads every SUCCEEDED cuda job's samples (ReadService::Variability).
  timings.push_back(Time("GET /api/v1/variability (1 run)", 1,
                         [&] { return api.Serve(Request("/api/v1/variability")); }));
  std::printf("%-70s %8s %8s %8s %10s\n", ("request (" + std::to_string(runs) + " runs)").c_str(), "min ms",
              "median", "max", "bytes");
  for (const Timing& t : timings) {
    std::printf("%-70s %8.1f %8.1f %8.1f %10zu%s\n", t.what.c_str(), t.ms.front(),
                t.ms[t.ms.size() / 2], t.ms.back(), t.bytes,
                t.status == 200 ? "" : absl::StrCat("  HTTP ", t.status).c_str());
  }
  return 0;
}
