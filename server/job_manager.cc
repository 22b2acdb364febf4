#include "server/job_manager.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"
#include "common/log.h"
#include "server/environment.h"
#include "server/scheduler.h"
#include "server/spec_validation.h"

namespace bench {
namespace {

// The telemetry note of a job whose join failed; Recover tries such jobs again.
constexpr char kTelemetryNotJoined[] = "GPU telemetry not joined: ";


std::string DescribeRanks(const std::vector<int>& ranks) {
  if (ranks.empty()) return "no ranks";
  if (ranks.size() == 1) return absl::StrCat("rank ", ranks.front());
  bool contiguous = ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size());
  if (contiguous) return absl::StrCat("ranks ", ranks.front(), "-", ranks.back());
  return absl::StrCat("ranks ", absl::StrJoin(ranks, ","));
}

std::string DescribePlacements(const std::vector<Placement>& placements) {
  std::vector<std::string> parts;
  for (const Placement& p : placements) {
    parts.push_back(absl::StrCat(p.agent, " (", DescribeRanks(p.ranks), ")"));
  }
  return absl::StrJoin(parts, ", ");
}

std::string Count(size_t n, const char* noun) {
  return absl::StrCat(n, " ", noun, n == 1 ? "" : "s");
}

std::string Truncate(std::string text, size_t max) {
  if (text.size() <= max) return text;
  return absl::StrCat("…", text.substr(text.size() - max));
}

// A store completion that must run outside the manager's lock. The manager queues its
// store writes under that lock, and a store that is shutting down calls `done` at once
// on the caller's thread: such an early completion is kept for the caller to finish
// once it has unlocked (Arm, then Finish); a later one runs on the store's thread.
class StoreCompletion {
 public:
  explicit StoreCompletion(std::function<void(absl::Status)> finish) : finish_(std::move(finish)) {}
  // The store's callback.
  void Complete(absl::Status status) {
    {
      absl::MutexLock lock(&mu_);
      if (!armed_) {
        early_ = std::move(status);
        return;
      }
    }
    finish_(std::move(status));
  }
  // The queueing call returned: later completions finish at once. Returns the status of
  // one that came before, which the caller must Finish after unlocking.
  std::optional<absl::Status> Arm() {
    absl::MutexLock lock(&mu_);
    armed_ = true;
    return std::move(early_);
  }
  void Finish(absl::Status status) { finish_(std::move(status)); }

 private:
  const std::function<void(absl::Status)> finish_;
  absl::Mutex mu_;
  bool armed_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> early_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

JobManager::JobManager(Store* store, JobManagerOptions options, LiveMetrics* metrics)
    : store_(store), options_(options), metrics_(metrics) {}

JobManager::~JobManager() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &JobManager::NothingInFlight));
}

