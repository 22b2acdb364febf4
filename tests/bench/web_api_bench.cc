// The web API's answer times over a large database (run by hand; docs/PERFORMANCE.md).
//
//   build/bin/web_api_bench [DIR] [JOBS] [SAMPLES] [READINGS]
//       defaults: a new temporary directory, 100000 jobs, 10000000 samples, 0 readings
//
// With READINGS > 0 (the fleet's database, issue 27: e.g. 100000 50000000 50000000 is
// 100 M rows) the jobs ran on a fleet of 1,024 nodes x 8 GPUs (8,192 GPU UUIDs, each
// job's ranks on consecutive nodes), every rank of a job has samples (SAMPLES shared
// over the jobs and their ranks) and as many GPU readings (READINGS shared the same
// way; integer MHz clocks and degrees, milliwatt power, at the iterations' times).
//
// Builds DIR/bench.db unless it exists (then it is reused as it is): JOBS ended jobs
// written through the Store's write API in big asynchronous batches (models, devices,
// precisions, batch sizes, GPU names, labels and states mixed), one of them of 100,000
// iterations, the rest sharing the remaining samples (rank 0, one row per iteration).
// Then the store is opened (timed: it includes a migration of an older database), a
// JobManager recovers over it (timed) and the handlers of server/http/web_api.h are
// called as plain functions (what the HTTP server calls, without the socket), each
// several times (WEB_API_BENCH_RUNS, default 7): the results grid and its grids view,
// ReadService::Results (the Results RPC), the jobs list's first page, filtered pages, one
// job, the 100,000-iteration job's samples (downsampled to 1000 points and the first
// page), one configuration's history; then the variability report, through the API and
// as ReadService::Variability (the GpuVariability RPC; WEB_API_BENCH_VARIABILITY_RUNS,
// default 3: the first call after a restart reads the stored summaries).
// Linked with benchd's allocator (server/heap_policy.h) and its settings, as benchd is.
// Prints min, median and max wall milliseconds, the median CPU milliseconds of the
// calling thread, and the size of each answer.
// Bars: issue 14's results and jobs < 200 ms, the downsampled chart < 300 ms; issue
// 27's results, grids, jobs, job and variability < 500 ms at 100 M rows.
#include <time.h>
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
#include "server/heap_policy.h"
#include "server/http/web_api.h"
#include "server/store/store.h"

