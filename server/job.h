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
};

}  // namespace bench