absl::Status JobManager::Recover() {
  absl::StatusOr<std::vector<Job>> loaded = store_->LoadJobs();
  if (!loaded.ok()) return loaded.status();
  absl::StatusOr<std::vector<Baseline>> baselines = store_->LoadBaselines();
  if (!baselines.ok()) return baselines.status();
  absl::MutexLock lock(&mu_);
  for (Baseline& baseline : *baselines) {
    Configuration configuration = baseline.configuration;
    baselines_[configuration] = std::move(baseline);
  }
  for (Job& job : *loaded) {
    Job& stored = jobs_.Add(std::move(job));
    JobRuntime& runtime = runtime_[stored.id];
    runtime.persisted = true;
    if (stored.attempt > 0) {
      absl::StatusOr<std::map<int, int>> counts =
          store_->IterationsByRank(stored.id, stored.attempt);
      if (counts.ok()) {
        runtime.iterations_by_rank = *counts;
        for (const auto& [rank, n] : *counts) runtime.samples_stored += n;
      }
      absl::StatusOr<std::map<int, int64_t>> nonfinite =
          store_->NonFiniteLossesByRank(stored.id, stored.attempt);
      if (nonfinite.ok()) {
        for (const auto& [rank, n] : *nonfinite) runtime.nonfinite_losses += n;
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
  }
  Log("recovered ", jobs_.size(), " jobs from ", store_->path());
  Schedule();
  return absl::OkStatus();
}

JobManager::Clock::time_point JobManager::ReconcileDeadlineAsLastSeen() const {
  // The lease check (CheckAgents) then expires the agent once the grace has passed.
  return Clock::now() +
         absl::ToChronoMilliseconds(options_.reconcile_grace - options_.agent_lease);
}

void JobManager::BeginReconcileGrace() {
  absl::MutexLock lock(&mu_);
  fleet_.ExtendPlaceholders(ReconcileDeadlineAsLastSeen());
}

void JobManager::AdoptRecoveredRunningJob(Job& job) {
  JobRuntime& runtime = runtime_[job.id];
  runtime.all_dispatched = true;
  runtime.last_progress = absl::Now();
  runtime.started = job.created;
  for (auto it = job.history.rbegin(); it != job.history.rend(); ++it) {
    if (it->state == JobState::kRunning) {
      runtime.started = it->time;
      break;
    }
  }
  // The agents are expected back within the grace: until then they hold the devices.
  Clock::time_point expires = ReconcileDeadlineAsLastSeen();
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
      absl::FormatDuration(options_.reconcile_grace), " for ",
      DescribePlacements(job.placements), " to reconnect");
}

bool JobManager::RankPlacedOn(const Job& job, const std::string& agent, int rank) {
  for (const Placement& placement : job.placements) {
    if (placement.agent != agent) continue;
    return std::find(placement.ranks.begin(), placement.ranks.end(), rank) !=
           placement.ranks.end();
  }
  return false;
}

Job* JobManager::FindJob(const std::string& job_id) {
  return jobs_.Find(job_id);
}

JobView JobManager::ViewOf(const Job& job) {
  JobView view;
  view.job = job;
  if (job.state == JobState::kQueued) {
    auto position = queue_positions_.find(job.id);
    if (position != queue_positions_.end()) view.queue_position = position->second;
  }
  auto it = runtime_.find(job.id);
  if (it != runtime_.end() && job.attempt > 0) {
    const JobRuntime& runtime = it->second;
    int lowest = job.spec.iterations;
    for (int rank = 0; rank < job.spec.devices; ++rank) {
      auto r = runtime.iterations_by_rank.find(rank);
      lowest = std::min(lowest, r == runtime.iterations_by_rank.end() ? 0 : r->second);
    }
    view.iterations_done = lowest;
    view.samples_stored = runtime.samples_stored;
    view.nonfinite_losses = runtime.nonfinite_losses;
  }
  if (job.state == JobState::kSucceeded) {
    view.images_per_second = JobThroughput(job.summaries, job.spec.devices);
    if (view.images_per_second) {
      view.baseline =
          CompareWithBaselines(*view.images_per_second, ConfigurationOf(job), baselines_);
    }
  }
  return view;
}

void JobManager::Persist(const Job& job) {
  std::string id = job.id;
  store_->UpdateJobAsync(job, [id](absl::Status status) {
    if (!status.ok()) Log("could not persist job ", id, ": ", status.ToString());
  });
}

void JobManager::Transition(Job& job, JobState state, std::string reason) {
  job.state = state;
  job.reason = reason;
  job.history.push_back({state, std::move(reason), absl::Now()});
  Log(job.id, " ", JobStateText(state), job.reason.empty() ? "" : ": ", job.reason);
  Persist(job);
  Notify(job);
  if (metrics_ != nullptr && state == JobState::kRunning) {
    metrics_->JobStarted(job.id, {job.spec.model, PrecisionText(job.spec.precision),
                                  job.spec.batch_size, job.spec.devices});
  }
  if (IsTerminal(state) && job.attempt > 0) {
    LogLossHealth(job);
    if (metrics_ != nullptr) {
      std::optional<double> throughput;
      if (state == JobState::kSucceeded) {
        throughput = JobThroughput(job.summaries, job.spec.devices);
      }
      metrics_->JobEnded(job.id, throughput, absl::Now());
    }
    JoinTelemetry(job);
  }
}

std::string JobManager::AgentOfRank(const Job& job, int rank) const {
  for (const Placement& placement : job.placements) {
    for (int r : placement.ranks) {
      if (r == rank) return placement.agent;
    }
  }
  return "";
}

void JobManager::JoinTelemetry(const Job& job) {
  Store::TelemetryRequest request;
  request.job_id = job.id;
  request.attempt = job.attempt;
  request.summaries = job.summaries;
  for (const Placement& placement : job.placements) {
    for (int rank : placement.ranks) request.agent_by_rank[rank] = placement.agent;
  }
  request.expect_gpus = job.device_kind == DeviceKind::kCuda;
  std::string id = job.id;
  int attempt = job.attempt;
  bool queued = store_->JoinTelemetryAsync(
      std::move(request), [this, id, attempt](absl::StatusOr<JoinedTelemetry> joined) {
        OnTelemetryJoined(id, attempt, std::move(joined));
      });
  if (queued) ++joins_in_flight_;
}

void JobManager::OnTelemetryJoined(const std::string& job_id, int attempt,
                                   absl::StatusOr<JoinedTelemetry> joined) {
  absl::MutexLock lock(&mu_);
  --joins_in_flight_;
  Job* job = FindJob(job_id);
  if (job == nullptr || job->attempt != attempt) return;
  std::vector<std::string> notes;
  if (job->device_kind == DeviceKind::kCpu) {
    notes.push_back("no GPU telemetry: the ranks ran on CPU slots");
  }
  auto runtime = runtime_.find(job_id);
  if (runtime != runtime_.end()) {
    notes.insert(notes.end(), runtime->second.telemetry_notes.begin(),
                 runtime->second.telemetry_notes.end());
  }
  if (!joined.ok()) {
    notes.push_back(absl::StrCat(kTelemetryNotJoined, joined.status().message()));
  } else {
    job->gpu_telemetry = std::move(joined->gpus);
    if (!joined->note.empty()) notes.push_back(std::move(joined->note));
  }
  job->telemetry_note = absl::StrJoin(notes, "; ");
  if (metrics_ != nullptr) {
    if (std::optional<double> energy = JobEnergyPerImage(*job)) {
      metrics_->SetEnergyPerImage(job_id, *energy);
    }
  }
  Persist(*job);
  Notify(*job);
}

FleetCounts JobManager::Fleet() {
  absl::MutexLock lock(&mu_);
  FleetCounts fleet;
  for (const Job& job : jobs_) {
    switch (job.state) {
      case JobState::kQueued: ++fleet.queued; break;
      case JobState::kRunning: ++fleet.running; break;
      case JobState::kSucceeded: ++fleet.succeeded; break;
      case JobState::kFailed: ++fleet.failed; break;
      case JobState::kCancelled: ++fleet.cancelled; break;
    }
  }
  fleet_.AddTo(fleet);
  return fleet;
}

void JobManager::Notify(const Job& job) {
  bool final = IsTerminal(job.state);
  JobView view;
  bool have_view = false;
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    if (it->second.job_id != job.id) {
      ++it;
      continue;
    }
    if (!have_view) {
      view = ViewOf(job);
      have_view = true;
    }
    it->second.callback(view, final);
    it = final ? watchers_.erase(it) : std::next(it);
  }
}

