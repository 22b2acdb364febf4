// The controller's domain types: job specs, jobs, agents, samples. Plain structs, no
// generated code; proto_convert.h maps them to and from the wire.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace bench {

enum class Precision { kUnspecified, kFp32, kAmp, kTf32, kBf16 };
enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled };
enum class DeviceKind { kNone, kCuda, kCpu };

const char* JobStateText(JobState state);
const char* PrecisionText(Precision precision);
const char* DeviceKindText(DeviceKind kind);  // "cuda", "cpu", ""
bool IsTerminal(JobState state);

struct JobSpec {
  std::string model;
  int devices = 0;
  Precision precision = Precision::kUnspecified;
  int batch_size = 0;  // per device
  int iterations = 0;  // warm-up included
  int warmup_iterations = 0;
  int image_size = 0;
  std::string data = "synthetic";
  std::string name;
  std::map<std::string, std::string> labels;
  std::string request_id;

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

struct Job {
  std::string id;   // "job-000042"
  int64_t seq = 0;  // submission order, 1-based
  JobSpec spec;
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
};

struct Gpu {
  int index = 0;
  std::string name;
  std::string uuid;
  int64_t memory_bytes = 0;
};

struct AgentInventory {
  std::string name;
  std::string address;
  std::string hostname;
  std::vector<Gpu> gpus;
  int cpu_slots = 0;

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
  double loss = 0;
  double data_time_s = 0;
  double elapsed_s = 0;
  bool warmup = false;
  int64_t received_unix_ns = 0;  // the agent's clock when it read the event; 0: unknown
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
};

}  // namespace bench
