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
  ConfigurationFilter counted = VariabilityConfigurations();
  if (!model.empty()) counted.model = model;
  JobManager::ReadSnapshot snapshot = manager_->Snapshot([&counted](const Job& job) {
    return job.state == JobState::kSucceeded && counted.Matches(ConfigurationOf(job));
  });
  VariabilityBuilder builder;
  for (const Job& job : snapshot.jobs) {
    absl::StatusOr<std::vector<IterationSample>> samples = store_->ReadSamples(job.id, job.attempt);
    if (!samples.ok()) return samples.status();
    absl::StatusOr<std::vector<GpuSample>> gpu_samples =
        store_->ReadGpuSamples(job.id, job.attempt);
    if (!gpu_samples.ok()) return gpu_samples.status();
    builder.AddJob(job, *samples, *gpu_samples);
  }
  return VariabilityReport{threshold_pct, builder.Finish(threshold_pct)};
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
  for (const Job& job : snapshot.jobs) {
    view.created = std::min(view.created, job.created);
    if (!IsTerminal(job.state)) {
      ++view.pending;
      continue;
    }
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