std::optional<absl::StatusOr<SubmitResult>> JobManager::AnswerWithoutStoring(const JobSpec& spec) {
  if (shut_down_) return absl::UnavailableError("benchd is shutting down");
  if (!spec.request_id.empty()) {
    if (const std::string* used_by = jobs_.JobOfRequest(spec.request_id)) {
      Job* existing = FindJob(*used_by);
      if (existing != nullptr && existing->spec == spec) return SubmitResult{existing->id, true};
      return absl::FailedPreconditionError(absl::StrCat("request_id (--request-id): \"",
                                                        spec.request_id, "\" was already used for ",
                                                        *used_by, " with a different spec"));
    }
  }
  std::vector<AgentCapacity> fleet = fleet_.Capacities();
  PlacementRequest request = PlacementRequestOf(spec);
  if (ChooseDeviceKind(request, fleet) == DeviceKind::kNone) {
    int gpus = FleetDevices(DeviceKind::kCuda, fleet);
    int slots = FleetDevices(DeviceKind::kCpu, fleet);
    bool constrained = !spec.allowed_nodes.empty() || !spec.node_labels.empty() || spec.nodes > 0;
    if (constrained) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the registered fleet can never run this job: ", NeverFitsReason(request, fleet)));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("devices (--gpus): the job asks for ", Count(spec.devices, "device"),
                     " but the registered fleet has ", Count(gpus, "GPU"), " and ",
                     Count(slots, "CPU slot"), " in total (", Count(fleet.size(), "agent"), ")"));
  }
  return std::nullopt;
}

void JobManager::Submit(JobSpec spec, SubmitDone done) {
  absl::Status valid = NormalizeAndValidateSpec(spec);
  if (!valid.ok()) return done(valid);
  std::optional<absl::StatusOr<SubmitResult>> answer;
  std::shared_ptr<StoreCompletion> completion;
  std::optional<absl::Status> early;
  {
    absl::MutexLock lock(&mu_);
    answer = AnswerWithoutStoring(spec);
    if (!answer) {
      Job job;
      job.seq = jobs_.NextSeq();
      job.id = absl::StrFormat("job-%06d", job.seq);
      job.spec = std::move(spec);
      job.created = absl::Now();
      job.state = JobState::kQueued;
      job.reason = "waiting for devices";
      job.history.push_back({JobState::kQueued, "submitted", job.created});
      jobs_.Add(job);
      runtime_[job.id];
      ++completions_in_flight_;
      completion = std::make_shared<StoreCompletion>(
          [this, job_id = job.id, done = std::move(done)](absl::Status status) {
            OnJobInserted(job_id, status, done);
          });
      store_->InsertJobAsync(
          job, [completion](absl::Status status) { completion->Complete(std::move(status)); });
      early = completion->Arm();
    }
  }
  if (answer) return done(std::move(*answer));
  if (early) completion->Finish(std::move(*early));
}

void JobManager::OnJobInserted(const std::string& job_id, const absl::Status& status,
                               const SubmitDone& done) {
  absl::StatusOr<SubmitResult> result;
  {
    absl::MutexLock lock(&mu_);
    --completions_in_flight_;
    if (!status.ok()) {
      // Nothing was stored: forget the job entirely.
      runtime_.erase(job_id);
      jobs_.Remove(job_id);
      result = absl::UnavailableError(absl::StrCat("could not store the job: ", status.message()));
    } else {
      Job* job = FindJob(job_id);
      runtime_[job_id].persisted = true;
      Log(job_id, " submitted: ", job->spec.model, " ", job->spec.devices, " devices ",
          PrecisionText(job->spec.precision), " bs ", job->spec.batch_size);
      Schedule();
      result = SubmitResult{job_id, false};
    }
  }
  done(std::move(result));
}

absl::StatusOr<JobView> JobManager::Get(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  Job* job = FindJob(job_id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("no job ", job_id));
  return ViewOf(*job);
}

std::vector<JobView> JobManager::List() {
  absl::MutexLock lock(&mu_);
  std::vector<JobView> views;
  for (const Job& job : jobs_) views.push_back(ViewOf(job));
  return views;
}

