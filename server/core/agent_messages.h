// The agent protocol in domain terms: what the controller sends down an agent's
// assignment stream (AgentChannel: assignments, cancels) and what agents report back
// (rank reports, the attempts a heartbeat lists). The adapter (agent_service.cc) maps
// them to and from protos; the job manager and the fleet use them. AgentChannel
// implementations must not block.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/core/job.h"

namespace bench {

// Everything an agent needs to start its ranks of one job.
struct AssignmentMessage {
  std::string job_id;
  int attempt = 0;
  JobSpec spec;
  std::vector<int> ranks;
  std::vector<int> device_indices;
  DeviceKind device_kind = DeviceKind::kNone;
  int world_size = 0;
  std::string master_addr;
  int master_port = 0;  // 0: this agent hosts rank 0 and picks the port
};

struct CancelMessage {
  std::string job_id;
  int attempt = 0;
  std::string reason;
};

// The controller's end of an agent's assignment stream (implemented by the RPC adapter).
class AgentChannel {
 public:
  virtual ~AgentChannel() = default;
  // Queue a message; must not block.
  virtual void SendAssignment(const AssignmentMessage& assignment) = 0;
  virtual void SendCancel(const CancelMessage& cancel) = 0;
  // End the stream with `status`; the manager forgets the channel right after.
  virtual void Close(const absl::Status& status) = 0;
};

enum class RankOutcome { kStarted, kSucceeded, kFailed, kCancelled };

struct RankReport {
  int rank = 0;
  RankOutcome outcome = RankOutcome::kStarted;
  int exit_code = 0;
  std::string message;
  std::string stderr_tail;
  std::optional<RankSummary> summary;
  int64_t parameters = 0;
  std::string telemetry_note;  // why the agent cannot sample this rank's GPU, or ""
  Versions versions;           // the trainer's start-event versions; empty if unknown
  std::string precision;       // the trainer's start event: precision in effect; "" if unknown
  bool simulated = false;      // the trainer's start event said "simulated": true
};

// What an agent's heartbeat says it runs: one (job, attempt) and its live ranks.
struct RunningOnAgent {
  std::string job_id;
  int attempt = 0;         // 0: not said (an older agent): the job's current attempt
  std::vector<int> ranks;  // empty: not said
};

// The message of a rank report for a rank the agent killed because the agent itself
// restarted while it ran (worker/agent): a node fault, not the trainer's.
inline constexpr char kAgentRestartedPrefix[] = "bench-agent restarted";
// How bench-train's error event begins when it ended a run whose loss stayed non-finite
// (docs/trainer-events.md); a job that fails so has a reason beginning with it too.
inline constexpr char kLossDivergedPrefix[] = "loss diverged:";

}  // namespace bench
