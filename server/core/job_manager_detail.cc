// JobManager's memory of ended jobs: the per-rank detail of all but the most recently
// ended ones is released (server/results/released_ranks.h), and read back from the store
// for the views and copies that carry it.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/log.h"
#include "server/core/job_manager.h"
#include "server/results/released_ranks.h"

namespace bench {

void JobManager::ReleaseEndedRankDetail() {
  const size_t keep = static_cast<size_t>(std::max(0, options_.ended_jobs_with_rank_detail));
  while (ended_with_detail_.size() > keep) {
    const std::string& id = ended_with_detail_.front();
    Job* job = FindJob(id);
    auto runtime = runtime_.find(id);
    if (job != nullptr && runtime != runtime_.end()) {
      // The oldest ended job waits for its analyses (they read its detail); the jobs that
      // ended after it wait behind it, until its answers come (OnTelemetryJoined,
      // OnJobDiagnosed call this again).
      if (runtime->second.analyses_in_flight > 0) return;
      JobRuntime& kept = runtime->second;
      kept.iterations_done = LowestIterationCount(*job, kept);
      std::map<int, int>().swap(kept.iterations_by_rank);
      std::map<int, double>().swap(kept.fastest_step_by_rank);
      std::set<int>().swap(kept.succeeded_ranks);
      std::set<std::string>().swap(kept.telemetry_notes);
      ReleaseRankDetail(*job);
    }
    ended_with_detail_.pop_front();
  }
}

absl::Status JobManager::FillRankDetail(Job& job) {
  if (job.released_ranks == nullptr) return absl::OkStatus();
  absl::StatusOr<Job> loaded = store_->LoadRankDetail(job.id, job.attempt);
  if (!loaded.ok()) return loaded.status();
  RestoreRankDetail(job, *std::move(loaded));
  return absl::OkStatus();
}

void JobManager::FillRankDetail(std::vector<JobView>& views) {
  for (JobView& view : views) {
    if (absl::Status filled = FillRankDetail(view.job); !filled.ok()) {
      Log(view.job.id, ": could not read its rank detail back: ", filled.ToString());
    }
  }
}

}  // namespace bench