std::vector<JobView> JobManager::Queue() {
  absl::MutexLock lock(&mu_);
  std::vector<JobView> views;
  for (const Job& job : jobs_) {
    if (job.state == JobState::kQueued) views.push_back(ViewOf(job));
  }
  std::stable_sort(views.begin(), views.end(), [](const JobView& a, const JobView& b) {
    // Not yet considered (0) last.
    return (a.queue_position == 0 ? INT32_MAX : a.queue_position) <
           (b.queue_position == 0 ? INT32_MAX : b.queue_position);
  });
  return views;
}

JobManager::ReadSnapshot JobManager::Snapshot(const std::function<bool(const Job&)>& keep) {
  ReadSnapshot snapshot;
  absl::MutexLock lock(&mu_);
  for (const Job& job : jobs_) {
    if (keep(job)) snapshot.jobs.push_back(job);
  }
  snapshot.baselines = baselines_;
  return snapshot;
}

absl::StatusOr<JobView> JobManager::Cancel(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  Job* job = FindJob(job_id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("no job ", job_id));
  if (IsTerminal(job->state)) {
    return absl::FailedPreconditionError(
        absl::StrCat(job_id, " has already ended (", JobStateText(job->state), ")"));
  }
  if (job->state == JobState::kQueued) {
    Transition(*job, JobState::kCancelled, "cancelled by the user while queued");
  } else {
    EndRunningJob(*job, JobState::kCancelled, "cancelled by the user");
  }
  Schedule();  // the queue moved up
  return ViewOf(*job);
}

absl::StatusOr<Baseline> JobManager::BaselineOf(const std::string& job_id,
                                                double lower_tolerance_pct,
                                                double upper_tolerance_pct) {
  if (shut_down_) return absl::UnavailableError("benchd is shutting down");
  Job* job = FindJob(job_id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("no job ", job_id));
  if (job->state != JobState::kSucceeded) {
    return absl::FailedPreconditionError(absl::StrCat(job_id, " is ", JobStateText(job->state),
                                                      "; only a SUCCEEDED job can be a baseline"));
  }
  std::optional<double> throughput = JobThroughput(job->summaries, job->spec.devices);
  if (!throughput) {
    return absl::FailedPreconditionError(
        absl::StrCat(job_id,
                     " has no throughput (not every rank reported measured images over a "
                     "measured window), so it cannot be a baseline"));
  }
  Baseline baseline;
  baseline.configuration = ConfigurationOf(*job);
  baseline.job_id = job_id;
  baseline.images_per_second = *throughput;
  baseline.lower_tolerance_pct = lower_tolerance_pct;
  baseline.upper_tolerance_pct = upper_tolerance_pct;
  baseline.set = absl::Now();
  return baseline;
}

void JobManager::SetBaseline(const std::string& job_id, double lower_tolerance_pct,
                             double upper_tolerance_pct, BaselineDone done) {
  absl::Status valid = NormalizeTolerances(lower_tolerance_pct, upper_tolerance_pct);
  if (!valid.ok()) return done(valid);
  absl::StatusOr<Baseline> baseline;
  std::shared_ptr<StoreCompletion> completion;
  std::optional<absl::Status> early;
  {
    absl::MutexLock lock(&mu_);
    baseline = BaselineOf(job_id, lower_tolerance_pct, upper_tolerance_pct);
    if (baseline.ok()) {
      ++completions_in_flight_;
      completion = std::make_shared<StoreCompletion>(
          [this, stored = *baseline, done = std::move(done)](absl::Status status) {
            OnBaselineStored(stored, status, done);
          });
      store_->PutBaselineAsync(*baseline, [completion](absl::Status status) {
        completion->Complete(std::move(status));
      });
      early = completion->Arm();
    }
  }
  if (!baseline.ok()) return done(baseline.status());
  if (early) completion->Finish(std::move(*early));
}

void JobManager::OnBaselineStored(const Baseline& baseline, const absl::Status& status,
                                  const BaselineDone& done) {
  {
    absl::MutexLock lock(&mu_);
    --completions_in_flight_;
    // Applied in the writer's commit order, so the latest stored baseline wins here too.
    if (status.ok()) baselines_[baseline.configuration] = baseline;
  }
  if (!status.ok()) {
    return done(
        absl::UnavailableError(absl::StrCat("could not store the baseline: ", status.message())));
  }
  Log("baseline for ", baseline.configuration.model, " ", baseline.configuration.devices,
      " devices ", PrecisionText(baseline.configuration.precision), " bs ",
      baseline.configuration.batch_size, " is now ", baseline.job_id, " (",
      baseline.images_per_second, " images/s)");
  done(baseline);
}

absl::StatusOr<int64_t> JobManager::Watch(const std::string& job_id, WatchCallback on_update,
                                          CloseCallback on_close) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return absl::UnavailableError("benchd is shutting down");
  Job* job = FindJob(job_id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("no job ", job_id));
  bool final = IsTerminal(job->state);
  on_update(ViewOf(*job), final);
  int64_t handle = next_watch_handle_++;
  if (!final) watchers_[handle] = Watcher{job_id, std::move(on_update), std::move(on_close)};
  return handle;
}

void JobManager::Unwatch(int64_t handle) {
  absl::MutexLock lock(&mu_);
  watchers_.erase(handle);
}

