// What reading and judging a fleet screening costs (run by hand; docs/PERFORMANCE.md; issue
// 26's target: under a second on the 2-core machine for 1,024 GPUs):
//
//   build/bin/screening_read_bench [DIR] [GPUS] [RUNS]
//       defaults: a new temporary directory, 1024 GPUs, 5 runs
//
// Builds DIR/bench.db unless it exists (then it is reused as it is): one screening of GPUS
// single-GPU jobs (8 per node, labelled screening=bench, SUCCEEDED) written through the
// Store's write API, each with 510 iterations (10 warm-up, then SC22's 500 measured) and
// the 10 Hz readings of its GPU over its run (one per 0.1 s step: 510 readings), about
// 1 % of the GPUs 20 % slower under hw_thermal. Then a JobManager recovers over it and
// ReadService::Screening (the store's narrow read of every job's measured step times and
// readings, Store::ReadScreeningRows; the ScreenedGpu inputs and diagnosis::Screen: what
// GetScreening and /api/v1/screenings/{id} answer from) runs RUNS times; the min, median
// and max wall times are printed, with the verdict counts, then where the time goes.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/core/job_manager.h"
#include "server/core/read_service.h"
#include "server/store/store.h"

namespace {

using Clock = std::chrono::steady_clock;
using bench::Job;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

constexpr int kIterations = 510;
constexpr int kWarmup = 10;

int Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "screening_read_bench: %s: %s\n", what.c_str(), status.ToString().c_str());
  return 1;
}

Job MakeJob(int index, absl::Time created) {
  Job job;
  job.seq = index + 1;
  job.id = absl::StrCat("job-", 1000000 + index);
  const std::string node = absl::StrCat("node-", 1000 + index / 8);
  job.spec.model = "resnet50";
  job.spec.devices = 1;
  job.spec.precision = bench::Precision::kFp32;
  job.spec.batch_size = 64;
  job.spec.iterations = kIterations;
  job.spec.warmup_iterations = kWarmup;
  job.spec.image_size = 224;
  job.spec.labels = {{"screening", "bench"}};
  job.spec.allowed_nodes = {node};
  job.spec.request_id = absl::StrCat("screen-bench-", node, "-", index % 8);
  job.created = created;
  job.state = bench::JobState::kSucceeded;
  job.reason = "succeeded";
  job.history.push_back({bench::JobState::kQueued, "submitted", created});
  job.history.push_back({bench::JobState::kSucceeded, "succeeded", created + absl::Seconds(60)});
  job.attempt = 1;
  job.device_kind = bench::DeviceKind::kCuda;
  job.placements.push_back(bench::Placement{node, {0}, {index % 8}});
  job.rank_devices.push_back(
      bench::RankDevice{0, node, node, index % 8, absl::StrCat("GPU-", index), "NVIDIA H100"});
  return job;
}

