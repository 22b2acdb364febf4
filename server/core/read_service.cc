#include "server/core/read_service.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace bench {

std::vector<ResultCell> ReadService::Results(const ResultsFilter& filter) {
  // Only each matching job's ResultRow is taken under the manager's lock, not a copy of it.
  std::vector<ResultRow> rows;
  const Baselines baselines = manager_->VisitJobs([&](const Job& job) {
    if (job.state != JobState::kCancelled && Matches(job, filter)) {
      rows.push_back(ResultRowOf(job));
    }
  });
  return BuildResultCells(rows, baselines);
}

std::vector<Baseline> ReadService::ListBaselines() {
  JobManager::ReadSnapshot snapshot = manager_->Snapshot([](const Job&) { return false; });
  std::vector<Baseline> list;
  for (const auto& [configuration, baseline] : snapshot.baselines) list.push_back(baseline);
  return list;
}

absl::StatusOr<VariabilityReport> ReadService::Variability(double threshold_pct,
                                                           const std::string& model) {
  if (!(threshold_pct >= 0) || !std::isfinite(threshold_pct)) {
    return absl::InvalidArgumentError(
        absl::StrCat("threshold_pct: ", threshold_pct, " must be >= 0 (0 means the default 5)"));
  }
  if (threshold_pct == 0) threshold_pct = 5;
  absl::MutexLock lock(&variability_mu_);
  if (absl::Status caught_up = CatchUpVariability(); !caught_up.ok()) return caught_up;
  return VariabilityReport{threshold_pct, variability_.Finish(threshold_pct, model)};
}

absl::Status ReadService::CatchUpVariability() {
  // Under the manager's lock only the new jobs are copied.
  std::vector<Job> fresh;
  size_t known = 0;
  manager_->VisitJobs([&](const Job& job) {
    if (!CountsForVariability(job)) return;
    if (variability_jobs_.contains(job.id)) {
      ++known;
    } else {
      fresh.push_back(job);
    }
  });
  if (known < variability_jobs_.size()) {
    // A job counted before is not any more (no such path today): start again.
    variability_.Clear();
    variability_jobs_.clear();
    return CatchUpVariability();
  }
  if (fresh.empty()) return absl::OkStatus();
  std::vector<std::pair<std::string, int>> attempts;
  attempts.reserve(fresh.size());
  for (const Job& job : fresh) attempts.emplace_back(job.id, job.attempt);
  absl::StatusOr<std::vector<std::optional<JobVariability>>> stored =
      store_->ReadJobVariability(attempts);
  if (!stored.ok()) return stored.status();
  std::vector<Store::JobVariabilityRow> made;
  for (size_t i = 0; i < fresh.size(); ++i) {
    Job& job = fresh[i];
    std::optional<JobVariability>& summary = (*stored)[i];
    if (!summary) {
      // Made from its rank devices, summaries and samples (a released job's read back).
      if (absl::Status filled = manager_->FillRankDetail(job); !filled.ok()) return filled;
      absl::StatusOr<std::vector<IterationSample>> samples =
          store_->ReadSamples(job.id, job.attempt);
      if (!samples.ok()) return samples.status();
      absl::StatusOr<std::vector<GpuSample>> gpu_samples =
          store_->ReadGpuSamples(job.id, job.attempt);
      if (!gpu_samples.ok()) return gpu_samples.status();
      summary = VariabilityOf(job, *samples, *gpu_samples);
      made.push_back({job.id, job.attempt, *summary});
    }
    variability_.Add(job, *summary);
    variability_jobs_.insert(job.id);
  }
  // Stored for the next restart; if that fails they are made again then.
  if (!made.empty()) store_->WriteJobVariabilityAsync(std::move(made), [](absl::Status) {});
  return absl::OkStatus();
}

absl::StatusOr<SamplesView> ReadService::GetSamples(const std::string& job_id, int from_iteration,
                                                    std::optional<int> rank) {
  absl::StatusOr<JobView> view = manager_->Get(job_id);
  if (!view.ok()) return view.status();
  SamplesView result;
  result.view = std::move(*view);
  const Job& job = result.view.job;
  if (job.attempt < 1) return result;  // never placed: nothing stored
  absl::StatusOr<std::vector<IterationSample>> samples =
      store_->ReadSamples(job.id, job.attempt, from_iteration);
  if (!samples.ok()) return samples.status();
  result.samples = std::move(*samples);
  if (rank) {
    result.samples.erase(std::remove_if(result.samples.begin(), result.samples.end(),
                                        [&](const IterationSample& s) { return s.rank != *rank; }),
                         result.samples.end());
  }
  return result;
}

absl::StatusOr<ScreeningView> ReadService::Screening(const std::string& screening_id) {
  if (absl::Status valid = ValidateScreeningId(screening_id); !valid.ok()) return valid;
  JobManager::ReadSnapshot snapshot = manager_->Snapshot(
      [&screening_id](const Job& job) { return ScreeningIdOf(job) == screening_id; });
  if (snapshot.jobs.empty()) {
    return absl::NotFoundError(absl::StrCat("no screening \"", screening_id,
                                            "\" (no job has the label ", kScreeningLabel, "=",
                                            screening_id, ")"));
  }
  ScreeningView view;
  view.id = screening_id;
  view.created = snapshot.jobs.front().created;
  view.jobs = static_cast<int>(snapshot.jobs.size());
  // The ended jobs, read in one narrow pass over the store (Store::ReadScreeningRows).
  std::vector<const Job*> ended;
  std::vector<std::pair<std::string, int>> attempts;
  for (Job& job : snapshot.jobs) {
    view.created = std::min(view.created, job.created);
    if (!IsTerminal(job.state)) {
      ++view.pending;
      continue;
    }
    if (absl::Status filled = manager_->FillRankDetail(job); !filled.ok()) return filled;
    ended.push_back(&job);
    attempts.emplace_back(job.id, job.attempt);
  }
  absl::StatusOr<std::vector<Store::ScreeningRows>> rows = store_->ReadScreeningRows(attempts);
  if (!rows.ok()) return rows.status();
  std::vector<diagnosis::ScreenedGpu> gpus;
  gpus.reserve(ended.size());
  for (size_t i = 0; i < ended.size(); ++i) {
    Store::ScreeningRows& read = (*rows)[i];
    gpus.push_back(
        ScreenedGpuOfMeasured(*ended[i], std::move(read.step_times_s), std::move(read.readings)));
  }
  view.report = diagnosis::Screen(gpus);
  return view;
}

std::vector<ScreeningListEntry> ReadService::ListScreenings() {
  JobManager::ReadSnapshot snapshot =
      manager_->Snapshot([](const Job& job) { return !ScreeningIdOf(job).empty(); });
  return ListScreeningsOf(snapshot.jobs);
}

absl::StatusOr<JobDiagnosis> ReadService::Diagnose(const std::string& job_id) {
  absl::StatusOr<JobView> view = manager_->Get(job_id);
  if (!view.ok()) return view.status();
  const Job& job = view->job;
  if (!ShouldDiagnose(job)) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job.id, " is ", JobStateText(job.state),
                     ": only a job that ended SUCCEEDED or FAILED has a diagnosis"));
  }
  return store_->RediagnoseJob(JobInputsOf(job), job.attempt);
}

}  // namespace bench