absl::Duration JobManager::WallTimeLimit(const Job& job) const {
  return job.spec.wall_time_limit_s > 0 ? absl::Seconds(job.spec.wall_time_limit_s)
                                        : options_.default_wall_time;
}

absl::Duration JobManager::HangTimeout(const Job& job) const {
  return job.spec.hang_timeout_s > 0 ? absl::Seconds(job.spec.hang_timeout_s)
                                     : options_.default_hang_timeout;
}

void JobManager::Schedule() {
  if (shut_down_) return;
  absl::Time now = absl::Now();
  std::vector<QueuedJob> queue;
  std::vector<RunningAllocation> running;
  for (Job& job : jobs_) {
    if (job.state == JobState::kQueued && runtime_[job.id].persisted) {
      queue.push_back(QueuedJob{job.id, PlacementRequestOf(job.spec), WallTimeLimit(job)});
    } else if (job.state == JobState::kRunning) {
      running.push_back(
          RunningAllocation{job.id, runtime_[job.id].started + WallTimeLimit(job), job.placements});
    }
  }
  queue_positions_.clear();
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
  runtime.started = absl::Now();
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

absl::StatusOr<std::string> JobManager::RegisterAgent(AgentInventory inventory) {
  absl::Status valid = bench::Fleet::NormalizeInventory(inventory);
  if (!valid.ok()) return valid;
  absl::MutexLock lock(&mu_);
  if (shut_down_) return absl::UnavailableError("benchd is shutting down");
  fleet_.Register(inventory);
  return inventory.name;
}

absl::Status JobManager::Heartbeat(const std::string& agent_name,
                                   const std::vector<RunningOnAgent>& running) {
  absl::MutexLock lock(&mu_);
  if (!fleet_.Registered(agent_name)) {
    return absl::NotFoundError(absl::StrCat("agent ", agent_name, " is not registered"));
  }
  fleet_.Touch(agent_name);
  AgentChannel* channel = fleet_.Channel(agent_name);
  // Ranks the controller does not expect there (their job ended or was requeued, or it
  // is unknown) must not keep holding devices: tell the agent to stop them.
  std::set<std::pair<std::string, int>> listed;
  for (const RunningOnAgent& entry : running) {
    Job* job = FindJob(entry.job_id);
    int attempt = entry.attempt > 0 ? entry.attempt : (job != nullptr ? job->attempt : 0);
    listed.insert({entry.job_id, attempt});
    bool expected = job != nullptr && job->state == JobState::kRunning &&
                    attempt == job->attempt && !Fenced(agent_name, job->id, attempt) &&
                    std::any_of(job->placements.begin(), job->placements.end(),
                                [&](const Placement& p) { return p.agent == agent_name; });
    if (expected || channel == nullptr) continue;
    std::string reason =
        job == nullptr ? "unknown job"
        : attempt != job->attempt
            ? absl::StrCat("attempt ", attempt, " is over (the job is on attempt ",
                           job->attempt, ")")
            : absl::StrCat("the job is ", JobStateText(job->state),
                           job->reason.empty() ? "" : ": ", job->reason);
    channel->SendCancel(CancelMessage{entry.job_id, attempt, std::move(reason)});
  }
  // The other way round: devices held for attempts the agent no longer runs. The agent
  // drops an attempt from its list only after its final reports were delivered, so an
  // ended attempt's devices are free; a running job whose acknowledged ranks vanished
  // (the agent restarted within its lease) lost its node. Twice in a row, in case this
  // heartbeat overtook the acknowledgement.
  for (const auto& [job_id, attempt] : fleet_.HeldAttempts(agent_name)) {
    Job* job = FindJob(job_id);
    JobRuntime& runtime = runtime_[job_id];
    if (listed.count({job_id, attempt}) > 0) {
      runtime.missing_from_heartbeat.erase(agent_name);
      continue;
    }
    if (job == nullptr || attempt != job->attempt || job->state != JobState::kRunning) {
      if (job != nullptr && attempt == job->attempt) runtime.running_ranks.erase(agent_name);
      fleet_.Release(agent_name, job_id, attempt);
      continue;
    }
    if (runtime.undelivered.count(agent_name) > 0) continue;  // not acknowledged yet
    if (++runtime.missing_from_heartbeat[agent_name] < 2) continue;
    runtime.running_ranks.erase(agent_name);
    ReleaseAllDevices(*job, agent_name);
    NodeLost(*job, agent_name,
             absl::StrCat("node lost: the ranks on ", agent_name,
                          " vanished (the agent no longer runs them; did it restart?)"));
  }
  Schedule();
  return absl::OkStatus();
}

absl::Status JobManager::AttachChannel(const std::string& agent_name, AgentChannel* channel) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return absl::UnavailableError("benchd is shutting down");
  absl::Status attached = fleet_.Attach(agent_name, channel);
  if (!attached.ok()) return attached;
  // Re-send what this agent has not acknowledged yet (it ignores duplicates).
  for (Job& job : jobs_) {
    if (job.state != JobState::kRunning) continue;
    JobRuntime& runtime = runtime_[job.id];
    if (runtime.undelivered.count(agent_name) == 0) continue;
    for (const Placement& placement : job.placements) {
      bool is_master = &placement == &job.placements.front();
      if (placement.agent == agent_name && (is_master || runtime.master_port != 0)) {
        channel->SendAssignment(AssignmentFor(job, placement));
      }
    }
  }
  Schedule();
  return absl::OkStatus();
}

