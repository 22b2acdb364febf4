// JobManager's recovery after a restart: jobs reloaded from the store, RUNNING ones
// adopted with their devices held until their agents reconnect within the reconcile
// grace, unjoined GPU telemetry joined again, the rank detail of the ended jobs but the
// latest released (job_manager_detail.cc).
#include "server/core/job_manager.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "server/core/job_manager_text.h"

namespace bench {
namespace {

using manager_text::DescribePlacements;
using manager_text::kTelemetryNotJoined;

}  // namespace

absl::Status JobManager::Recover() {
  absl::StatusOr<std::vector<Job>> loaded = store_->LoadJobs();
  if (!loaded.ok()) return loaded.status();
  absl::StatusOr<std::vector<Baseline>> baselines = store_->LoadBaselines();
  if (!baselines.ok()) return baselines.status();
  // Every job's stored sample counts in one read (not two queries per job, each
  // counting the job's samples: that grew with history, issue 27).
  absl::StatusOr<std::vector<Store::SeriesCounts>> series = store_->ReadSeriesCounts();
  if (!series.ok()) return series.status();
  absl::flat_hash_map<std::string, std::vector<const Store::SeriesCounts*>> series_by_job;
  for (const Store::SeriesCounts& counts : *series) {
    series_by_job[counts.job_id].push_back(&counts);
  }
  absl::MutexLock lock(&mu_);
  for (Baseline& baseline : *baselines) {
    ConfigurationKey configuration = baseline.configuration;
    baselines_[configuration] = std::move(baseline);
  }
  for (Job& job : *loaded) {
    Job& stored = jobs_.Add(std::move(job));
    JobRuntime& runtime = runtime_[stored.id];
    runtime.persisted = true;
    if (stored.attempt > 0) {
      auto counted = series_by_job.find(stored.id);
      if (counted != series_by_job.end()) {
        for (const Store::SeriesCounts* counts : counted->second) {
          if (counts->attempt != stored.attempt) continue;
          runtime.iterations_by_rank[counts->rank] = static_cast<int>(counts->samples);
          runtime.samples_stored += counts->samples;
          runtime.nonfinite_losses += counts->nonfinite_losses;
        }
      }
      // A running job's ranks may still report their summaries: they are checked
      // against the samples stored before the restart too.
      if (stored.state == JobState::kRunning) {
        absl::StatusOr<std::map<int, double>> fastest =
            store_->FastestMeasuredStepByRank(stored.id, stored.attempt);
        if (fastest.ok()) runtime.fastest_step_by_rank = *fastest;
      }
    }
    if (stored.state == JobState::kRunning) {
      AdoptRecoveredRunningJob(stored);
    } else if (IsTerminal(stored.state) && stored.attempt > 0 &&
               stored.device_kind == DeviceKind::kCuda && stored.gpu_telemetry.empty() &&
               (stored.telemetry_note.empty() ||
                absl::StartsWith(stored.telemetry_note, kTelemetryNotJoined))) {
      // It ended, but its join never committed (benchd stopped first, or it failed).
      JoinTelemetry(stored);
    }
    if (IsTerminal(stored.state) && stored.attempt > 0) ended_with_detail_.push_back(stored.id);
  }
  // Loaded whole, the ended jobs but the latest keep only what the walks read (their
  // views read the rest back); benchd's allocator gives the freed pages back to the
  // system within seconds (server/heap_policy.h).
  ReleaseEndedRankDetail();
  std::vector<Job>().swap(*loaded);
  PublishAgentsAwaited();
  Log("recovered ", jobs_.size(), " jobs from ", store_->path());
  Schedule();
  return absl::OkStatus();
}

JobManager::SteadyTime JobManager::ReconcileDeadlineAsLastSeen() const {
  // The lease check (CheckAgents) then expires the agent once the grace has passed.
  return clock_->SteadyNow() +
         absl::ToChronoMilliseconds(options_.reconcile_grace - options_.agent_lease);
}

void JobManager::BeginReconcileGrace() {
  absl::MutexLock lock(&mu_);
  fleet_.ExtendPlaceholders(ReconcileDeadlineAsLastSeen());
}

void JobManager::AdoptRecoveredRunningJob(Job& job) {
  JobRuntime& runtime = runtime_[job.id];
  runtime.all_dispatched = true;
  runtime.last_progress = clock_->Now();
  runtime.started = job.created;
  for (auto it = job.history.rbegin(); it != job.history.rend(); ++it) {
    if (it->state == JobState::kRunning) {
      runtime.started = it->time;
      break;
    }
  }
  // The agents are expected back within the grace: until then they hold the devices.
  SteadyTime expires = ReconcileDeadlineAsLastSeen();
  for (const Placement& placement : job.placements) {
    fleet_.AddPlaceholder(placement.agent, expires);
    for (size_t i = 0; i < placement.ranks.size(); ++i) {
      int rank = placement.ranks[i];
      if (job.summaries.count(rank) > 0) {
        runtime.succeeded_ranks.insert(rank);  // reported SUCCEEDED before the restart
        continue;
      }
      runtime.running_ranks[placement.agent].insert(rank);
      fleet_.Hold(placement.agent, placement.device_indices[i], job.id, job.attempt, rank);
    }
  }
  Log(job.id, " was RUNNING (attempt ", job.attempt, ") when benchd stopped: waiting up to ",
      absl::FormatDuration(options_.reconcile_grace), " for ", DescribePlacements(job.placements),
      " to reconnect");
}

}  // namespace bench
