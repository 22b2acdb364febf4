// JobManager's placement: scheduling passes over the queue (scheduler.h decides),
// starting an attempt on the devices it was given, and dispatching its assignments.
#include "server/core/job_manager.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "server/core/job_manager_text.h"
#include "server/core/scheduler.h"

namespace bench {
namespace {

using manager_text::DescribePlacements;

}  // namespace

void JobManager::Schedule() {
  if (shut_down_) return;
  // Called on every heartbeat and report: a pass over the same inputs as the last one
  // would decide the same. Not quite: a pass depends on the time too, but only through
  // backfill (a job ahead of the first waiting one must end before that one's reserved
  // start), which time passing can only refuse, never allow; the one thing that drifts is
  // the start time named in the first waiting job's reason once a running job is past its
  // wall-time limit (and CheckLimits ends that job).
  PlanInputs inputs{fleet_.version(), jobs_.version(), committed_submits_};
  if (planned_from_ == inputs) return;
  // As read before the pass: what it starts changes both, and the next call passes again.
  planned_from_ = inputs;
  queue_positions_.clear();
  // With nothing queued there is nothing to place.
  if (jobs_.Count(JobState::kQueued) == 0) return;
  absl::Time now = clock_->Now();
  std::vector<QueuedJob> queue;
  std::vector<RunningAllocation> running;
  jobs_.ForEachLive([&](const Job& job) {
    mu_.AssertHeld();
    if (job.state == JobState::kQueued && runtime_[job.id].persisted) {
      PlacementRequest request = PlacementRequestOf(job.spec);
      // Only on the agents its own allocation started.
      if (options_.external_allocation) request.node_labels[kAllocationLabel] = job.id;
      queue.push_back(QueuedJob{job.id, std::move(request), WallTimeLimit(job)});
    } else if (job.state == JobState::kRunning) {
      running.push_back(
          RunningAllocation{job.id, runtime_[job.id].started + WallTimeLimit(job), job.placements});
    }
  });
  if (queue.empty()) return;
  std::vector<QueueDecision> decisions = PlanQueue(queue, fleet_.Capacities(), running, now);
  int position = 0;
  for (QueueDecision& decision : decisions) {
    Job* job = FindJob(decision.job_id);
    if (decision.plan) {
      StartJob(*job, *decision.plan);
      if (decision.backfilled) Log(job->id, " backfilled ahead of jobs that wait");
      continue;
    }
    queue_positions_[job->id] = ++position;
    if (options_.external_allocation) decision.reason = AllocationWaitReason(*job);
    if (job->reason != decision.reason) {
      job->reason = std::move(decision.reason);
      Persist(*job);
      Notify(*job);
    }
  }
}

void JobManager::StartJob(Job& job, const PlacementPlan& plan) {
  JobRuntime& runtime = runtime_[job.id];
  runtime = JobRuntime{};
  runtime.persisted = true;
  runtime.started = clock_->Now();
  runtime.last_progress = runtime.started;
  job.attempt += 1;
  job.device_kind = plan.kind;
  job.placements = plan.placements;
  job.summaries.clear();
  job.rank_devices.clear();
  job.agent_versions.clear();
  job.rank_versions.clear();
  job.rank_precisions.clear();
  job.gpu_telemetry.clear();
  job.telemetry_note.clear();
  for (const Placement& placement : job.placements) {
    static const AgentInventory kUnknown;
    const AgentInventory* known = fleet_.Inventory(placement.agent);
    const AgentInventory& inventory = known != nullptr ? *known : kUnknown;
    if (!inventory.versions.empty()) job.agent_versions[placement.agent] = inventory.versions;
    for (size_t i = 0; i < placement.ranks.size(); ++i) {
      RankDevice device;
      device.rank = placement.ranks[i];
      device.agent = placement.agent;
      device.hostname = inventory.hostname;
      device.device_index = placement.device_indices[i];
      if (plan.kind == DeviceKind::kCuda) {
        for (const Gpu& gpu : inventory.gpus) {
          if (gpu.index != device.device_index) continue;
          device.gpu_uuid = gpu.uuid;
          device.gpu_name = gpu.name;
        }
      }
      job.rank_devices.push_back(std::move(device));
    }
  }
  std::sort(job.rank_devices.begin(), job.rank_devices.end(),
            [](const RankDevice& a, const RankDevice& b) { return a.rank < b.rank; });
  for (const Placement& placement : job.placements) {
    for (size_t i = 0; i < placement.ranks.size(); ++i) {
      fleet_.Hold(placement.agent, placement.device_indices[i], job.id, job.attempt,
                  placement.ranks[i]);
    }
    runtime.running_ranks[placement.agent] =
        std::set<int>(placement.ranks.begin(), placement.ranks.end());
    runtime.undelivered.insert(placement.agent);
  }
  Transition(job, JobState::kRunning,
             absl::StrCat(job.attempt > 1 ? absl::StrCat("attempt ", job.attempt, " ") : "",
                          "placed on ", DescribePlacements(job.placements)));
  // Rank 0's agent goes first: it picks the rendezvous port, then the rest follow.
  Dispatch(job, job.placements.front());
}

AssignmentMessage JobManager::AssignmentFor(const Job& job, const Placement& placement) {
  AssignmentMessage message;
  message.job_id = job.id;
  message.attempt = job.attempt;
  message.spec = job.spec;
  message.ranks = placement.ranks;
  message.device_indices = placement.device_indices;
  message.device_kind = job.device_kind;
  message.world_size = job.spec.devices;
  const Placement& master = job.placements.front();
  if (const AgentInventory* inventory = fleet_.Inventory(master.agent)) {
    message.master_addr = inventory->address;
  }
  message.master_port = runtime_[job.id].master_port;
  return message;
}

void JobManager::Dispatch(Job& job, const Placement& placement) {
  if (AgentChannel* channel = fleet_.Channel(placement.agent)) {
    channel->SendAssignment(AssignmentFor(job, placement));
  }
}

}  // namespace bench
