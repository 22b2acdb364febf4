// What benchd's timers and an agent's per-second RPCs cost beside a long history (run by
// hand; docs/PERFORMANCE.md "Timers at 100,000 jobs").
//
//   build/bin/timers_bench [DIR] [ENDED_JOBS] [AGENTS] [RUNNING_JOBS] [RUNS]
//       defaults: a new temporary directory, 100000 ended jobs, 1024 agents of 8 GPUs,
//       1000 running 8-GPU jobs, 200 runs of each call
//
// Builds DIR/timers.db unless it exists (then it is reused): ENDED_JOBS ended jobs written
// through the Store's write API. A JobManager recovers them, AGENTS agents of 8 GPUs
// register and attach a channel, and RUNNING_JOBS 8-GPU jobs are submitted, placed (one
// per agent) and acknowledged by their agents. Then each call below runs RUNS times on
// the benchmark's thread, as benchd's callers make it: the liveness loop's CheckAgents
// and CheckLimits (every 250 ms), the Slurm poll's PendingAllocationWork, /metrics'
// Fleet(), benchctl queue's Queue(), and an agent's Heartbeat, ReportStatus (a rank
// still running), UploadSamples (8 iterations and 8 GPU readings: the call, and until its
// commit), AttachChannel (a reconnect) and Deregister of an idle agent. Prints min,
// median and max wall microseconds and the median of the thread's CPU time.
#include <time.h>
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
#include "absl/strings/str_format.h"
#include "server/core/job_manager.h"
#include "server/store/store.h"

namespace {

using Steady = std::chrono::steady_clock;
using bench::Job;

double Us(Steady::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double ThreadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "timers_bench: %s: %s\n", what.c_str(), status.ToString().c_str());
  return 1;
}

// An ended 8-GPU job (1 in 20 failed, 1 in 50 cancelled, the rest succeeded).
Job EndedJob(int64_t seq, absl::Time created) {
  Job job;
  job.seq = seq;
  job.id = absl::StrFormat("job-%06d", seq);
  job.spec.model = "resnet50";
  job.spec.devices = 8;
  job.spec.precision = bench::Precision::kAmp;
  job.spec.batch_size = 256;
  job.spec.iterations = 100;
  job.spec.warmup_iterations = 10;
  job.spec.image_size = 224;
  job.created = created;
  const bench::JobState state = seq % 20 == 7    ? bench::JobState::kFailed
                                : seq % 50 == 11 ? bench::JobState::kCancelled
                                                 : bench::JobState::kSucceeded;
  job.history.push_back({bench::JobState::kQueued, "submitted", created});
  job.history.push_back({bench::JobState::kRunning, "", created + absl::Seconds(1)});
  job.history.push_back({state, bench::JobStateText(state), created + absl::Seconds(60)});
  job.state = state;
  job.reason = bench::JobStateText(state);
  job.attempt = 1;
  job.device_kind = bench::DeviceKind::kCuda;
  job.telemetry_note = "benchmark data: no GPU readings";  // joined: recovery joins nothing
  bench::Placement placement;
  placement.agent = absl::StrFormat("node-%04d", seq % 1024);
  for (int rank = 0; rank < 8; ++rank) {
    placement.ranks.push_back(rank);
    placement.device_indices.push_back(rank);
  }
  job.placements.push_back(placement);
  return job;
}

