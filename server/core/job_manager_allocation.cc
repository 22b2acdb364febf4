// JobManager and an external allocator (benchd --slurm-partition, server/slurm/slurm_allocator.h):
// the jobs that need an allocation, what the allocator saw of each, and the end of a job
// whose allocation ended first.
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/allocation_text.h"
#include "common/log.h"
#include "server/core/job_manager.h"

namespace bench {
namespace {

// "Slurm job 4711 TIMEOUT (TimeLimit)", or with `ended`: "Slurm job 4711 ended: TIMEOUT
// (TimeLimit)"; with `nodes`, " on node[1-2]" after it.
std::string Describe(const Allocation& allocation, bool ended = false, bool nodes = false) {
  return DescribeAllocation({allocation.system, allocation.id, allocation.state, allocation.reason,
                             nodes ? std::string_view(allocation.nodes) : "", ended});
}

}  // namespace

std::string JobManager::AllocationWaitReason(const Job& job) {
  const Allocation& allocation = job.allocation;
  if (allocation.id.empty()) return "waiting for an allocation";
  if (allocation.state == "RUNNING") {
    return absl::StrCat("waiting for the agents of ",
                        Describe(allocation, /*ended=*/false, /*nodes=*/true), " to register");
  }
  return absl::StrCat("waiting for its allocation: ", Describe(allocation));
}

AllocationWork JobManager::PendingAllocationWork() {
  absl::MutexLock lock(&mu_);
  AllocationWork work;
  // Polled every few seconds: only the live jobs and the live allocations are walked.
  jobs_.ForEachLive([&](const Job& job) {
    mu_.AssertHeld();
    if (job.allocation.id.empty() && job.state == JobState::kQueued && runtime_[job.id].persisted) {
      work.to_allocate.push_back({job.id, "", job.spec, WallTimeLimit(job)});
    }
  });
  jobs_.ForEachAllocated([&](const Job& job) {
    (IsTerminal(job.state) ? work.to_release : work.to_poll)[job.id] = job.allocation;
  });
  return work;
}

absl::Status JobManager::UpdateAllocation(const std::string& job_id, const Allocation& allocation) {
  absl::MutexLock lock(&mu_);
  Job* job = FindJob(job_id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("no job ", job_id));
  if (job->allocation == allocation) return absl::OkStatus();
  bool first = job->allocation.id.empty();
  jobs_.SetAllocation(*job, allocation);
  if (first) Log(job_id, ": ", Describe(allocation));
  if (allocation.ended && !IsTerminal(job->state)) {
    AllocationEnded(*job);
    Schedule();
    return absl::OkStatus();
  }
  if (job->state == JobState::kQueued) job->reason = AllocationWaitReason(*job);
  Persist(*job);
  Notify(*job);
  return absl::OkStatus();
}

absl::Status JobManager::AllocationRefused(const std::string& job_id, const std::string& why) {
  absl::MutexLock lock(&mu_);
  Job* job = FindJob(job_id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("no job ", job_id));
  if (job->state != JobState::kQueued) return absl::OkStatus();
  Transition(*job, JobState::kFailed, why);
  return absl::OkStatus();
}

void JobManager::AllocationEnded(Job& job) {
  std::string reason = Describe(job.allocation, /*ended=*/true);
  if (job.state == JobState::kQueued) {
    Transition(job, JobState::kFailed, absl::StrCat(reason, " before the job ran"));
    return;
  }
  const std::string& node_left = runtime_[job.id].node_left;
  EndRunningJob(job, JobState::kFailed,
                node_left.empty() ? reason : absl::StrCat(reason, "; ", node_left));
}

}  // namespace bench