void JobManager::DetachChannel(const std::string& agent_name, AgentChannel* channel) {
  absl::MutexLock lock(&mu_);
  fleet_.Detach(agent_name, channel);
}

absl::Status JobManager::ReportStatus(const std::string& agent_name, const std::string& job_id,
                                      int attempt, int master_port,
                                      const std::vector<RankReport>& ranks) {
  absl::MutexLock lock(&mu_);
  if (!fleet_.Known(agent_name)) {
    // Typically benchd restarted and the agent has not registered again yet: a report
    // must not be lost, so this is worth retrying.
    return absl::UnavailableError(
        absl::StrCat("agent ", agent_name, " is not registered yet; retry after registering"));
  }
  fleet_.Touch(agent_name);
  Job* job = FindJob(job_id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("no job ", job_id));
  if (attempt != job->attempt || Fenced(agent_name, job_id, attempt)) {
    // A stale attempt (requeued since) or a fenced agent: only its devices matter.
    for (const RankReport& report : ranks) {
      if (report.outcome != RankOutcome::kStarted) {
        fleet_.Release(agent_name, job_id, attempt, report.rank);
      }
    }
    Schedule();
    return absl::OkStatus();
  }
  JobRuntime& runtime = runtime_[job_id];
  runtime.undelivered.erase(agent_name);

  if (master_port > 0 && runtime.master_port == 0 && !job->placements.empty() &&
      job->placements.front().agent == agent_name) {
    runtime.master_port = master_port;
    if (job->state == JobState::kRunning) {
      for (size_t i = 1; i < job->placements.size(); ++i) Dispatch(*job, job->placements[i]);
    }
  }

  bool changed = false;
  for (const RankReport& report : ranks) {
    if (!RankPlacedOn(*job, agent_name, report.rank)) {
      Log("ignored a report from ", agent_name, " for rank ", report.rank, " of ", job_id,
          ", which is not placed there");
      continue;
    }
    if (report.parameters > 0 && job->parameters != report.parameters) {
      job->parameters = report.parameters;
      changed = true;
    }
    if (!report.telemetry_note.empty()) {
      runtime.telemetry_notes.insert(absl::StrCat(agent_name, ": ", report.telemetry_note));
    }
    auto known = job->rank_versions.find(report.rank);
    if (!report.versions.empty() &&
        (known == job->rank_versions.end() || known->second != report.versions)) {
      job->rank_versions[report.rank] = report.versions;
      changed = true;
    }
    if (!report.precision.empty()) {
      auto [it, added] = job->rank_precisions.try_emplace(report.rank, report.precision);
      if (added || it->second != report.precision) {
        it->second = report.precision;
        changed = true;
        if (std::string mismatch = MergePrecision(*job).mismatch; !mismatch.empty()) {
          Log(job_id, ": rank ", report.rank, " runs at ", report.precision, " (", mismatch,
              ")");
        }
      }
    }
    if (report.outcome == RankOutcome::kStarted) continue;
    if (metrics_ != nullptr) metrics_->RankEnded(job_id, report.rank);
    runtime.running_ranks[agent_name].erase(report.rank);
    if (report.outcome == RankOutcome::kSucceeded) {
      runtime.succeeded_ranks.insert(report.rank);
      if (report.summary) job->summaries[report.rank] = *report.summary;
      changed = true;
    } else if (report.outcome == RankOutcome::kFailed && job->state == JobState::kRunning &&
               absl::StartsWith(report.message, kAgentRestartedPrefix)) {
      // The agent died and came back: its node failed, not the trainer.
      ReleaseAllDevices(*job, agent_name);
      runtime.running_ranks.erase(agent_name);
      NodeLost(*job, agent_name,
               absl::StrCat("node lost: rank ", report.rank, " on ", agent_name, ": ",
                            report.message));
      changed = false;
    } else if (report.outcome == RankOutcome::kFailed && job->state == JobState::kRunning &&
               absl::StartsWith(report.message, kLossDivergedPrefix)) {
      // The trainer ended the run itself: the outcome is the divergence, not a crash.
      EndRunningJob(*job, JobState::kFailed,
                    absl::StrCat(kLossDivergedPrefix, " rank ", report.rank, " on ", agent_name,
                                 ": ",
                                 absl::StripLeadingAsciiWhitespace(absl::StripPrefix(
                                     report.message, kLossDivergedPrefix)),
                                 " (", runtime.nonfinite_losses,
                                 " non-finite losses stored so far)"));
      changed = false;
    } else if (report.outcome == RankOutcome::kFailed && job->state == JobState::kRunning) {
      std::string reason = absl::StrCat("rank ", report.rank, " on ", agent_name, " failed (",
                                        report.message, ")");
      if (!report.stderr_tail.empty()) {
        absl::StrAppend(&reason, "; stderr tail:\n", Truncate(report.stderr_tail, 2000));
      }
      EndRunningJob(*job, JobState::kFailed, std::move(reason));
      changed = false;  // EndRunningJob persisted and notified
    }
  }
  MaybeReleaseDevices(*job, agent_name);
  if (job->state == JobState::kRunning &&
      static_cast<int>(runtime.succeeded_ranks.size()) == job->spec.devices) {
    Transition(*job, JobState::kSucceeded,
               absl::StrCat("all ", job->spec.devices, " ranks finished"));
  } else if (changed) {
    Persist(*job);
    Notify(*job);
  }
  Schedule();
  return absl::OkStatus();
}