namespace {

using Clock = std::chrono::steady_clock;
using bench::Job;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// This thread's CPU time in ms (the handlers and the store's reads run on it): what a
// call costs, less disturbed than wall time on a shared, loaded machine.
double ThreadCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

constexpr int kBigJobIterations = 100000;
const char* const kModels[] = {"resnet18", "resnet34", "resnet50", "resnet101"};
const int kDevices[] = {1, 2, 4, 8};
const int kBatches[] = {64, 128, 256};
const char* const kGpus[] = {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"};
const char* const kTeams[] = {"vision", "infra", "perf"};

std::string JobId(int64_t seq) { return absl::StrCat("job-", 1000000 + seq); }

constexpr int kFleetNodes = 1024;  // x 8 GPUs, with READINGS > 0

Job MakeJob(int64_t seq, int iterations, absl::Time created, bool fleet) {
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
    const int64_t node_index = fleet ? (seq * 7 + node) % kFleetNodes : (seq + node) % 64;
    placement.agent = absl::StrCat("node-", node_index);
    for (int i = 0; i < per_node; ++i) {
      const int rank = node * per_node + i;
      // The fleet's GPUs are the nodes' 8 each; otherwise every rank a GPU of its own.
      const int device = fleet ? static_cast<int>((i + seq / 4) % 8) : i;
      placement.ranks.push_back(rank);
      placement.device_indices.push_back(device);
      job.rank_devices.push_back(
          {rank, placement.agent, placement.agent, device,
           fleet ? absl::StrCat("GPU-", placement.agent, "-", device)
                 : absl::StrCat("GPU-", seq, "-", rank),
           gpu});
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
absl::Status Build(bench::Store& store, int64_t jobs, int64_t samples, int64_t readings) {
  const bool fleet = readings > 0;
  const absl::Time start = absl::FromUnixSeconds(1'750'000'000);
  const int64_t big_seq = jobs / 2;  // the 100,000-iteration job
  const int64_t rest = std::max<int64_t>(samples - kBigJobIterations, 0);
  const int per_job = static_cast<int>(std::max<int64_t>(rest / std::max<int64_t>(jobs - 1, 1), 2));
  const int readings_per_job = static_cast<int>(readings / jobs);
  std::vector<bench::IterationSample> batch;
  std::vector<bench::GpuSample> gpu_batch;
  std::vector<std::future<absl::Status>> pending;
  auto flush_samples = [&store, &batch, &gpu_batch, &pending] {
    if (batch.empty() && gpu_batch.empty()) return;
    auto done = std::make_shared<std::promise<absl::Status>>();
    pending.push_back(done->get_future());
    store.AppendSamples(std::move(batch), std::move(gpu_batch),
                        [done](absl::StatusOr<bench::AppendResult> r) {
                          done->set_value(r.status());
                        });
    batch.clear();
    gpu_batch.clear();
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
    // In the fleet's database every rank has samples: the job's share split over them.
    const int ranks = fleet ? kDevices[(seq / 4) % 4] : 1;
    const int iterations =
        seq == big_seq ? kBigJobIterations : std::max(per_job / ranks, 12);
    Job job = MakeJob(seq, iterations, start + absl::Seconds(seq * 90), fleet);
    auto inserted = std::make_shared<std::promise<absl::Status>>();
    auto updated = std::make_shared<std::promise<absl::Status>>();
    pending.push_back(inserted->get_future());
    pending.push_back(updated->get_future());
    store.InsertJobAsync(job, [inserted](absl::Status s) { inserted->set_value(s); });
    store.UpdateJobAsync(job, [updated](absl::Status s) { updated->set_value(s); });
    for (int rank = 0; rank < ranks; ++rank) {
    for (int it = 1; it <= iterations; ++it) {
      bench::IterationSample s;
      s.job_id = job.id;
      s.attempt = 1;
      s.rank = rank;
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
    const bench::RankDevice& device = job.rank_devices[rank];
    const int rank_readings = fleet ? std::max(readings_per_job / ranks, 2) : 0;
    for (int r = 0; r < rank_readings; ++r) {
      // Spread over the iterations' times; a GPU's own offset, so that GPUs differ.
      const int64_t jitter = (seq * 31 + rank * 7 + r * 13) % 29;
      bench::GpuSample g;
      g.job_id = job.id;
      g.attempt = 1;
      g.rank = rank;
      g.seq = r + 1;
      g.gpu_uuid = device.gpu_uuid;
      g.gpu_index = device.device_index;
      g.time_unix_ns = absl::ToUnixNanos(job.created) +
                       (int64_t{r} * iterations / rank_readings + 1) * 100'000'000;
      g.sm_clock_mhz = 1950.0 + static_cast<double>(jitter + device.device_index * 3);
      g.temperature_c = 60.0 + static_cast<double>((jitter + r) % 17);
      g.power_w = 650.0 + static_cast<double>((seq * 977 + r * 131) % 40000) / 1000.0;
      g.memory_clock_mhz = 2619.0;
      g.gpu_utilization_pct = 100.0;
      g.energy_j = 1000.0 + r * 65.0;
      gpu_batch.push_back(std::move(g));
      if (gpu_batch.size() >= 50000) flush_samples();
    }
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
  std::vector<double> cpu_ms;
  size_t bytes = 0;
  int status = 0;
};

template <typename F>
Timing Time(const std::string& what, int runs, F call) {
  Timing timing{what, {}, {}, 0, 0};
  for (int i = 0; i < runs; ++i) {
    const Clock::time_point t = Clock::now();
    const double cpu = ThreadCpuMs();
    bench::HttpResponse response = call();
    timing.cpu_ms.push_back(ThreadCpuMs() - cpu);
    timing.ms.push_back(Ms(Clock::now() - t));
    timing.bytes = response.body.size();
    timing.status = response.status;
  }
  std::sort(timing.ms.begin(), timing.ms.end());
  std::sort(timing.cpu_ms.begin(), timing.cpu_ms.end());
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
  const int64_t readings = argc > 4 ? std::atoll(argv[4]) : 0;
  if (jobs < 2 || samples < kBigJobIterations || readings < 0) {
    std::fprintf(stderr, "usage: web_api_bench [DIR] [JOBS>=2] [SAMPLES>=%d] [READINGS>=0]\n",
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
  // benchd's allocator, linked as benchd links it.
  absl::StatusOr<std::string> heap = bench::ControllerHeapInUse();
  std::printf("allocator: %s\n", heap.ok() ? heap->c_str() : heap.status().ToString().c_str());
  const std::string path = dir + "/bench.db";
  const bool exists = std::filesystem::exists(path);
  const Clock::time_point open_start = Clock::now();
  absl::StatusOr<std::unique_ptr<bench::Store>> store = bench::Store::Open(path);
  if (!store.ok()) return Fail("open " + path, store.status());
  // With a database of an older schema this includes its migration.
  std::printf("Store::Open: %.0f ms\n", Ms(Clock::now() - open_start));
  if (!exists) {
    const Clock::time_point t = Clock::now();
    if (absl::Status s = Build(**store, jobs, samples, readings); !s.ok()) return Fail("build", s);
    std::printf("built %s: %lld jobs, %lld samples, %lld readings in %.1f s\n", path.c_str(),
                static_cast<long long>(jobs), static_cast<long long>(samples),
                static_cast<long long>(readings),
                Ms(Clock::now() - t) / 1000);
  } else {
    std::printf("reusing %s\n", path.c_str());
  }
  bench::JobManager manager(store->get(), bench::JobManagerOptions{});
  const Clock::time_point recover_start = Clock::now();
  const double recover_cpu = ThreadCpuMs();
  if (absl::Status s = manager.Recover(); !s.ok()) return Fail("recover", s);
  std::printf("JobManager::Recover: %.0f ms (CPU %.0f ms)\n", Ms(Clock::now() - recover_start),
              ThreadCpuMs() - recover_cpu);
  bench::ReadService reads(store->get(), &manager);
  const bench::WebApi api(&manager, &reads, store->get());

  const std::string big = JobId(jobs / 2);
  // WEB_API_BENCH_RUNS=N: more runs (e.g. under perf).
  const int runs = std::getenv("WEB_API_BENCH_RUNS") ? std::atoi(std::getenv("WEB_API_BENCH_RUNS")) : 7;
  std::vector<Timing> timings;
  timings.push_back(Time("GET /api/v1/results", runs,
                         [&] { return api.Serve(Request("/api/v1/results")); }));
  timings.push_back(Time("  of which ReadService::Results (domain cells; the Results RPC)", runs, [&] {
    bench::HttpResponse response;
    response.body.resize(reads.Results(bench::ResultsFilter{}).size());
    return response;
  }));
  timings.push_back(Time("GET /api/v1/results/grids", runs,
                         [&] { return api.Serve(Request("/api/v1/results/grids")); }));
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
  timings.push_back(Time("GET /api/v1/jobs/" + JobId(jobs - 3), runs,
                         [&] { return api.Serve(Request("/api/v1/jobs/" + JobId(jobs - 3))); }));
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
  // ReadService::Variability: what GET /api/v1/variability and the GpuVariability RPC
  // (benchctl gpus --outliers) answer. WEB_API_BENCH_VARIABILITY_RUNS=N (default 3).
  const int variability_runs = std::getenv("WEB_API_BENCH_VARIABILITY_RUNS")
                                   ? std::atoi(std::getenv("WEB_API_BENCH_VARIABILITY_RUNS"))
                                   : 3;
  timings.push_back(Time(absl::StrCat("GET /api/v1/variability (", variability_runs, " runs)"),
                         variability_runs,
                         [&] { return api.Serve(Request("/api/v1/variability")); }));
  timings.push_back(Time(absl::StrCat("  ReadService::Variability (GpuVariability RPC, ",
                                      variability_runs, " runs)"),
                         variability_runs, [&] {
                           bench::HttpResponse response;
                           absl::StatusOr<bench::VariabilityReport> report =
                               reads.Variability(0, "");
                           response.status = report.ok() ? 200 : 500;
                           if (report.ok()) response.body.resize(report->gpus.size());
                           return response;
                         }));
  std::printf("%-70s %8s %8s %8s %8s %10s\n",
              ("request (" + std::to_string(runs) + " runs)").c_str(), "min ms", "median", "max",
              "cpu med", "bytes");
  for (const Timing& t : timings) {
    std::printf("%-70s %8.1f %8.1f %8.1f %8.1f %10zu%s\n", t.what.c_str(), t.ms.front(),
                t.ms[t.ms.size() / 2], t.ms.back(), t.cpu_ms[t.cpu_ms.size() / 2], t.bytes,
                t.status == 200 ? "" : absl::StrCat("  HTTP ", t.status).c_str());
  }
  return 0;
}
