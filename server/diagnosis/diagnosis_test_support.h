// Test and benchmark helper (not part of bench_diagnosis): synthetic jobs and fleets for the
// diagnosis room's tests (server.Diagnosis*) and tests/bench/diagnosis_bench.cc, drawn from
// a seeded std::mt19937_64, with faults planted where the plan says. The same plan and seed
// give the same inputs.
//
// A job's timeline: ranks run each iteration together (synchronous data parallel): rank r
// waits for data, computes (forward and backward), waits in the all-reduce for the slowest
// rank's data + compute, then steps its optimizer; the next iteration starts when the
// slowest rank's step ends. Each GPU rank's readings come every 100 ms (10 Hz) over the
// job, showing the clock and reasons of the plan's GPU events in effect then.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/diagnosis/inputs.h"
#include "server/diagnosis/screening.h"

namespace bench::diagnosis::testing {

inline constexpr double kMaxSmClockMhz = 1980;
inline constexpr double kMaxMemoryClockMhz = 2619;

struct JobPlan {
  uint64_t seed = 1;
  int ranks = 32;
  int iterations = 500;  // measured
  int warmup = 2;        // warm-up iterations before them (3x slower: must be left out)
  bool gpu = true;       // false: CPU slots, no readings
  double data_s = 0.010;
  double compute_s = 0.100;
  double optimizer_s = 0.005;
  double noise = 0.02;  // each time x (1 + noise * N(0, 1)), per rank and iteration
  double reading_period_s = 0.1;

  // Rank `rank`'s compute (1 + fraction) x longer over iterations [first, last].
  struct ExtraCompute {
    int rank = 0;
    int first = 0;
    int last = 0;
    double fraction = 0;
  };
  std::vector<ExtraCompute> extra_compute;
  // Rank `rank` (-1: every rank) waits `seconds` more for data over [first, last].
  struct DataStall {
    int rank = -1;
    int first = 0;
    int last = 0;
    double seconds = 0;
  };
  std::vector<DataStall> data_stalls;
  // Rank `rank`'s GPU over iterations [first, last]: these reasons and SM clock; its compute
  // is longer by max clock / clock (unset clock: the maximum, no slowdown).
  struct GpuEvent {
    int rank = 0;
    int first = 0;
    int last = 0;
    uint64_t reasons = 0;
    std::optional<double> sm_clock_mhz;
  };
  std::vector<GpuEvent> gpu_events;
};

JobInputs MakeJob(const JobPlan& plan);

// The measured window's total (median over ranks) step time, the job's time base.
double WindowStepSeconds(const JobInputs& job);

// A fleet of single-GPU screening jobs: `nodes` x `gpus_per_node` GPUs named n000..,
// each GPU's silicon speed uniform in [1 - spread/2, 1 + spread/2], `iterations` steps
// with per-iteration noise, readings every 100 ms at full clock. Faults planted by index.
struct FleetPlan {
  uint64_t seed = 1;
  int nodes = 128;
  int gpus_per_node = 8;
  int iterations = 500;
  double step_s = 0.1;
  double spread = 0.08;
  double noise = 0.02;
  int readings = 50;  // per GPU
};
std::vector<ScreenedGpu> MakeFleet(const FleetPlan& plan);
// The GPU of `fleet` on node `node` with index `gpu_index` (the test aborts if none).
ScreenedGpu& GpuAt(std::vector<ScreenedGpu>& fleet, const std::string& node, int gpu_index);
// Plants: slow silicon (speed x), a thermal throttle, a power brake (each slowing the steps
// by max clock / clock), a PCIe downtrain, XID errors.
void PlantSlowSilicon(ScreenedGpu& gpu, double speed);
void PlantThrottle(ScreenedGpu& gpu, uint64_t reasons, double sm_clock_mhz);
void PlantPcie(ScreenedGpu& gpu, int gen, int gen_max, int width, int width_max);
void PlantXid(ScreenedGpu& gpu, int64_t xid_errors);

}  // namespace bench::diagnosis::testing