absl::Status Build(bench::Store& store, int gpus) {
  const absl::Time start = absl::FromUnixSeconds(1'760'000'000);
  std::vector<std::future<absl::Status>> pending;
  auto wait = [&pending]() -> absl::Status {
    for (auto& f : pending) {
      if (absl::Status s = f.get(); !s.ok()) return s;
    }
    pending.clear();
    return absl::OkStatus();
  };
  for (int index = 0; index < gpus; ++index) {
    Job job = MakeJob(index, start + absl::Milliseconds(index));
    auto inserted = std::make_shared<std::promise<absl::Status>>();
    auto updated = std::make_shared<std::promise<absl::Status>>();
    pending.push_back(inserted->get_future());
    pending.push_back(updated->get_future());
    store.InsertJobAsync(job, [inserted](absl::Status s) { inserted->set_value(s); });
    store.UpdateJobAsync(job, [updated](absl::Status s) { updated->set_value(s); });
    const bool slow = index % 97 == 41;
    const double speed = 1.0 + ((index * 7919) % 81 - 40) * 0.001;  // +-4 %
    std::vector<bench::IterationSample> samples;
    std::vector<bench::GpuSample> readings;
    const int64_t t0 = absl::ToUnixNanos(job.created);
    for (int it = 1; it <= kIterations; ++it) {
      bench::IterationSample s;
      s.job_id = job.id;
      s.attempt = 1;
      s.iteration = it;
      s.step_time_s = 0.1 * speed * (slow ? 1.2 : 1.0) * (1 + (it % 7) * 0.002);
      s.images = 64;
      s.loss = 7.0 / (1 + it * 0.01);
      s.data_time_s = 0.002;
      s.elapsed_s = it * 0.1;
      s.warmup = it <= kWarmup;
      s.received_unix_ns = t0 + int64_t{it} * 100'000'000;
      samples.push_back(s);
      bench::GpuSample g;
      g.job_id = job.id;
      g.attempt = 1;
      g.seq = it;
      g.gpu_uuid = job.rank_devices[0].gpu_uuid;
      g.gpu_index = index % 8;
      g.time_unix_ns = s.received_unix_ns - 50'000'000;
      g.power_w = 600;
      g.sm_clock_mhz = slow ? 1400 : 1980;
      g.max_sm_clock_mhz = 1980;
      g.memory_clock_mhz = 2619;
      g.max_memory_clock_mhz = 2619;
      g.power_limit_w = 700;
      g.pcie_gen = g.pcie_gen_max = 5;
      g.pcie_width = g.pcie_width_max = 16;
      g.ecc_corrected = g.ecc_uncorrected = g.xid_errors = 0;
      g.temperature_c = slow ? 92 : 60;
      g.gpu_utilization_pct = 100;
      g.throttle_reasons = slow ? 0x40 : 0;
      readings.push_back(g);
    }
    auto appended = std::make_shared<std::promise<absl::Status>>();
    pending.push_back(appended->get_future());
    store.AppendSamples(
        std::move(samples), std::move(readings),
        [appended](absl::StatusOr<bench::AppendResult> r) { appended->set_value(r.status()); });
    if (index % 64 == 63) {
      if (absl::Status s = wait(); !s.ok()) return s;
      std::fprintf(stderr, "\rscreening_read_bench: %d/%d GPUs written", index + 1, gpus);
    }
  }
  std::fprintf(stderr, "\n");
  return wait();
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "";
  const int gpus = argc > 2 ? std::atoi(argv[2]) : 1024;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 5;
  if (gpus < 1 || runs < 1) {
    std::fprintf(stderr, "usage: screening_read_bench [DIR] [GPUS >= 1] [RUNS >= 1]\n");
    return 2;
  }
  if (dir.empty()) {
    char pattern[] = "/tmp/screening_read_bench_XXXXXX";
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
    if (absl::Status s = Build(**store, gpus); !s.ok()) return Fail("build", s);
    std::printf("built %s: %d GPUs x %d iterations and %d readings in %.1f s\n", path.c_str(), gpus,
                kIterations, kIterations, Ms(Clock::now() - t) / 1000);
  } else {
    std::printf("reusing %s\n", path.c_str());
  }
  bench::JobManager manager(store->get(), bench::JobManagerOptions{});
  if (absl::Status s = manager.Recover(); !s.ok()) return Fail("recover", s);
  bench::ReadService reads(store->get(), &manager);
  std::vector<double> ms;
  absl::StatusOr<bench::ScreeningView> view;
  for (int run = 0; run < runs; ++run) {
    const Clock::time_point t = Clock::now();
    view = reads.Screening("bench");
    ms.push_back(Ms(Clock::now() - t));
    if (!view.ok()) return Fail("screening", view.status());
  }
  std::sort(ms.begin(), ms.end());
  // Where the time goes: the store's narrow read, the inputs, the analysis; and, for
  // comparison, the full-row reads (ReadSamples, ReadGpuSamples) Screening used before.
  {
    const std::vector<bench::Job> jobs =
        manager.Snapshot([](const bench::Job& job) { return !bench::ScreeningIdOf(job).empty(); })
            .jobs;
    std::vector<std::pair<std::string, int>> attempts;
    for (const bench::Job& job : jobs) attempts.emplace_back(job.id, job.attempt);
    Clock::time_point t = Clock::now();
    absl::StatusOr<std::vector<bench::Store::ScreeningRows>> rows =
        (*store)->ReadScreeningRows(attempts);
    if (!rows.ok()) return Fail("narrow read", rows.status());
    const double narrow_ms = Ms(Clock::now() - t);
    std::vector<bench::diagnosis::ScreenedGpu> inputs;
    t = Clock::now();
    for (size_t i = 0; i < jobs.size(); ++i) {
      inputs.push_back(bench::ScreenedGpuOfMeasured(jobs[i], std::move((*rows)[i].step_times_s),
                                                    std::move((*rows)[i].readings)));
    }
    const double inputs_ms = Ms(Clock::now() - t);
    t = Clock::now();
    bench::diagnosis::Screen(inputs);
    const double screen_ms = Ms(Clock::now() - t);
    t = Clock::now();
    for (const bench::Job& job : jobs) (*store)->ReadSamples(job.id, job.attempt).IgnoreError();
    const double samples_ms = Ms(Clock::now() - t);
    t = Clock::now();
    for (const bench::Job& job : jobs) (*store)->ReadGpuSamples(job.id, job.attempt).IgnoreError();
    const double readings_ms = Ms(Clock::now() - t);
    std::printf(
        "of which: narrow read %.0f ms, inputs %.0f ms, Screen %.0f ms (full-row reads for "
        "comparison: iterations %.0f ms, readings %.0f ms)\n",
        narrow_ms, inputs_ms, screen_ms, samples_ms, readings_ms);
  }
  int slow = 0, fault = 0, failed = 0;
  for (const auto& gpu : view->report.gpus) {
    slow += gpu.slow;
    fault += gpu.fault;
    failed += gpu.failed;
  }
  std::printf(
      "ReadService::Screening over %d GPUs (read + inputs + Screen): min %.0f ms, median %.0f "
      "ms, max %.0f ms (%d runs); %zu verdicts: %d slow, %d fault, %d failed\n",
      view->jobs, ms.front(), ms[ms.size() / 2], ms.back(), runs, view->report.gpus.size(), slow,
      fault, failed);
  if (argc <= 1) std::filesystem::remove_all(dir);
  return 0;
}
