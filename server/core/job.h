// The controller's domain types: job specs, jobs, agents, samples. Plain structs, no
// generated code; proto_convert.h maps them to and from the wire.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/configuration_key.h"
#include "common/gpu_info.h"

namespace bench {

struct JobDiagnosis;  // server/results/job_diagnosis.h

// Precision and DeviceKind (with PrecisionText, DeviceKindText) are
// common/configuration_key.h's.
enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled };

// The names and the terminal states are common/names.h's (kJobStates), the ones benchctl
// and the agent use for the v1 API's enums (common/spec_names.h).
const char* JobStateText(JobState state);  // "QUEUED", "RUNNING", ...
bool IsTerminal(JobState state);           // SUCCEEDED, FAILED or CANCELLED

struct JobSpec {
  std::string model;
  int devices = 0;
  Precision precision = Precision::kUnspecified;
  int batch_size = 0;  // per device
  int iterations = 0;  // warm-up included
  int warmup_iterations = 0;
  int image_size = 0;
  std::string data = "synthetic";  // common/names.h kDataNames
  std::string data_path;           // imagefolder, coco: absolute, on the nodes
  int loader_threads = 0;          // decode threads per rank; 0: bench-train's default
  bool data_vs_compute = false;    // also run on synthetic data and report the ratio
  std::string name;
  std::map<std::string, std::string> labels;
  std::string request_id;
  // Placement shape: exactly `nodes` agents with `devices_per_node` ranks each; 0: any.
  int nodes = 0;
  int devices_per_node = 0;
  // Constraints: only these agents (empty: any), only agents carrying every label.
  std::vector<std::string> allowed_nodes;
  std::map<std::string, std::string> node_labels;
  // Limits in seconds; 0: benchd's defaults (JobManagerOptions).
  int wall_time_limit_s = 0;
  int hang_timeout_s = 0;

  // Equal in everything that decides what runs (name and labels included).
  bool operator==(const JobSpec& other) const;
};

struct StateTransition {
  JobState state = JobState::kQueued;
  std::string reason;
  absl::Time time;
};

// One agent's share of a job.
struct Placement {
  std::string agent;
  std::vector<int> ranks;           // global ranks
  std::vector<int> device_indices;  // one per rank
};

// A rank's closing figures (bench-train's summary event).
struct RankSummary {
  int rank = 0;
  int measured_iterations = 0;
  int64_t measured_images = 0;
  double window_s = 0;
  double step_time_median_s = 0;
  int64_t skipped_steps = 0;     // fp16 overflow skips, warm-up included
  int64_t nonfinite_losses = 0;  // as the trainer counted them, warm-up included
  double synthetic_images_per_second = 0;  // data_vs_compute's second run; 0: none
};

// Order statistics of one reading over a measured window; count 0 means no data.
struct Percentiles {
  int64_t count = 0;
  double p5 = 0;
  double p50 = 0;
  double p95 = 0;
};

// One GPU's figures over its rank's measured window (telemetry.h computes them).
struct GpuTelemetry {
  int rank = 0;
  std::string agent;
  int gpu_index = 0;
  std::string gpu_uuid;
  int64_t samples = 0;  // NVML readings inside the window
  std::optional<double> energy_j;
  std::optional<double> energy_per_image_j;
  std::optional<double> images_per_second_per_watt;  // = images per joule
  Percentiles power_w;
  Percentiles sm_clock_mhz;
  Percentiles temperature_c;
  uint64_t throttle_reasons = 0;  // OR of the masks seen in the window
};

// Which device one rank ran on, recorded from the agent's inventory when the rank was
// placed (a later inventory change does not rewrite it).
struct RankDevice {
  int rank = 0;
  std::string agent;
  std::string hostname;
  int device_index = 0;  // GPU index or CPU slot
  std::string gpu_uuid;  // "" on CPU slots (and for jobs placed before schema 3)
  std::string gpu_name;
};

// The software and hardware a job ran on, merged over its ranks and agents
// (environment.h).
struct Environment {
  std::map<std::string, std::string> versions;  // disagreeing values joined with " | "
  std::vector<std::string> hostnames;           // of the agents that ran ranks, sorted
};

using Versions = std::map<std::string, std::string>;

// Where an external allocator (Slurm: benchd --slurm-partition) got the job its nodes:
// that system's job, as last polled. Empty `id`: none (agents of the standing fleet).
struct Allocation {
  std::string system;  // "slurm"
  std::string id;      // its job id there, e.g. "4711"
  std::string state;   // its state there, e.g. "PENDING", "RUNNING", "TIMEOUT"
  std::string reason;  // why it is in that state, e.g. "Resources"; "" when none
  std::string nodes;   // its node list, e.g. "node[1-2]"; "" until allocated
  bool ended = false;  // the allocation is over (its agents are gone or going)
  bool operator==(const Allocation& o) const;
};

// What the walks over every job (the results grid, a job's throughput, its configuration,
// the strict filter) read of an ended job's per-rank detail and diagnosis, kept when they
// are released from memory
// (server/results/released_ranks.h).
struct ReleasedRanks {
  std::string gpu_model;              // GpuModelOf
  std::optional<double> throughput;   // JobThroughput of its summaries
  std::optional<double> energy_per_image_j;  // ResultRowOf's telemetry figures
  std::optional<double> power_w;
  std::optional<double> sm_clock_mhz;
  std::optional<double> temperature_c;
  int failing_checks = 0;  // of its diagnosis (HasFailingChecks); 0 without one
};

