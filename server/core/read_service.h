// The controller's read side: result grids, baselines, per-GPU variability, a job's
// stored samples and fleet screenings, answered in domain types (results.h, baseline.h, variability.h,
// views.h) so that the gRPC adapter and the JSON API render the same answers.
//
// It copies what it needs from the manager (JobManager::Snapshot and Get, taken under
// the manager's lock; for the results grid only each job's ResultRow, through
// JobManager::VisitJobs) and then queries the store's reader holding no lock of the
// manager, so a slow read never stalls scheduling or ingestion. Job list, get and
// queue views stay on the manager: they are made of its live runtime state.
//
// The variability report is kept incrementally (variability_summary.h): each counted job
// is summarized once — its stored summary read, or made from its samples and stored —
// and added to an aggregate the service keeps, so that a report reads only the jobs that
// ended since the last one (issue 27).
//
// Thread-safety: thread-safe; the variability aggregate is under its own mutex.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/core/job_manager.h"
#include "server/core/views.h"
#include "server/results/baseline.h"
#include "server/results/results.h"
#include "server/results/screening_inputs.h"
#include "server/results/variability.h"
#include "server/results/variability_summary.h"
#include "server/store/store.h"

namespace bench {

class ReadService {
 public:
  // Neither is owned; both must outlive the service.
  ReadService(Store* store, JobManager* manager) : store_(store), manager_(manager) {}

  // The grid of the jobs `filter` matches, each cell compared with its baseline.
  std::vector<ResultCell> Results(const ResultsFilter& filter);
  std::vector<Baseline> ListBaselines();  // sorted by configuration

  // Per-GPU variability (variability.h) over the SUCCEEDED jobs of
  // VariabilityConfigurations (of `model` if not empty); threshold 0 means 5, negative is
  // INVALID_ARGUMENT. Only jobs not counted before are read from the store (their stored
  // summaries; the samples of those without one, whose summaries are then stored); the
  // answer is VariabilityBuilder's over all of them.
  absl::StatusOr<VariabilityReport> Variability(double threshold_pct, const std::string& model);

  // The job's status and its current attempt's stored iterations >= from_iteration;
  // NOT_FOUND for an unknown job.
  // `rank`: only that rank's iterations (unset: every rank's).
  absl::StatusOr<SamplesView> GetSamples(const std::string& job_id, int from_iteration,
                                         std::optional<int> rank = std::nullopt);

  // Fleet screening (server/results/screening_inputs.h): the verdicts of the screening's
  // ended jobs, the analysis (diagnosis::Screen) re-run on their stored iterations and
  // readings each time; INVALID_ARGUMENT for a malformed id, NOT_FOUND when no job carries
  // the label screening=<id>.
  absl::StatusOr<ScreeningView> Screening(const std::string& screening_id);
  // Every screening, newest first.
  std::vector<ScreeningListEntry> ListScreenings();
  // The job's diagnosis computed again from its stored data (`benchctl diagnose`): the
  // same analyses as at its end, nothing stored. NOT_FOUND for an unknown job,
  // FAILED_PRECONDITION for a job that has not ended SUCCEEDED or FAILED.
  absl::StatusOr<JobDiagnosis> Diagnose(const std::string& job_id);

 private:
  // Adds the counted jobs not yet in variability_ (all of them again if one of those in
  // it is no longer counted).
  absl::Status CatchUpVariability() ABSL_EXCLUSIVE_LOCKS_REQUIRED(variability_mu_);

  Store* const store_;
  JobManager* const manager_;
  absl::Mutex variability_mu_;
  VariabilityAggregate variability_ ABSL_GUARDED_BY(variability_mu_);
  absl::flat_hash_set<std::string> variability_jobs_ ABSL_GUARDED_BY(variability_mu_);
};

}  // namespace bench
