// The variability report (variability.h) kept incrementally (issue 27): each counted
// job summarized once (VariabilityOf: per rank, its GPU, median step time, measured
// step times' count, mean and sum of squared deviations, and its readings inside the
// measured window as (value, count) pairs), the summary stored (Store's job_variability,
// so that a restart reads summaries, not samples), and every summary so far held per
// GPU and configuration (VariabilityAggregate). A report then costs the GPUs and their
// entries, not the samples behind them. Pure.
//
// It answers VariabilityBuilder's numbers (the reference computation): medians,
// percentiles, jobs, iterations and where a GPU was last seen exactly; the step time CV
// from merged moments (Chan, Golub and LeVeque), equal to the two-pass figure up to
// rounding (a relative 1e-12 or so). Memory: per GPU and configuration its entries and
// the distinct values of its readings (NVML's clocks and temperatures are whole numbers,
// its power milliwatts).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/core/job.h"
#include "server/results/variability.h"

namespace bench {

// Sorted by value, each count > 0.
using ValueCounts = std::vector<std::pair<double, int64_t>>;

struct RankVariability {
  RankDevice device;              // gpu_uuid set; as VariabilityBuilder resolves it
  double step_time_median_s = 0;  // <= 0: no entry (no summary median, no iterations)
  int64_t iterations = 0;         // measured (not warm-up)
  double step_time_mean_s = 0;    // of the measured step times
  double step_time_m2 = 0;        // their sum of squared deviations from that mean
  ValueCounts sm_clock_mhz, power_w, temperature_c;  // readings in the measured window
};

struct JobVariability {
  std::vector<RankVariability> ranks;  // by rank; ranks of unknown GPU left out
};

// Whether the report counts `job`: SUCCEEDED, in VariabilityConfigurations().
bool CountsForVariability(const Job& job);

// `job`'s summary from its current attempt's iterations and GPU samples (what
// VariabilityBuilder::AddJob reads); empty for a job that does not count.
JobVariability VariabilityOf(const Job& job, const std::vector<IterationSample>& samples,
                             const std::vector<GpuSample>& gpu_samples);

// A summary as bytes and back; a malformed one is DATA_LOSS saying what is wrong.
std::string EncodeJobVariability(const JobVariability& summary);
absl::StatusOr<JobVariability> DecodeJobVariability(absl::string_view bytes);

class VariabilityAggregate {
 public:
  // Adds a counted job's summary (the job for its id, seq and configuration). Adding a
  // job twice counts it twice: the caller keeps track. Not thread-safe.
  void Add(const Job& job, const JobVariability& summary);
  // VariabilityBuilder::Finish over the jobs added whose model is `model` ("" all).
  std::vector<GpuVariability> Finish(double threshold_pct, const std::string& model) const;
  void Clear() { gpus_.clear(); }

 private:
  struct PerConfig {              // one GPU in one configuration
    std::vector<double> medians;  // its entries
    std::set<std::string> jobs;
    int64_t iterations = 0;
    double mean = 0, m2 = 0;  // of its measured step times (all jobs), merged
    ValueCounts sm_clock_mhz, power_w, temperature_c;
    int64_t last_seq = -1;
    RankDevice last_device;
  };
  std::map<std::string, std::map<ConfigurationKey, PerConfig>> gpus_;  // by UUID
};

}  // namespace bench
