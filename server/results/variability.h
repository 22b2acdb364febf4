// Per-GPU variability across finished jobs, after the SC22 GPU-variability study: how
// much slower or faster each GPU (by UUID) runs than the fleet on the same work. Pure.
//
// A configuration is the job's ConfigurationOf (job.h: model, devices, precision, batch
// size, device kind, GPU model, image size; the results grid's cell key), so that a GPU
// is only compared with GPUs of its own kind on the same work. Only single-device jobs
// count: the ranks of a data-parallel job wait for each other on every step, so their
// step times are the job's, not their GPU's. For every SUCCEEDED single-device cuda job, its
// rank contributes one entry for the GPU it ran on: its median
// step time (RankSummary.step_time_median_s; where that is missing, the median of its
// measured iterations). The fleet median of a configuration is the median over all
// entries of that configuration; a GPU's normalized step time is the median over its
// entries of (entry / fleet median), so > 1 is slower than the fleet. A configuration
// that only one GPU in the fleet ran gives that GPU 1 by construction.
//
// step_time_cv is the coefficient of variation of the GPU's measured iterations'
// step times (warm-up excluded), each divided by its configuration's fleet median:
// exactly the CV of the raw step times when the GPU ran one configuration, and not
// inflated by mixing configurations otherwise. Unset with fewer than 2 iterations.
//
// Clock, power and temperature percentiles are exact (telemetry.h's Percentile) over
// all of the GPU's NVML readings that lie inside its ranks' measured windows
// (telemetry.h's MeasuredWindows), pooled across jobs — not merged per-job
// percentiles. Power is one reading per rank (telemetry.h's PowerReading).
//
// Which GPU a rank ran on: its RankDevice's UUID recorded at placement; for jobs placed
// before that was recorded, the UUID of its GPU telemetry or GPU samples. Ranks whose
// GPU is unknown, and GPUs without any entry, are left out.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/core/job.h"

namespace bench {

struct GpuVariability {
  std::string gpu_uuid;
  // Where it was last seen (the latest job by submission).
  std::string gpu_name;
  std::string agent;
  std::string hostname;
  int gpu_index = 0;
  int jobs = 0;
  int64_t iterations = 0;  // measured iterations, all jobs
  double normalized_step_time = 0;
  std::optional<double> step_time_cv;
  Percentiles sm_clock_mhz;
  Percentiles power_w;
  Percentiles temperature_c;
  bool outlier = false;  // normalized_step_time > 1 + threshold_pct / 100
};

// What the GpuVariability RPC answers.
struct VariabilityReport {
  double threshold_pct = 5;  // the one applied
  std::vector<GpuVariability> gpus;
};

// The configurations variability counts: single-device cuda ones (see above).
ConfigurationFilter VariabilityConfigurations();

// Which GPU each rank of `job` ran on, by rank: the job's rank devices, and for jobs placed
// before rank devices carried UUIDs, the UUID its GPU telemetry or GPU samples name. A rank
// whose GPU is unknown has an empty gpu_uuid.
std::map<int, RankDevice> RankDevicesOf(const Job& job, const std::vector<GpuSample>& gpu_samples);

class VariabilityBuilder {
 public:
  // Adds one job with its current attempt's iterations and GPU samples. Jobs that are
  // not SUCCEEDED or not in VariabilityConfigurations are ignored. Not thread-safe.
  void AddJob(const Job& job, const std::vector<IterationSample>& samples,
              const std::vector<GpuSample>& gpu_samples);
  // Every GPU seen, slowest (highest normalized step time) first, ties by UUID.
  std::vector<GpuVariability> Finish(double threshold_pct) const;

 private:
  struct Entry {
    ConfigurationKey config;
    double step_time_median_s = 0;
  };
  struct PerGpu {
    std::vector<Entry> entries;
    std::map<ConfigurationKey, std::vector<double>> step_times;  // measured iterations
    std::vector<double> sm_clock_mhz, power_w, temperature_c;
    std::set<std::string> jobs;
    int64_t iterations = 0;
    int64_t last_seq = -1;
    RankDevice last_device;
  };
  std::map<ConfigurationKey, std::vector<double>> fleet_;  // entries by configuration
  std::map<std::string, PerGpu> gpus_;              // by UUID
};

}  // namespace bench
