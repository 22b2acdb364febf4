// How a job's external allocation (its Slurm job under benchd --slurm-partition) is
// phrased, once for benchd's reasons and logs (server/core/job_manager_allocation.cc) and
// benchctl's `status` (ctl/views.cc): "Slurm job 4711 RUNNING on node[1-2]", "Slurm job
// 4712 PENDING (Resources)", "Slurm job 4711 ended: TIMEOUT (TimeLimit)". It takes plain
// fields, so that the v1 API's Allocation and benchd's domain Allocation both call it.
// Pure; standard library only.
#pragma once

#include <string>
#include <string_view>

namespace bench {

struct AllocationText {
  std::string_view system;  // "slurm" is written "Slurm", any other system as it is
  std::string_view id;      // its job id there
  std::string_view state;   // its state there: PENDING, RUNNING, TIMEOUT, ...
  std::string_view reason;  // why, in parentheses after the state; "" for none
  std::string_view nodes;   // " on <nodes>" at the end; "" leaves it out
  bool ended = false;       // "ended: " before the state
};

// "<System> job <id> [ended: ]<state>[ (<reason>)][ on <nodes>]".
std::string DescribeAllocation(const AllocationText& allocation);

}  // namespace bench
