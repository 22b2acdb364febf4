// Fleet screening verdicts (issue 26 item 4, `benchctl screen`; the rules in
// docs/diagnosis.md): one single-GPU job per GPU, compared with the fleet's GPUs of the same
// configuration (common/configuration_key.h), gives each GPU a verdict (ok, or flagged:
// slow by x %, a fault, or a failed job) with its probable cause, and each node a verdict.
//
// Per configuration: each GPU's median step time; the fleet median of those medians; each
// GPU's slow_pct = 100 * (its median / fleet median - 1). A GPU is slow when slow_pct
// exceeds the configuration's threshold max(kSlowFloorPct, kSlowMads * 1.4826 * MAD of the
// normalised medians, in %) -- a bound above the fleet's natural spread, never under
// SuperBench's 5 %. A GPU has a fault, whatever its speed, with XID errors, uncorrected ECC
// errors, or a PCIe link whose highest generation or width seen stays below its maximum.
// Failed jobs (and jobs without a measured iteration) are flagged as failed.
//
// Causes, from the GPU's readings, in this order (the first is the probable cause): XID
// errors, uncorrected ECC errors, PCIe link below maximum; then, for a slow GPU, the clock
// events seen while the SM clock was below its maximum in at least kCauseReadingShare of
// the readings (thermal, power brake, hardware slowdown, power capped; the most frequent
// first), low memory clock, clock below maximum without a reason; "slow at full clock"
// when nothing explains a slow GPU.
//
// Outputs are ordered (configurations by key; GPUs by node, GPU index, job id; nodes by
// name). Pure and deterministic (inputs.h's contract; the input order does not matter).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/configuration_key.h"
#include "server/diagnosis/inputs.h"

namespace bench::diagnosis {

inline constexpr double kSlowFloorPct = 5.0;          // SuperBench's per-metric rule
inline constexpr double kSlowMads = 3.0;              // x 1.4826 * MAD: 3 sigma of the spread
inline constexpr double kCauseReadingShare = 0.1;     // a cause seen in >= 10 % of readings
inline constexpr double kLowMemoryClockRatio = 0.95;  // memory clock under 95 % of its max

// One screened GPU: one single-GPU job's outcome and its measured steps and readings.
struct ScreenedGpu {
  std::string job_id;
  std::string node;
  int gpu_index = 0;
  std::string gpu_uuid;
  std::string gpu_name;
  ConfigurationKey configuration;
  bool succeeded = false;
  std::string failure_reason;        // why the job failed ("" when it succeeded)
  std::vector<double> step_times_s;  // its measured (non-warm-up) iterations' step times
  std::vector<GpuReading> readings;  // its GPU's readings over the job
};

enum class ScreenCause {
  kXidErrors,
  kEccErrors,
  kPcieLink,
  kThermal,
  kPowerBrake,
  kHwSlowdown,
  kPowerCapped,
  kLowMemoryClock,
  kClockBelowMax,
  kSlowAtFullClock,
};
// "xid_errors", "ecc_errors", "pcie_link", "thermal", "power_brake", "hw_slowdown",
// "power_capped", "low_memory_clock", "clock_below_max", "slow_at_full_clock".
const char* ScreenCauseName(ScreenCause cause);
// For people: "XID errors", ..., "slow at full clock".
const char* ScreenCauseDescription(ScreenCause cause);

struct GpuVerdict {
  std::string job_id;
  std::string node;
  int gpu_index = 0;
  std::string gpu_uuid;
  std::string gpu_name;
  ConfigurationKey configuration;
  bool flagged = false;  // slow || fault || failed
  bool slow = false;
  bool fault = false;
  bool failed = false;
  std::string failure_reason;
  std::optional<double> median_step_s;  // unset for a failed job
  double slow_pct = 0;                  // vs the configuration's fleet median; + = slower
  std::vector<ScreenCause> causes;      // the probable cause first; empty when ok
  // One sentence of evidence, e.g. "PCIe gen 3 of 5, x16 of 16" or "hw_thermal in 80 %
  // of readings, SM clock 1200 of 1980 MHz"; "" when ok.
  std::string evidence;

  bool operator==(const GpuVerdict& o) const;
};

struct ConfigurationSummary {
  ConfigurationKey configuration;
  int gpus = 0;                    // GPUs with a median step time
  double fleet_median_step_s = 0;  // median of their medians
  double spread_mad_pct = 0;       // 1.4826 * MAD of the normalised medians, in %
  double threshold_pct = 0;        // slow above this
  int flagged = 0;

  bool operator==(const ConfigurationSummary& o) const;
};

struct NodeVerdict {
  std::string node;
  int gpus = 0;
  bool ok = true;
  std::vector<int> flagged_gpu_indexes;  // ascending

  bool operator==(const NodeVerdict& o) const;
};

struct ScreeningReport {
  std::vector<ConfigurationSummary> configurations;
  std::vector<GpuVerdict> gpus;
  std::vector<NodeVerdict> nodes;
  bool any_flagged = false;  // a GPU flagged or a job failed: benchctl screen exits non-zero

  bool operator==(const ScreeningReport& o) const;
};

ScreeningReport Screen(const std::vector<ScreenedGpu>& gpus);

}  // namespace bench::diagnosis
