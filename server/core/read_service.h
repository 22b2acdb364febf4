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
// Thread-safety: thread-safe; it holds no state of its own.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/core/job_manager.h"
#include "server/core/views.h"
#include "server/results/baseline.h"
#include "server/results/results.h"
#include "server/results/screening_inputs.h"
#include "server/results/variability.h"
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
  // INVALID_ARGUMENT. Reads every such job's samples from the store's reader.
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
  Store* const store_;
  JobManager* const manager_;
};

}  // namespace bench
