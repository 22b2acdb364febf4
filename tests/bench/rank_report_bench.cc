// What a rank report's write costs the store (run by hand; docs/PERFORMANCE.md "A rank
// report's writes"): a RANKS-rank CUDA job (8 ranks per node) is inserted and placed, then
// each of its ranks reports STARTED (three trainer versions and a precision), then each
// reports SUCCEEDED (a summary), one report after another, each written and committed
// before the next, as the JobManager writes them: whole (Store::UpdateJob, before issue
// 27) or only the reporting rank (Store::UpdateRanks). The last SUCCEEDED, which ends the
// job, is a whole rewrite either way and is not counted.
//
//   build/bin/rank_report_bench [RANKS] [ROUNDS]     defaults: 256 ranks, 3 rounds
//
// Each round uses a new database file per way. Prints, per way and round: the process's
// CPU microseconds per report (every thread: the caller's copy of the job and the writer
// thread's statements and commit, from getrusage), the caller thread's share, wall
// microseconds per report, and the row writes per report (statements run on job rows:
// what WriteMutableJobState or WriteRankState binds and runs, counted here from the job).
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/store/store.h"

namespace {

using bench::Job;

double ProcessCpuUs() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + usage.ru_utime.tv_usec +
         usage.ru_stime.tv_usec;
}

double ThreadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

// Statements a whole rewrite runs on the job's rows (store_jobs.cc's writers).
int64_t WholeRowWrites(const Job& job) {
  int64_t rows = 1 + static_cast<int64_t>(job.history.size()) + job.spec.devices +
                 static_cast<int64_t>(job.rank_precisions.size()) +
                 static_cast<int64_t>(job.summaries.size());
  for (const auto& [agent, versions] : job.agent_versions) rows += versions.size();
  for (const auto& [rank, versions] : job.rank_versions) rows += versions.size();
  return rows;
}

// Statements UpdateRanks runs for `rank`.
int64_t RankRowWrites(const Job& job, int rank) {
  int64_t rows = 2 + static_cast<int64_t>(job.rank_precisions.count(rank)) +
                 static_cast<int64_t>(job.summaries.count(rank));
  if (auto it = job.rank_versions.find(rank); it != job.rank_versions.end()) {
    rows += it->second.size();
  }
  return rows;
}

struct Figures {
  double cpu_us = 0;
  double caller_cpu_us = 0;
  double wall_us = 0;
  double row_writes = 0;
};

// One way (`per_rank`) over a new file in `dir`; figures per report.
Figures Run(const std::string& dir, int ranks, bool per_rank) {
  std::string path = absl::StrCat(dir, per_rank ? "/ranks.db" : "/whole.db");
  std::filesystem::remove(path);
  std::unique_ptr<bench::Store> store = std::move(bench::Store::Open(path)).value();
  Job job;
  job.seq = 1;
  job.id = "job-000001";
  job.spec.model = "resnet50";
  job.spec.devices = ranks;
  job.spec.batch_size = 256;
  job.spec.iterations = 1000;
  job.created = absl::Now();
  job.history.push_back({bench::JobState::kQueued, "submitted", job.created});
  auto check = [](const absl::Status& status, const char* what) {
    if (status.ok()) return;
    std::fprintf(stderr, "rank_report_bench: %s: %s\n", what, status.ToString().c_str());
    std::exit(1);
  };
  check(store->InsertJob(job), "insert");
  job.attempt = 1;
  job.state = bench::JobState::kRunning;
  job.device_kind = bench::DeviceKind::kCuda;
  job.history.push_back({bench::JobState::kRunning, "placed", absl::Now()});
  for (int node = 0; node * 8 < ranks; ++node) {
    std::string agent = absl::StrCat("node-", node);
    bench::Placement placement{agent, {}, {}};
    for (int d = 0; d < 8 && node * 8 + d < ranks; ++d) {
      int rank = node * 8 + d;
      placement.ranks.push_back(rank);
      placement.device_indices.push_back(d);
      job.rank_devices.push_back({rank, agent, agent + ".cluster", d,
                                  absl::StrCat("GPU-", node, "-", d), "NVIDIA H100 80GB HBM3"});
    }
    job.placements.push_back(std::move(placement));
    job.agent_versions[agent] = {
        {"driver", "550.54.15"}, {"nvml", "12.550"}, {"cuda_driver", "12.4"}};
  }
  check(store->UpdateJob(job), "place");

  Figures f;
  int reports = 0;
  double cpu0 = ProcessCpuUs(), caller0 = ThreadCpuUs();
  auto wall0 = std::chrono::steady_clock::now();
  auto write = [&](int rank) {
    ++reports;
    if (per_rank) {
      f.row_writes += RankRowWrites(job, rank);
      check(store->UpdateRanks(job, {rank}), "report");
    } else {
      f.row_writes += WholeRowWrites(job);
      check(store->UpdateJob(job), "report");
    }
  };
  for (int rank = 0; rank < ranks; ++rank) {
    job.rank_versions[rank] = {{"torch", "2.3.0"}, {"cudnn", "8902"}, {"bench_train", "1.4.0"}};
    job.rank_precisions[rank] = "tf32";
    job.parameters = 25557032;
    write(rank);
  }
  for (int rank = 0; rank + 1 < ranks; ++rank) {
    job.summaries[rank] = bench::RankSummary{rank, 900, 230400, 30.0, 0.033};
    write(rank);
  }
  f.wall_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - wall0).count() /
      reports;
  f.cpu_us = (ProcessCpuUs() - cpu0) / reports;
  f.caller_cpu_us = (ThreadCpuUs() - caller0) / reports;
  f.row_writes /= reports;
  // The report that ends the job: a whole rewrite either way (not counted).
  job.summaries[ranks - 1] = bench::RankSummary{ranks - 1, 900, 230400, 30.0, 0.033};
  job.state = bench::JobState::kSucceeded;
  check(store->UpdateJob(job), "end");
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = argc > 1 ? std::atoi(argv[1]) : 256;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  if (ranks < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: rank_report_bench [RANKS>=1] [ROUNDS>=1]\n");
    return 2;
  }
  char pattern[] = "/tmp/rank_report_bench_XXXXXX";
  std::string dir = mkdtemp(pattern);
  std::printf("%d ranks: %d STARTED + %d SUCCEEDED reports, one rank each, committed one by one\n",
              ranks, ranks, ranks - 1);
  std::printf("%-8s %5s %14s %14s %13s %16s\n", "way", "round", "CPU us/report", "caller us/rep",
              "wall us/rep", "row writes/rep");
  for (int round = 1; round <= rounds; ++round) {
    for (bool per_rank : {false, true}) {
      Figures f = Run(dir, ranks, per_rank);
      std::printf("%-8s %5d %14.1f %14.1f %13.1f %16.1f\n", per_rank ? "ranks" : "whole", round,
                  f.cpu_us, f.caller_cpu_us, f.wall_us, f.row_writes);
    }
  }
  std::filesystem::remove_all(dir);
  return 0;
}