void JobManager::LogLossHealth(const Job& job) {
  const JobRuntime& runtime = runtime_[job.id];
  int64_t skipped = 0;
  for (const auto& [rank, summary] : job.summaries) skipped += summary.skipped_steps;
  if (runtime.nonfinite_losses == 0 && skipped == 0) return;
  Log(job.id, " attempt ", job.attempt, ": ", runtime.nonfinite_losses,
      " non-finite losses stored, ", skipped, " skipped (overflowed) steps in ",
      job.summaries.size(), " of ", job.spec.devices, " rank summaries");
}

void JobManager::EndRunningJob(Job& job, JobState state, std::string reason) {
  Transition(job, state, std::move(reason));
  StopRanks(job);
}

void JobManager::NodeLost(Job& job, const std::string& agent, std::string reason) {
  fenced_.insert({agent, job.id, job.attempt});
  if (job.requeues >= options_.max_requeues) {
    if (options_.max_requeues > 0) {
      absl::StrAppend(&reason, "; not requeued again (", Count(job.requeues, "requeue"),
                      " already, --requeue_on_node_lost=", options_.max_requeues, ")");
    }
    EndRunningJob(job, JobState::kFailed, std::move(reason));
    return;
  }
  job.requeues += 1;
  absl::StrAppend(&reason, "; requeued (", job.requeues, " of ", options_.max_requeues, ")");
  StopRanks(job);
  JobRuntime& runtime = runtime_[job.id];
  runtime.iterations_by_rank.clear();
  runtime.samples_stored = 0;
  runtime.nonfinite_losses = 0;
  Transition(job, JobState::kQueued, std::move(reason));
}

void JobManager::StopRanks(Job& job) {
  JobRuntime& runtime = runtime_[job.id];
  for (size_t i = 0; i < job.placements.size(); ++i) {
    const std::string& agent_name = job.placements[i].agent;
    std::set<int>& ranks = runtime.running_ranks[agent_name];
    if (ranks.empty()) continue;
    bool sent = i == 0 || runtime.master_port != 0 || runtime.all_dispatched;
    if (!sent) {
      // Its assignment was still waiting for the rendezvous port: nothing runs there.
      ranks.clear();
      ReleaseAllDevices(job, agent_name);
      continue;
    }
    if (AgentChannel* channel = fleet_.Channel(agent_name)) {
      channel->SendCancel(CancelMessage{job.id, job.attempt, job.reason});
    }
  }
}

void JobManager::MaybeReleaseDevices(Job& job, const std::string& agent_name) {
  JobRuntime& runtime = runtime_[job.id];
  auto it = runtime.running_ranks.find(agent_name);
  if (it != runtime.running_ranks.end() && !it->second.empty()) return;
  ReleaseAllDevices(job, agent_name);
}

void JobManager::ReleaseAllDevices(Job& job, const std::string& agent_name) {
  fleet_.Release(agent_name, job.id, job.attempt);
}

bool JobManager::Fenced(const std::string& agent, const std::string& job_id,
                        int attempt) const {
  return !fenced_.empty() && fenced_.count({agent, job_id, attempt}) > 0;
}