absl::Status Build(bench::Store& store, int64_t jobs) {
  const absl::Time start = absl::FromUnixSeconds(1'750'000'000);
  std::vector<std::future<absl::Status>> pending;
  auto wait = [&pending]() -> absl::Status {
    for (auto& f : pending) {
      if (absl::Status s = f.get(); !s.ok()) return s;
    }
    pending.clear();
    return absl::OkStatus();
  };
  for (int64_t seq = 1; seq <= jobs; ++seq) {
    Job job = EndedJob(seq, start + absl::Seconds(seq * 90));
    auto inserted = std::make_shared<std::promise<absl::Status>>();
    pending.push_back(inserted->get_future());
    store.InsertJobAsync(job, [inserted](absl::Status s) { inserted->set_value(s); });
    if (seq % 10000 == 0) {
      if (absl::Status s = wait(); !s.ok()) return s;
    }
  }
  return wait();
}

class CountingChannel : public bench::AgentChannel {
 public:
  void SendAssignment(const bench::AssignmentMessage&) override { ++assignments; }
  void SendCancel(const bench::CancelMessage&) override { ++cancels; }
  void Close(const absl::Status&) override {}
  int64_t assignments = 0;
  int64_t cancels = 0;
};

struct Timing {
  std::string what;
  std::vector<double> wall_us;
  std::vector<double> cpu_us;
};

// Runs `call(i)` `runs` times; `call` returns the wall time to count (its own, or a part).
template <typename F>
Timing Time(const std::string& what, int runs, F call) {
  Timing timing{what, {}, {}};
  for (int i = 0; i < runs; ++i) {
    const double cpu = ThreadCpuUs();
    const Steady::time_point t = Steady::now();
    call(i);
    timing.wall_us.push_back(Us(Steady::now() - t));
    timing.cpu_us.push_back(ThreadCpuUs() - cpu);
  }
  std::sort(timing.wall_us.begin(), timing.wall_us.end());
  std::sort(timing.cpu_us.begin(), timing.cpu_us.end());
  return timing;
}

std::string AgentName(int i) { return absl::StrFormat("node-%04d", i); }

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "";
  const int64_t ended = argc > 2 ? std::atoll(argv[2]) : 100000;
  const int agents = argc > 3 ? std::atoi(argv[3]) : 1024;
  const int running = argc > 4 ? std::atoi(argv[4]) : 1000;
  const int runs = argc > 5 ? std::atoi(argv[5]) : 200;
  if (ended < 0 || agents < 2 || running < 1 || running >= agents || runs < 1) {
    std::fprintf(stderr,
                 "usage: timers_bench [DIR] [ENDED_JOBS>=0] [AGENTS>=2] [1<=RUNNING_JOBS<AGENTS] "
                 "[RUNS>=1]\n");
    return 2;
  }
  if (dir.empty()) {
    char pattern[] = "/tmp/timers_bench_XXXXXX";
    if (mkdtemp(pattern) == nullptr) {
      std::perror("mkdtemp");
      return 1;
    }
    dir = pattern;
  }
  // DIR/timers.db holds the ended jobs; each run works on a copy of it (DIR/run.db), as
  // the jobs it submits stay in the database.
  const std::string base = dir + "/timers.db";
  if (!std::filesystem::exists(base)) {
    absl::StatusOr<std::unique_ptr<bench::Store>> built = bench::Store::Open(base);
    if (!built.ok()) return Fail("open " + base, built.status());
    const Steady::time_point t = Steady::now();
    if (absl::Status s = Build(**built, ended); !s.ok()) return Fail("build", s);
    std::printf("built %s: %lld ended jobs in %.1f s\n", base.c_str(),
                static_cast<long long>(ended), Us(Steady::now() - t) / 1e6);
  } else {
    std::printf("reusing %s (its jobs, whatever ENDED_JOBS says)\n", base.c_str());
  }
  const std::string path = dir + "/run.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  std::filesystem::copy_file(base, path);
  absl::StatusOr<std::unique_ptr<bench::Store>> store = bench::Store::Open(path);
  if (!store.ok()) return Fail("open " + path, store.status());
  bench::JobManager manager(store->get(), bench::JobManagerOptions{});
  Steady::time_point t = Steady::now();
  if (absl::Status s = manager.Recover(); !s.ok()) return Fail("recover", s);
  std::printf("JobManager::Recover: %.0f ms\n", Us(Steady::now() - t) / 1000);

  std::vector<std::unique_ptr<CountingChannel>> channels;
  for (int i = 0; i < agents; ++i) {
    bench::AgentInventory inventory;
    inventory.name = AgentName(i);
    inventory.address = absl::StrCat("10.0.", i / 256, ".", i % 256);
    inventory.hostname = inventory.name;
    for (int g = 0; g < 8; ++g) {
      inventory.gpus.push_back(
          {g, "NVIDIA H100 80GB HBM3", absl::StrCat("GPU-", i, "-", g), int64_t{80} << 30});
    }
    if (auto r = manager.RegisterAgent(inventory); !r.ok()) return Fail("register", r.status());
    channels.push_back(std::make_unique<CountingChannel>());
    if (auto s = manager.AttachChannel(inventory.name, channels.back().get()); !s.ok()) {
      return Fail("attach", s);
    }
  }
  // The running jobs: one 8-GPU job per agent, acknowledged (every rank started).
  t = Steady::now();
  std::vector<bench::Job> live;  // job j runs on agent j
  for (int j = 0; j < running; ++j) {
    bench::JobSpec spec;
    spec.model = "resnet50";
    spec.devices = 8;
    spec.precision = bench::Precision::kAmp;
    spec.batch_size = 256;
    spec.iterations = 100000;
    spec.warmup_iterations = 10;
    spec.image_size = 224;
    std::promise<absl::StatusOr<bench::SubmitResult>> done;
    manager.Submit(spec, [&](absl::StatusOr<bench::SubmitResult> r) { done.set_value(r); });
    absl::StatusOr<bench::SubmitResult> submitted = done.get_future().get();
    if (!submitted.ok()) return Fail("submit", submitted.status());
    absl::StatusOr<bench::JobView> view = manager.Get(submitted->job_id);
    if (!view.ok() || view->job.state != bench::JobState::kRunning) {
      return Fail("submit", absl::InternalError(submitted->job_id + " was not placed"));
    }
    live.push_back(view->job);
  }
  std::printf("submitted and placed %d jobs in %.0f ms\n", running, Us(Steady::now() - t) / 1000);
  std::vector<bench::RankReport> started;
  for (int rank = 0; rank < 8; ++rank) {
    bench::RankReport report;
    report.rank = rank;  // outcome: kStarted
    started.push_back(report);
  }
  for (const Job& job : live) {
    absl::Status s =
        manager.ReportStatus(job.placements.front().agent, job.id, job.attempt, 29500, started);
    if (!s.ok()) return Fail("report", s);
  }
  bench::FleetCounts fleet = manager.Fleet();
  std::printf("fleet: %lld jobs running, %lld succeeded, %lld failed, %lld cancelled\n",
              static_cast<long long>(fleet.running), static_cast<long long>(fleet.succeeded),
              static_cast<long long>(fleet.failed), static_cast<long long>(fleet.cancelled));

  std::vector<Timing> timings;
  timings.push_back(Time("CheckAgents (liveness loop, 250 ms)", runs,
                         [&](int) { manager.CheckAgents(std::chrono::steady_clock::now()); }));
  timings.push_back(Time("CheckLimits (liveness loop, 250 ms)", runs,
                         [&](int) { manager.CheckLimits(absl::Now()); }));
  timings.push_back(Time("PendingAllocationWork (Slurm poll)", runs,
                         [&](int) { manager.PendingAllocationWork(); }));
  timings.push_back(Time("Fleet (/metrics)", runs, [&](int) { manager.Fleet(); }));
  timings.push_back(Time("Queue (benchctl queue)", runs, [&](int) { manager.Queue(); }));
  timings.push_back(Time("Heartbeat (an agent, every 5 s)", runs, [&](int i) {
    const Job& job = live[i % live.size()];
    manager.Heartbeat(job.placements.front().agent, {{job.id, job.attempt, {}}}).IgnoreError();
  }));
  timings.push_back(Time("ReportStatus (a rank still running)", runs, [&](int i) {
    const Job& job = live[i % live.size()];
    manager.ReportStatus(job.placements.front().agent, job.id, job.attempt, 0, {started[0]})
        .IgnoreError();
  }));
  // Wall time: the call and its commit (the store's writer thread); CPU time: this
  // thread's, i.e. the call's screening under the manager's lock.
  timings.push_back(Time("UploadSamples (8 iterations + 8 readings), to commit", runs, [&](int i) {
    const Job& job = live[i % live.size()];
    std::vector<bench::IterationSample> samples;
    std::vector<bench::GpuSample> gpus;
    for (int rank = 0; rank < 8; ++rank) {
      bench::IterationSample s;
      s.job_id = job.id;
      s.attempt = job.attempt;
      s.rank = rank;
      s.iteration = i + 1;
      s.step_time_s = 0.1;
      s.images = 256;
      s.loss = 2.0;
      s.elapsed_s = 0.1 * s.iteration;
      s.received_unix_ns = absl::ToUnixNanos(absl::Now());
      samples.push_back(s);
      bench::GpuSample g;
      g.job_id = job.id;
      g.attempt = job.attempt;
      g.rank = rank;
      g.seq = s.iteration;
      g.gpu_index = rank;
      g.gpu_uuid = absl::StrCat("GPU-", i % live.size(), "-", rank);
      g.time_unix_ns = s.received_unix_ns;
      g.power_w = 500;
      gpus.push_back(g);
    }
    std::promise<void> done;
    manager.UploadSamples(job.placements.front().agent, std::move(samples), std::move(gpus),
                          [&](absl::StatusOr<bench::AppendResult>) { done.set_value(); });
    done.get_future().wait();
  }));
  timings.push_back(Time("AttachChannel (an agent reconnects)", runs, [&](int i) {
    const std::string agent = AgentName(i % running);
    CountingChannel* channel = channels[i % running].get();
    manager.DetachChannel(agent, channel);
    manager.AttachChannel(agent, channel).IgnoreError();
  }));
  timings.push_back(Time("Deregister + RegisterAgent (an idle agent)", runs, [&](int i) {
    const std::string agent = AgentName(running + i % (agents - running));
    manager.Deregister(agent, "bench").IgnoreError();
    bench::AgentInventory inventory;
    inventory.name = agent;
    inventory.address = "10.1.0.1";
    for (int g = 0; g < 8; ++g) {
      inventory.gpus.push_back({g, "NVIDIA H100 80GB HBM3",
                                absl::StrCat("GPU-", running + i % (agents - running), "-", g),
                                int64_t{80} << 30});
    }
    manager.RegisterAgent(inventory).IgnoreError();
  }));

  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  std::printf(
      "%lld ended jobs, %d agents, %d running jobs; %d runs each; load average %.2f %.2f %.2f\n",
      static_cast<long long>(ended), agents, running, runs, load[0], load[1], load[2]);
  std::printf("%-58s %10s %10s %10s %12s\n", "call", "min us", "median", "max", "cpu median");
  for (const Timing& tm : timings) {
    std::printf("%-58s %10.1f %10.1f %10.1f %12.1f\n", tm.what.c_str(), tm.wall_us.front(),
                tm.wall_us[tm.wall_us.size() / 2], tm.wall_us.back(),
                tm.cpu_us[tm.cpu_us.size() / 2]);
  }
  return 0;
}
