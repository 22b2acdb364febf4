// JobManager's end of an attempt's analyses: once an attempt ended, its GPU telemetry is
// joined to its iterations and, when ShouldDiagnose, it is diagnosed, both on the store's
// analysis thread from one read of its rows; the results are recorded on the job.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "server/core/job_manager.h"
#include "server/core/job_manager_text.h"
#include "server/core/store_completion.h"
#include "server/results/job_diagnosis.h"

namespace bench {
namespace {

using manager_text::kTelemetryNotJoined;

Store::TelemetryRequest TelemetryRequestOf(const Job& job) {
  Store::TelemetryRequest request;
  request.job_id = job.id;
  request.attempt = job.attempt;
  request.summaries = job.summaries;
  for (const Placement& placement : job.placements) {
    for (int rank : placement.ranks) request.agent_by_rank[rank] = placement.agent;
  }
  request.expect_gpus = job.device_kind == DeviceKind::kCuda;
  return request;
}

}  // namespace

void JobManager::AnalyzeEndedAttempt(const Job& job) {
  if (!ShouldDiagnose(job)) {
    JoinTelemetry(job);
    return;
  }
  std::string id = job.id;
  int attempt = job.attempt;
  bool queued = store_->AnalyzeAttemptAsync(
      TelemetryRequestOf(job), JobInputsOf(job),
      [this, id, attempt](absl::StatusOr<JoinedTelemetry> joined) {
        OnTelemetryJoined(id, attempt, std::move(joined));
      },
      [this, id, attempt](absl::StatusOr<JobDiagnosis> diagnosis) {
        OnJobDiagnosed(id, attempt, std::move(diagnosis));
      });
  if (queued) {
    joins_in_flight_ += 2;
    runtime_[id].analyses_in_flight += 2;
  }
}

void JobManager::JoinTelemetry(const Job& job) {
  std::string id = job.id;
  int attempt = job.attempt;
  bool queued = store_->JoinTelemetryAsync(
      TelemetryRequestOf(job), [this, id, attempt](absl::StatusOr<JoinedTelemetry> joined) {
        OnTelemetryJoined(id, attempt, std::move(joined));
      });
  if (queued) {
    ++joins_in_flight_;
    runtime_[id].analyses_in_flight += 1;
  }
}

void JobManager::OnTelemetryJoined(const std::string& job_id, int attempt,
                                   absl::StatusOr<JoinedTelemetry> joined) {
  std::shared_ptr<StoreCompletion> stored;
  std::optional<absl::Status> early;
  {
    absl::MutexLock lock(&mu_);
    Job* job = FindJob(job_id);
    if (job == nullptr || job->attempt != attempt) {
      --joins_in_flight_;
      AnalysisAnswered(job_id);
      return;
    }
    RecordJoinedTelemetry(*job, std::move(joined));
    if (events_ != nullptr) events_->OnTelemetryJoined(*job);
    Notify(*job);
    // A released job's detail is read back from the store, so the join is answered (and
    // the job may be released) only once the figures are stored, not when they are known.
    stored = std::make_shared<StoreCompletion>(
        [this, job_id](absl::Status status) { OnJoinedTelemetryStored(job_id, status); });
    Persist(*job, [stored](absl::Status status) { stored->Complete(std::move(status)); });
    early = stored->Arm();
  }
  if (early) stored->Finish(std::move(*early));
}

void JobManager::RecordJoinedTelemetry(Job& job, absl::StatusOr<JoinedTelemetry> joined) {
  std::vector<std::string> notes;
  if (job.device_kind == DeviceKind::kCpu) {
    notes.push_back("no GPU telemetry: the ranks ran on CPU slots");
  }
  auto runtime = runtime_.find(job.id);
  if (runtime != runtime_.end()) {
    notes.insert(notes.end(), runtime->second.telemetry_notes.begin(),
                 runtime->second.telemetry_notes.end());
  }
  if (!joined.ok()) {
    notes.push_back(absl::StrCat(kTelemetryNotJoined, joined.status().message()));
  } else {
    job.gpu_telemetry = std::move(joined->gpus);
    if (!joined->note.empty()) notes.push_back(std::move(joined->note));
  }
  job.telemetry_note = absl::StrJoin(notes, "; ");
}

void JobManager::OnJoinedTelemetryStored(const std::string& job_id, const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  --joins_in_flight_;
  AnalysisAnswered(job_id);
  if (!status.ok()) {
    // Not in the store (PersistDone logged why): released, its view would lack the
    // figures, so the job keeps its detail in memory.
    auto kept = std::find(ended_with_detail_.begin(), ended_with_detail_.end(), job_id);
    if (kept != ended_with_detail_.end()) ended_with_detail_.erase(kept);
  }
  ReleaseEndedRankDetail();
}

void JobManager::OnJobDiagnosed(const std::string& job_id, int attempt,
                                absl::StatusOr<JobDiagnosis> diagnosis) {
  absl::MutexLock lock(&mu_);
  --joins_in_flight_;
  AnalysisAnswered(job_id);
  if (!diagnosis.ok()) {
    // Not stored: the next benchd start (Recover) diagnoses the job again.
    Log(job_id, ": could not diagnose: ", diagnosis.status().ToString());
    ReleaseEndedRankDetail();
    return;
  }
  Job* job = FindJob(job_id);
  if (job == nullptr || job->attempt != attempt) return;
  job->diagnosis = std::make_shared<const JobDiagnosis>(*std::move(diagnosis));
  Notify(*job);
  ReleaseEndedRankDetail();
}

void JobManager::AnalysisAnswered(const std::string& job_id) {
  auto runtime = runtime_.find(job_id);
  if (runtime != runtime_.end() && runtime->second.analyses_in_flight > 0) {
    --runtime->second.analyses_in_flight;
  }
}

}  // namespace bench
