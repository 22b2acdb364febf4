// The cost of the diagnosis room's analyses (docs/PERFORMANCE.md; issue 26's target: under a
// second each on the 2-core machine): diagnosing one 32-rank, 500-iteration job with 10 Hz
// readings per GPU (FindStragglers + AttributeExcess + RunChecks), and screening 1,024 GPUs'
// single-GPU runs (Screen). Inputs come from server/diagnosis/diagnosis_test_support.h,
// built before the clock starts; each analysis runs --runs times (default 5) and the
// median and the slowest wall time are printed.
//
// Usage: diagnosis_bench [--runs N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "server/diagnosis/attribution.h"
#include "server/diagnosis/checks.h"
#include "server/diagnosis/diagnosis_test_support.h"
#include "server/diagnosis/screening.h"
#include "server/diagnosis/stragglers.h"

namespace {

using bench::diagnosis::JobInputs;
using Clock = std::chrono::steady_clock;

template <typename F>
void Time(const char* what, int runs, F&& run) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%-58s median %8.1f ms  slowest %8.1f ms  (%d runs)\n", what, ms[ms.size() / 2],
              ms.back(), runs);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: diagnosis_bench [--runs N]\n");
      return 2;
    }
  }
  if (runs < 1) {
    std::fprintf(stderr, "diagnosis_bench: --runs must be at least 1\n");
    return 2;
  }

  bench::diagnosis::testing::JobPlan plan;
  plan.seed = 26;
  plan.ranks = 32;
  plan.iterations = 500;
  plan.extra_compute.push_back({17, 200, 300, 0.08});
  plan.gpu_events.push_back({3, 150, 249, bench::diagnosis::kReasonHwThermal, 1200.0});
  const JobInputs job = bench::diagnosis::testing::MakeJob(plan);
  size_t readings = 0;
  for (const auto& rank : job.ranks) readings += rank.readings.size();
  std::printf("job: %zu ranks x %d iterations, %zu GPU readings (10 Hz)\n", job.ranks.size(),
              plan.iterations, readings);
  size_t sink = 0;
  Time("diagnose one job (stragglers + attribution + checks)", runs, [&] {
    const auto stragglers = bench::diagnosis::FindStragglers(job);
    const auto excess = bench::diagnosis::AttributeExcess(job);
    const auto checks = bench::diagnosis::RunChecks(job, excess);
    sink += stragglers.stragglers.size() + excess.by_rank.size() + checks.size();
  });

  bench::diagnosis::testing::FleetPlan fleet_plan;
  fleet_plan.seed = 1024;
  fleet_plan.readings = 600;  // a minute at 10 Hz per GPU
  const auto fleet = bench::diagnosis::testing::MakeFleet(fleet_plan);
  std::printf("fleet: %zu GPUs x %d steps, %d readings each\n", fleet.size(), fleet_plan.iterations,
              fleet_plan.readings);
  Time("screen the fleet", runs, [&] {
    const auto report = bench::diagnosis::Screen(fleet);
    sink += report.gpus.size();
  });
  return sink == 0 ? 1 : 0;
}
