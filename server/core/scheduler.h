// Placement of jobs' ranks onto agents and the queue's order (FIFO with backfill):
// pure logic, no I/O; the caller passes the time.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "server/core/job.h"

namespace bench {

// An agent's free device indices, counted rather than listed: a base set (the range
// [0, n) of CPU slots, or a list of GPU indices) less the taken ones, plus any given
// back from outside the base. Only taken and given devices are enumerated, so an agent
// with 20,000,000 CPU slots costs what one with 8 GPUs does.
class FreeDevices {
 public:
  FreeDevices() = default;
  // Exactly these indices are free (implicit so that a list reads as its free devices).
  FreeDevices(std::vector<int> indices);  // NOLINT(google-explicit-constructor)
  FreeDevices(std::initializer_list<int> indices)
      : FreeDevices(std::vector<int>(indices)) {}
  // The indices 0 .. count-1 are free.
  static FreeDevices Range(int count);

  int size() const;  // how many are free
  bool empty() const { return size() == 0; }
  // The `count` lowest free indices, ascending (all of them if fewer are free).
  std::vector<int> Lowest(int count) const;
  void Take(int index);  // no longer free (nothing if it was not)
  void Give(int index);  // free again (nothing if it already was)

 private:
  bool InBase(int index) const;

  bool range_ = false;
  int range_size_ = 0;        // range_: the base is [0, range_size_)
  std::vector<int> listed_;   // !range_: the base, sorted, distinct
  std::set<int> taken_;       // of the base
  std::set<int> given_;       // outside the base
};

// What one registered agent has right now.
struct AgentCapacity {
  std::string agent;
  DeviceKind kind = DeviceKind::kCpu;
  int total_devices = 0;
  FreeDevices free_devices;  // device indices not held by any job
  std::map<std::string, std::string> labels;
  // False while its assignment stream is down: it counts for whether a job can ever
  // run, but nothing is placed on it.
  bool connected = true;
};

// What a job asks of its placement (its JobSpec's shape and constraints).
struct PlacementRequest {
  int devices = 0;
  int nodes = 0;             // with devices_per_node: exactly this shape; 0: any shape
  int devices_per_node = 0;
  std::vector<std::string> allowed_nodes;          // empty: any agent
  std::map<std::string, std::string> node_labels;  // every one must be on the agent
};
PlacementRequest PlacementRequestOf(const JobSpec& spec);

struct PlacementPlan {
  DeviceKind kind = DeviceKind::kNone;
  std::vector<Placement> placements;  // placements[0] hosts rank 0
};

// The agent satisfies the request's node and label constraints.
bool Eligible(const PlacementRequest& request, const AgentCapacity& agent);

// Total devices of `kind` across `agents`, free or not.
int FleetDevices(DeviceKind kind, const std::vector<AgentCapacity>& agents);

// The device kind the job runs on: GPUs when the eligible GPU agents (free or busy,
// connected or not) can ever hold it in its shape, else CPU slots; kNone when neither
// can (it must wait for agents, or be refused).
DeviceKind ChooseDeviceKind(const PlacementRequest& request,
                            const std::vector<AgentCapacity>& agents);

// Why a job with ChooseDeviceKind == kNone waits: the constraints match no agent, or
// the eligible agents are too few or too small (names the constraints and the sizes).
std::string NeverFitsReason(const PlacementRequest& request,
                            const std::vector<AgentCapacity>& agents);

// Places the ranks on free devices of `kind` of connected eligible agents, or nullopt
// when those do not suffice now. Without a shape: a job that fits on one agent takes
// the agent with the fewest free devices that holds it (keeping whole nodes free for
// whole-node jobs); a larger one takes whole agents, freest first, and the rest on the
// best-fitting agent, so it spans as few nodes as possible. With a shape: `nodes`
// best-fitting agents, `devices_per_node` each. Lowest device indices first; ranks
// are numbered contiguously per agent, in the order of the placements.
std::optional<PlacementPlan> PlaceJob(const PlacementRequest& request, DeviceKind kind,
                                      const std::vector<AgentCapacity>& agents);

// A QUEUED job, in queue order.
struct QueuedJob {
  std::string job_id;
  PlacementRequest request;
  absl::Duration wall_time_limit;
};

// A RUNNING job's devices and when its wall-time limit ends it at the latest.
struct RunningAllocation {
  std::string job_id;
  absl::Time expected_end;
  std::vector<Placement> placements;
};

struct QueueDecision {
  std::string job_id;
  std::optional<PlacementPlan> plan;  // set: start it now
  bool backfilled = false;            // started ahead of a job that waits
  std::string reason;                 // why it waits (plan unset)
};

// One pass over the queue (FIFO with EASY backfill). Jobs start in queue order while
// they fit. The first one that does not fit gets a reservation: the devices it will
// take once running jobs end at their wall-time limits, and that time (its "shadow"
// start). A later job may start ahead of it only on devices outside the reservation,
// or if its own wall-time limit ends before the shadow time, so backfill never delays
// the first waiting job. A job that the eligible fleet can never hold (constraints,
// lost agents) waits without holding up the others. One decision per queued job, in
// queue order.
std::vector<QueueDecision> PlanQueue(const std::vector<QueuedJob>& queue,
                                     std::vector<AgentCapacity> agents,
                                     const std::vector<RunningAllocation>& running,
                                     absl::Time now);

}  // namespace bench