void JobManager::UploadSamples(const std::string& agent_name,
                               std::vector<IterationSample> samples,
                               std::vector<GpuSample> gpu_samples, UploadDone done) {
  std::vector<IterationSample> known;
  std::vector<GpuSample> known_gpu;
  {
    absl::MutexLock lock(&mu_);
    fleet_.Touch(agent_name);
    known.reserve(samples.size());
    int64_t dropped = 0;
    int64_t malformed = 0;
    for (IterationSample& sample : samples) {
      Job* job = FindJob(sample.job_id);
      if (job == nullptr || job->attempt < 1 || sample.attempt != job->attempt ||
          sample.iteration < 1 || sample.iteration > job->spec.iterations ||
          !RankPlacedOn(*job, agent_name, sample.rank) ||
          Fenced(agent_name, sample.job_id, sample.attempt)) {
        ++dropped;
        continue;
      }
      // A NaN loss is data and is stored; a NaN time cannot be (the agent's parser
      // never makes one), so such a sample is refused and counted, not stored.
      if (std::isnan(sample.step_time_s) || std::isnan(sample.data_time_s) ||
          std::isnan(sample.elapsed_s)) {
        ++malformed;
        continue;
      }
      known.push_back(std::move(sample));
    }
    if (malformed > 0) {
      if (metrics_ != nullptr) metrics_->CountIngestErrors("malformed", malformed);
      Log("refused ", malformed, " samples from ", agent_name,
          " with a NaN step, data or elapsed time");
    }
    if (metrics_ != nullptr) metrics_->RecordIterations(agent_name, known);
    for (GpuSample& sample : gpu_samples) {
      Job* job = FindJob(sample.job_id);
      if (job == nullptr || job->attempt < 1 || sample.attempt != job->attempt ||
          sample.seq < 1 || !RankPlacedOn(*job, agent_name, sample.rank) ||
          Fenced(agent_name, sample.job_id, sample.attempt)) {
        ++dropped;
        continue;
      }
      if (metrics_ != nullptr) metrics_->RecordGpuSample(sample.job_id, agent_name, sample);
      known_gpu.push_back(std::move(sample));
    }
    if (dropped > 0) {
      if (metrics_ != nullptr) metrics_->CountIngestErrors("unknown_rank", dropped);
      dropped_samples_ += dropped;
      Log("dropped ", dropped, " samples from ", agent_name,
          " that match no rank placed there (", dropped_samples_, " in all)");
    }
  }
  if (known.empty() && known_gpu.empty()) {
    done(AppendResult{});
    return;
  }
  int64_t received = static_cast<int64_t>(known.size() + known_gpu.size());
  store_->AppendSamples(
      std::move(known), std::move(known_gpu),
      [this, received, done = std::move(done)](absl::StatusOr<AppendResult> result) {
        if (metrics_ != nullptr) {
          if (result.ok()) {
            metrics_->CountStored(result->stored, result->gpu_stored,
                                  result->duplicates + result->gpu_duplicates);
          } else {
            metrics_->CountIngestErrors("store_failed", received);
          }
        }
        if (result.ok()) {
          absl::MutexLock lock(&mu_);
          std::set<std::string> touched;
          for (const auto& [key, stored] : result->stored_by_rank) {
            const auto& [job_id, attempt, rank] = key;
            Job* job = FindJob(job_id);
            if (job == nullptr || job->attempt != attempt) continue;
            JobRuntime& runtime = runtime_[job_id];
            runtime.iterations_by_rank[rank] += stored;  // distinct stored iterations
            runtime.samples_stored += stored;
            if (stored > 0) runtime.last_progress = absl::Now();
            auto nonfinite = result->nonfinite_by_rank.find(key);
            if (nonfinite != result->nonfinite_by_rank.end()) {
              if (runtime.nonfinite_losses == 0) {
                Log(job_id, ": rank ", rank, " reported a non-finite loss (attempt ", attempt,
                    "); such iterations are stored and counted");
              }
              runtime.nonfinite_losses += nonfinite->second;
            }
            touched.insert(job_id);
          }
          for (const std::string& id : touched) Notify(*FindJob(id));
        }
        done(std::move(result));
      });
}

std::vector<AgentView> JobManager::ListAgents() {
  absl::MutexLock lock(&mu_);
  return fleet_.Views();
}

void JobManager::CheckAgents(Clock::time_point now) {
  absl::MutexLock lock(&mu_);
  int lost = fleet_.ExpireLeases(now, options_.agent_lease, [&](const bench::Fleet::LostAgent&
                                                                     agent) {
    const std::string& name = agent.name;
    std::string why =
        agent.was_placeholder
            ? absl::StrCat("node lost: agent ", name, " did not reconnect within ",
                           absl::FormatDuration(options_.reconcile_grace),
                           " of benchd's restart")
            : absl::StrCat("node lost: agent ", name, " not heard from for ",
                           absl::FormatDuration(options_.agent_lease));
    Log("agent ", name, " lost: ", why);
    for (const auto& [job_id, attempt] : agent.held) {
      Job* job = FindJob(job_id);
      if (job == nullptr || attempt != job->attempt) continue;
      runtime_[job_id].running_ranks.erase(name);
      if (job->state == JobState::kRunning) NodeLost(*job, name, why);
    }
  });
  // Nothing else frees or adds capacity with time alone: events (reports, heartbeats,
  // registrations, submits) schedule for themselves.
  if (lost > 0) Schedule();
}

void JobManager::CheckLimits(absl::Time now) {
  absl::MutexLock lock(&mu_);
  bool any_ended = false;
  for (Job& job : jobs_) {
    if (job.state != JobState::kRunning) continue;
    const JobRuntime& runtime = runtime_[job.id];
    absl::Duration wall = WallTimeLimit(job);
    absl::Duration hang = HangTimeout(job);
    if (now - runtime.started > wall) {
      any_ended = true;
      EndRunningJob(job, JobState::kFailed,
                    absl::StrCat("wall-time limit: attempt ", job.attempt, " ran longer than ",
                                 absl::FormatDuration(wall), "; its ranks were stopped"));
    } else if (now - runtime.last_progress > hang) {
      any_ended = true;
      EndRunningJob(job, JobState::kFailed,
                    absl::StrCat("hung: no iteration stored for ",
                                 absl::FormatDuration(absl::Trunc(now - runtime.last_progress,
                                                                  absl::Seconds(1))),
                                 " (hang timeout ", absl::FormatDuration(hang),
                                 "); its ranks were stopped"));
    }
  }
  if (any_ended) Schedule();
}

void JobManager::Shutdown() {
  absl::MutexLock lock(&mu_);
  shut_down_ = true;
  fleet_.CloseAll(absl::UnavailableError("benchd is shutting down"));
  for (auto& [handle, watcher] : watchers_) {
    if (watcher.on_close) watcher.on_close(absl::UnavailableError("benchd is shutting down"));
  }
  watchers_.clear();
}

}  // namespace bench
