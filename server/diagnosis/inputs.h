// What the diagnosis room (server/diagnosis/, docs/diagnosis.md) reads: one job's measured
// iterations per rank and each rank's GPU readings, as plain values. The adapters
// (server/results or server/core) fill them from the store; the analyses (stragglers.h,
// attribution.h, checks.h, screening.h) are pure functions of them.
//
// Contract of every analysis in this room: deterministic (the same inputs give equal
// outputs, byte for byte when rendered: no clocks, no randomness, no hash-map order), and
// independent of the order in which ranks, iterations or readings are given (each is
// sorted by its key inside: ranks by rank, iterations by iteration, readings by time).
// A duplicate key (the same rank, iteration or reading time twice) keeps the first given.
// Bad values (negative or non-finite times) are ignored as "no data", never a crash.
//
// Plain data; includes only common/ and the standard library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/configuration_key.h"
#include "common/fault_scenario.h"

namespace bench::diagnosis {

// NVML's clock-event ("throttle") reason bits, as the agent stores them in a reading's
// `throttle_reasons` mask: the one table is common/fault_scenario.h's.
inline constexpr uint64_t kReasonGpuIdle = throttle::kGpuIdle;
inline constexpr uint64_t kReasonApplicationsClocks = throttle::kApplicationsClocks;
inline constexpr uint64_t kReasonSwPowerCap = throttle::kSwPowerCap;
inline constexpr uint64_t kReasonHwSlowdown = throttle::kHwSlowdown;
inline constexpr uint64_t kReasonSyncBoost = throttle::kSyncBoost;
inline constexpr uint64_t kReasonSwThermal = throttle::kSwThermal;
inline constexpr uint64_t kReasonHwThermal = throttle::kHwThermal;
inline constexpr uint64_t kReasonHwPowerBrake = throttle::kHwPowerBrake;

// One measured (or warm-up) iteration of one rank, as bench-train reported it
// (common/trainer_contract.h's `iter` event). An unset field is "no data", never 0.
struct IterationTiming {
  int iteration = 0;
  double step_time_s = 0;
  double data_time_s = 0;
  std::optional<double> compute_time_s;
  std::optional<double> forward_backward_time_s;
  std::optional<double> allreduce_wait_time_s;  // 0 for a single rank
  std::optional<double> optimizer_time_s;
  // When the iteration ended on the agent's wall clock (the stored received_unix_ns);
  // 0: unknown (the iteration then joins no GPU reading).
  int64_t end_unix_ns = 0;
  bool warmup = false;  // warm-up iterations are outside every analysis' measured window

  // The time this rank computed: forward_backward, else compute, else step - data.
  double ComputeSeconds() const;
};

// One NVML reading of one GPU (the agent's 10 Hz sampling). A reading NVML could not give
// is unset. Counters (ECC, XID) count since the driver loaded.
struct GpuReading {
  int64_t time_unix_ns = 0;
  std::optional<double> sm_clock_mhz;
  std::optional<double> max_sm_clock_mhz;
  std::optional<double> memory_clock_mhz;
  std::optional<double> max_memory_clock_mhz;
  std::optional<double> power_w;
  std::optional<double> power_limit_w;
  std::optional<double> temperature_c;
  std::optional<uint64_t> throttle_reasons;  // kReason* bits
  std::optional<int> pcie_gen;
  std::optional<int> pcie_gen_max;
  std::optional<int> pcie_width;
  std::optional<int> pcie_width_max;
  std::optional<int64_t> ecc_corrected;
  std::optional<int64_t> ecc_uncorrected;
  std::optional<int64_t> xid_errors;
};

// One rank of a job's current attempt: where it ran, its iterations and its GPU's readings.
struct RankInputs {
  int rank = 0;
  std::string node;      // the agent's node name
  int gpu_index = -1;    // -1: a CPU slot (no GPU, no readings)
  std::string gpu_uuid;  // "" on a CPU slot or when unknown
  std::vector<IterationTiming> iterations;
  std::vector<GpuReading> readings;  // this rank's GPU's readings; empty on a CPU slot
};

// One job (its current attempt) as the per-job analyses read it.
struct JobInputs {
  std::string job_id;  // for messages only
  DeviceKind device_kind = DeviceKind::kNone;
  Precision requested_precision = Precision::kUnspecified;
  // The precision the trainer reported in effect; kUnspecified: it reported none.
  Precision effective_precision = Precision::kUnspecified;
  // The spec's iterations, warm-up included as in common/spec_defaults.h (0: unknown), and
  // its warm-up iterations: iterations_asked - warmup_asked are measured.
  int iterations_asked = 0;
  int warmup_asked = 0;
  // Steps the trainer skipped for a gradient overflow (AMP's loss scaler), warm-up
  // included: the most any rank's summary reported (the ranks of a data-parallel job skip
  // the same steps); unset: no rank reported it.
  std::optional<int64_t> skipped_steps;
  std::vector<RankInputs> ranks;
};

}  // namespace bench::diagnosis
