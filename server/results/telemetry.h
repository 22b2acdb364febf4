// Joins a job's NVML readings to its iterations (pure functions; docs/telemetry.md).
//
// Clocks: a GPU sample carries the agent's wall clock at the reading; an iteration
// carries `elapsed_s` on the rank's monotonic clock and the agent's wall clock when the
// agent read the event (`received_unix_ns`). The rank's origin on the wall clock is
// min over its iterations of (received − elapsed): reading an event can only be late,
// never early, so the minimum is the tightest bound (the last iteration, flushed at the
// end, is read within microseconds). Iteration i then spans
// [origin + elapsed_{i−1}, origin + elapsed_i] and the measured window (after warm-up)
// spans [origin + elapsed_{last warm-up}, origin + elapsed_{last}].
//
// Readings are interpolated linearly between samples. A figure needs samples on both
// sides of its window (the agent samples from spawn to exit); otherwise it is unset:
// never extrapolated.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/core/job.h"

namespace bench {

// Linear-interpolation percentile (as numpy's default) of `values`, q in [0, 1].
// Empty input: nullopt.
std::optional<double> Percentile(std::vector<double> values, double q);
Percentiles PercentilesOf(std::vector<double> values);

// A piecewise-linear signal through (time, value) points, times strictly increasing.
class LinearSignal {
 public:
  void Add(double time, double value);  // points must come in increasing time
  bool Covers(double from, double to) const;
  // Value at `time`; nullopt outside the covered range.
  std::optional<double> At(double time) const;
  // Mean over [from, to] (the integral / (to − from)); at `from` if to == from;
  // nullopt unless covered.
  std::optional<double> MeanOver(double from, double to) const;
  bool empty() const { return times_.empty(); }

 private:
  std::vector<double> times_;
  std::vector<double> values_;
};

// Which power reading stands for one rank's GPU: the instantaneous one if any of its
// readings has it, else the driver-averaged one. One source per rank: mixing the two
// would blend different signals.
class PowerReading {
 public:
  static PowerReading For(const std::vector<const GpuSample*>& readings);
  // The chosen reading of `sample`; unset if it lacks that one.
  std::optional<double> Of(const GpuSample& sample) const {
    return instant_ ? sample.power_w : sample.power_average_w;
  }

 private:
  explicit PowerReading(bool instant) : instant_(instant) {}
  bool instant_;
};

// Where one rank's measured window (after warm-up) lies on the agent's wall clock, in
// seconds since the epoch, as described above.
struct MeasuredWindow {
  double from_s = 0;
  double to_s = 0;
};
// Per rank of `samples` (one attempt); ranks whose iterations carry no receive time
// are absent.
std::map<int, MeasuredWindow> MeasuredWindows(const std::vector<IterationSample>& samples);

struct IterationTelemetry {
  int rank = 0;
  int iteration = 0;
  std::optional<double> power_w_mean;
  std::optional<double> sm_clock_mhz_mean;
};

struct JoinedTelemetry {
  std::vector<GpuTelemetry> gpus;  // one per rank with GPU samples, by rank
  std::vector<IterationTelemetry> iterations;
  std::string note;  // what could not be joined, or ""
};

// Joins one attempt's samples. `summaries` give each rank's measured images;
// `agent_by_rank` the node each rank ran on. Ranks without GPU samples are absent
// from `gpus` (and named in `note` when `expect_gpus`).
JoinedTelemetry JoinTelemetry(const std::vector<IterationSample>& samples,
                              const std::vector<GpuSample>& gpu_samples,
                              const std::map<int, RankSummary>& summaries,
                              const std::map<int, std::string>& agent_by_rank,
                              bool expect_gpus);

// Σ energy / Σ measured images over the job's ranks, only when every rank has an
// energy figure and a summary (else nullopt: a partial sum would understate the job).
// Its inverse is the job's images per second per watt.
std::optional<double> JobEnergyPerImage(const Job& job);

}  // namespace bench