struct Job {
  std::string id;   // "job-000042"
  int64_t seq = 0;  // submission order, 1-based
  JobSpec spec;
  // Who submitted it: the principal's name (server/auth/auth.h); "" when security is off (and
  // for jobs stored before schema 8).
  std::string submitted_by;
  JobState state = JobState::kQueued;
  std::string reason;
  std::vector<StateTransition> history;
  absl::Time created;
  int attempt = 0;  // 0 until first placed
  DeviceKind device_kind = DeviceKind::kNone;
  std::vector<Placement> placements;  // of the current attempt
  int64_t parameters = 0;
  std::map<int, RankSummary> summaries;  // by rank, current attempt
  // Joined once the current attempt has ended (by rank); empty until then or if none.
  std::vector<GpuTelemetry> gpu_telemetry;
  std::string telemetry_note;  // why GPU telemetry is missing or partial; "" if not
  // Current attempt, recorded at placement: one per rank, by rank.
  std::vector<RankDevice> rank_devices;
  // Current attempt: the agents' NVML versions (snapshot at placement) and the ranks'
  // trainer versions (their start events). Empty where an older agent sent none.
  std::map<std::string, Versions> agent_versions;  // by agent name
  std::map<int, Versions> rank_versions;           // by rank
  // Current attempt: the precision each rank ran at (its start event: "fp32", "tf32",
  // "amp_bf16", "amp_fp16"), by rank; a rank not started yet is absent.
  std::map<int, std::string> rank_precisions;
  int requeues = 0;  // times it went back to the queue after losing a node
  Allocation allocation;
  // A rank's trainer said "simulated": true (bench-sim-train, issue 26): every figure of
  // the job is simulated. Set once and kept (across attempts): a simulated job never
  // enters real results (ConfigurationKey::simulated).
  bool simulated = false;
  // The current attempt's diagnosis (server/results/job_diagnosis.h), once computed after
  // it ended SUCCEEDED or FAILED, or reloaded; null until then and for other jobs.
  std::shared_ptr<const JobDiagnosis> diagnosis;
  // Set once an ended job's per-rank detail (summaries, gpu_telemetry, rank_devices,
  // agent_versions, rank_versions, rank_precisions) and its diagnosis were released from
  // memory: those fields are then empty (null), this keeps what the walks read of them,
  // and Store::LoadRankDetail gives them back (RestoreRankDetail). Placements stay.
  std::shared_ptr<const ReleasedRanks> released_ranks;
};

// The GPU model of a job's ranks: their GPU name, or the distinct names sorted and
// joined with " + " when they differ; "" on CPU slots or before placement. Kept when the
// job's rank detail is released.
std::string GpuModelOf(const Job& job);

// What results are comparable across (a grid cell, what a baseline is set for, a
// variability group): the spec's model, devices, precision, batch size and image size,
// the job's device kind and GpuModelOf.
ConfigurationKey ConfigurationOf(const Job& job);

// A node's GPU: the agent's own type (common/gpu_info.h), under the name benchd's code uses.
using Gpu = GpuInfo;

struct AgentInventory {
  std::string name;
  std::string address;
  std::string hostname;
  std::string instance_id;  // one per agent process; "" from older agents
  std::vector<Gpu> gpus;
  int cpu_slots = 0;
  Versions versions;  // from NVML: driver, nvml, cuda_driver (empty from older agents)
  std::map<std::string, std::string> labels;  // bench-agent --label, for job constraints

  DeviceKind kind() const { return gpus.empty() ? DeviceKind::kCpu : DeviceKind::kCuda; }
  int device_count() const { return gpus.empty() ? cpu_slots : static_cast<int>(gpus.size()); }
};

// One training iteration of one rank; identity (job_id, attempt, rank, iteration).
struct IterationSample {
  std::string job_id;
  int attempt = 0;
  int rank = 0;
  int iteration = 0;
  double step_time_s = 0;
  int images = 0;
  double loss = 0;  // NaN or infinite where the trainer's was (stored as such)
  double data_time_s = 0;
  double elapsed_s = 0;
  bool warmup = false;
  int64_t received_unix_ns = 0;  // the agent's clock when it read the event; 0: unknown
  // The step split (docs/trainer-events.md); nullopt where the trainer did not write it.
  std::optional<double> compute_time_s;
  std::optional<double> forward_backward_time_s;
  std::optional<double> allreduce_wait_time_s;
  std::optional<double> optimizer_time_s;
};

// One NVML reading of the GPU of one rank; identity (job_id, attempt, rank, seq). A
// reading NVML could not give is unset.
struct GpuSample {
  std::string job_id;
  int attempt = 0;
  int rank = 0;
  int64_t seq = 0;
  std::string gpu_uuid;
  int gpu_index = 0;
  int64_t time_unix_ns = 0;
  std::optional<double> power_w;          // instantaneous
  std::optional<double> power_average_w;  // driver-averaged
  std::optional<double> energy_j;         // total energy counter
  std::optional<double> sm_clock_mhz;
  std::optional<double> memory_clock_mhz;
  std::optional<double> temperature_c;
  std::optional<double> gpu_utilization_pct;
  std::optional<double> memory_utilization_pct;
  std::optional<int64_t> memory_used_bytes;
  std::optional<uint64_t> throttle_reasons;
  std::optional<int> pcie_gen;  // PCIe link generation and width (lanes), current and max
  std::optional<int> pcie_gen_max;
  std::optional<int> pcie_width;
  std::optional<int> pcie_width_max;
  std::optional<double> max_sm_clock_mhz;
  std::optional<double> max_memory_clock_mhz;
  std::optional<double> power_limit_w;   // the enforced power limit
  std::optional<int64_t> ecc_corrected;  // since the driver loaded (volatile)
  std::optional<int64_t> ecc_uncorrected;
  std::optional<int64_t> xid_errors;  // XID events since the agent's NVML session began
};

}  // namespace bench
