// The JobManager's job lifecycle API (submit, get, list, queue, cancel, baselines, watch,
// limits, shutdown) and the state changes every concern shares (views, transitions,
// persistence, notifications). Placement is in job_manager_placement.cc, the agents' side
// in job_manager_agents.cc, an ended attempt's analyses in job_manager_analyses.cc,
// recovery in job_recovery.cc.
#include "server/core/job_manager.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/quote.h"
#include "server/core/job_manager_text.h"
#include "server/core/scheduler.h"
#include "server/core/spec_validation.h"
#include "server/core/store_completion.h"
#include "server/results/environment.h"

namespace bench {
namespace {

using manager_text::Count;

}  // namespace

JobManager::JobManager(Store* store, JobManagerOptions options, JobEvents* events)
    : store_(store),
      options_(options),
      clock_(options.clock),
      events_(events),
      fleet_(options.clock) {}

JobManager::~JobManager() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &JobManager::NothingInFlight));
}

Job* JobManager::FindJob(const std::string& job_id) {
  return jobs_.Find(job_id);
}

int JobManager::LowestIterationCount(const Job& job, const JobRuntime& runtime) {
  int lowest = job.spec.iterations;
  for (int rank = 0; rank < job.spec.devices; ++rank) {
    auto r = runtime.iterations_by_rank.find(rank);
    lowest = std::min(lowest, r == runtime.iterations_by_rank.end() ? 0 : r->second);
  }
  return lowest;
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
    view.iterations_done = runtime.iterations_done ? *runtime.iterations_done
                                                   : LowestIterationCount(job, runtime);
    view.samples_stored = runtime.samples_stored;
    view.nonfinite_losses = runtime.nonfinite_losses;
  }
  if (job.state == JobState::kSucceeded) {
    view.images_per_second = ThroughputOf(job);
    if (view.images_per_second) {
      view.baseline =
          CompareWithBaselines(*view.images_per_second, ConfigurationOf(job), baselines_);
    }
  }
  return view;
}

Store::Done JobManager::PersistDone(const std::string& job_id) {
  std::shared_ptr<PersistWait> wait;
  if (persist_wait_ != nullptr) {
    wait = std::make_shared<PersistWait>();
    *persist_wait_ = wait;
  }
  return [failed = failed_writes_, id = job_id, wait](absl::Status status) {
    bool first_failure = false;
    {
      absl::MutexLock lock(&failed->mu);
      if (status.ok()) {
        failed->logged.erase(id);
      } else {
        failed->job_ids.insert(id);
        first_failure = failed->logged.insert(id).second;
      }
    }
    if (first_failure) {
      Log("could not persist job ", id, ": ", status.ToString(),
          " (its writes are retried; logged again only after one succeeds)");
    }
    if (wait != nullptr) wait->Committed(std::move(status));
  };
}

void JobManager::Persist(const Job& job, Store::Done then) {
  {
    absl::MutexLock lock(&failed_writes_->mu);
    failed_writes_->job_ids.erase(job.id);
  }
  Store::Done done = PersistDone(job.id);
  if (then) {
    done = [recorded = std::move(done), then = std::move(then)](absl::Status status) {
      recorded(status);
      then(std::move(status));
    };
  }
  store_->UpdateJobAsync(job, std::move(done));
}

void JobManager::PersistRanks(const Job& job, const std::set<int>& ranks) {
  bool failed_before = false;
  {
    absl::MutexLock lock(&failed_writes_->mu);
    failed_before = failed_writes_->job_ids.count(job.id) > 0;
  }
  if (failed_before) return Persist(job);
  store_->UpdateRanksAsync(job, ranks, PersistDone(job.id));
}

void JobManager::PersistWait::Committed(absl::Status commit) {
  ReportDone waiting;
  {
    absl::MutexLock lock(&mu);
    committed = true;
    status = commit;
    waiting = std::move(done);
  }
  if (waiting) waiting(std::move(commit));
}

void JobManager::PersistWait::WhenCommitted(ReportDone then) {
  absl::Status commit;
  {
    absl::MutexLock lock(&mu);
    if (!committed) {
      done = std::move(then);
      return;
    }
    commit = status;
  }
  then(std::move(commit));
}

void JobManager::Transition(Job& job, JobState state, std::string reason) {
  jobs_.SetState(job, state);
  job.reason = reason;
  job.history.push_back({state, std::move(reason), clock_->Now()});
  Log(job.id, " ", JobStateText(state), job.reason.empty() ? "" : ": ", job.reason);
  Persist(job);
  Notify(job);
  if (events_ != nullptr) events_->OnStateChanged(job);
  if (IsTerminal(state) && job.attempt > 0) {
    LogLossHealth(job);
    AnalyzeEndedAttempt(job);
    ended_with_detail_.push_back(job.id);
    ReleaseEndedRankDetail();
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

FleetCounts JobManager::Fleet() {
  absl::MutexLock lock(&mu_);
  FleetCounts fleet;
  fleet.queued = static_cast<int>(jobs_.Count(JobState::kQueued));
  fleet.running = static_cast<int>(jobs_.Count(JobState::kRunning));
  fleet.succeeded = static_cast<int>(jobs_.Count(JobState::kSucceeded));
  fleet.failed = static_cast<int>(jobs_.Count(JobState::kFailed));
  fleet.cancelled = static_cast<int>(jobs_.Count(JobState::kCancelled));
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

std::optional<absl::StatusOr<SubmitResult>> JobManager::AnswerWithoutStoring(
    const JobSpec& spec, const std::string& submitted_by) {
  if (shut_down_) return absl::UnavailableError("benchd is shutting down");
  if (!spec.request_id.empty()) {
    if (const std::string* used_by = jobs_.JobOfRequest(spec.request_id)) {
      Job* existing = FindJob(*used_by);
      // Another submitter's request id answers nothing about that job but that it is taken.
      if (existing != nullptr && existing->submitted_by != submitted_by) {
        return absl::FailedPreconditionError(
            absl::StrCat("request_id (--request-id): ", QuotePrefix(spec.request_id),
                         " was already used by another submitter"));
      }
      if (existing != nullptr && existing->spec == spec) return SubmitResult{existing->id, true};
      return absl::FailedPreconditionError(
          absl::StrCat("request_id (--request-id): ", QuotePrefix(spec.request_id),
                       " was already used for ", *used_by, " with a different spec"));
    }
  }
  // With external allocation the job's nodes do not exist yet: the allocator asks for them.
  if (options_.external_allocation) return std::nullopt;
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

void JobManager::Submit(JobSpec spec, std::string submitted_by, SubmitDone done) {
  absl::Status valid = NormalizeAndValidateSpec(spec);
  if (!valid.ok()) return done(valid);
  std::optional<absl::StatusOr<SubmitResult>> answer;
  std::shared_ptr<StoreCompletion> completion;
  std::optional<absl::Status> early;
  {
    absl::MutexLock lock(&mu_);
    answer = AnswerWithoutStoring(spec, submitted_by);
    if (!answer) {
      Job job;
      job.seq = jobs_.NextSeq();
      job.id = absl::StrFormat("job-%06d", job.seq);
      job.spec = std::move(spec);
      job.submitted_by = std::move(submitted_by);
      job.created = clock_->Now();
      job.state = JobState::kQueued;
      job.reason = options_.external_allocation ? AllocationWaitReason(job) : "waiting for devices";
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
      ++committed_submits_;
      Log(job_id, " submitted",
          job->submitted_by.empty() ? "" : absl::StrCat(" by ", QuotePrefix(job->submitted_by)),
          ": ", job->spec.model, " ", job->spec.devices, " devices ",
          PrecisionText(job->spec.precision), " bs ", job->spec.batch_size);
      if (events_ != nullptr) events_->OnSubmitted(*job);
      Schedule();
      result = SubmitResult{job_id, false};
    }
  }
  done(std::move(result));
}

absl::StatusOr<JobView> JobManager::Get(const std::string& job_id) {
  JobView view;
  {
    absl::MutexLock lock(&mu_);
    Job* job = FindJob(job_id);
    if (job == nullptr) return absl::NotFoundError(absl::StrCat("no job ", QuotePrefix(job_id)));
    view = ViewOf(*job);
  }
  if (absl::Status filled = FillRankDetail(view.job); !filled.ok()) return filled;
  return view;
}

std::vector<JobView> JobManager::List() {
  std::vector<JobView> views;
  {
    absl::MutexLock lock(&mu_);
    for (const Job& job : jobs_) views.push_back(ViewOf(job));
  }
  FillRankDetail(views);
  return views;
}

JobManager::JobPage JobManager::ListNewestFirst(const std::function<bool(const Job&)>& keep,
                                                int64_t before_seq, size_t limit) {
  JobPage page;
  absl::ReleasableMutexLock lock(&mu_);
  // The table is in submission order, so seqs ascend: start below before_seq.
  auto end = before_seq > 0
                 ? std::lower_bound(jobs_.begin(), jobs_.end(), before_seq,
                                    [](const Job& job, int64_t seq) { return job.seq < seq; })
                 : jobs_.end();
  for (auto it = std::make_reverse_iterator(end); it != std::make_reverse_iterator(jobs_.begin());
       ++it) {
    if (!keep(*it)) continue;
    if (page.views.size() == limit) {
      page.more = true;
      break;
    }
    page.views.push_back(ViewOf(*it));
  }
  lock.Release();
  FillRankDetail(page.views);
  return page;
}

std::vector<JobView> JobManager::Queue() {
  absl::MutexLock lock(&mu_);
  std::vector<JobView> views;
  jobs_.ForEachLive([&](const Job& job) {
    mu_.AssertHeld();
    if (job.state == JobState::kQueued) views.push_back(ViewOf(job));
  });
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

Baselines JobManager::VisitJobs(const std::function<void(const Job&)>& visit) {
  absl::MutexLock lock(&mu_);
  for (const Job& job : jobs_) visit(job);
  return baselines_;
}

absl::StatusOr<JobView> JobManager::Cancel(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  Job* job = FindJob(job_id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("no job ", QuotePrefix(job_id)));
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
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("no job ", QuotePrefix(job_id)));
  if (job->state != JobState::kSucceeded) {
    return absl::FailedPreconditionError(absl::StrCat(job_id, " is ", JobStateText(job->state),
                                                      "; only a SUCCEEDED job can be a baseline"));
  }
  if (job->simulated) {
    return absl::FailedPreconditionError(
        absl::StrCat(job_id, " is simulated (bench-sim-train); only a real job can be a baseline"));
  }
  std::optional<double> throughput = ThroughputOf(*job);
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
  baseline.set = clock_->Now();
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
  std::vector<JobView> final_view;
  int64_t handle = 0;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return absl::UnavailableError("benchd is shutting down");
    Job* job = FindJob(job_id);
    if (job == nullptr) return absl::NotFoundError(absl::StrCat("no job ", QuotePrefix(job_id)));
    handle = next_watch_handle_++;
    if (!IsTerminal(job->state)) {
      on_update(ViewOf(*job), false);
      watchers_[handle] = Watcher{job_id, std::move(on_update), std::move(on_close)};
      return handle;
    }
    final_view.push_back(ViewOf(*job));
  }
  // An ended job: its one view, with its rank detail read back outside the lock.
  FillRankDetail(final_view);
  on_update(final_view.front(), true);
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

void JobManager::CheckLimits(absl::Time now) {
  absl::MutexLock lock(&mu_);
  bool any_ended = false;
  // No iteration can be stored while uploads are refused (UploadsAdmitted): no hang then.
  const bool uploads_held = fleet_.placeholders() > 0;
  jobs_.ForEachLive([&](Job& job) {
    mu_.AssertHeld();
    if (job.state != JobState::kRunning) return;
    const JobRuntime& runtime = runtime_[job.id];
    absl::Duration wall = WallTimeLimit(job);
    absl::Duration hang = HangTimeout(job);
    if (!runtime.node_left.empty() && now - runtime.node_left_at > options_.allocation_grace) {
      any_ended = true;
      EndRunningJob(job, JobState::kFailed, runtime.node_left);
    } else if (now - runtime.started > wall) {
      any_ended = true;
      EndRunningJob(job, JobState::kFailed,
                    absl::StrCat("wall-time limit: attempt ", job.attempt, " ran longer than ",
                                 absl::FormatDuration(wall), "; its ranks were stopped"));
    } else if (!uploads_held && now - runtime.last_progress > hang) {
      any_ended = true;
      EndRunningJob(job, JobState::kFailed,
                    absl::StrCat("hung: no iteration stored for ",
                                 absl::FormatDuration(absl::Trunc(now - runtime.last_progress,
                                                                  absl::Seconds(1))),
                                 " (hang timeout ", absl::FormatDuration(hang),
                                 "); its ranks were stopped"));
    }
  });
  if (any_ended) Schedule();
}

JobManager::JobWalks JobManager::JobWalkCounts() {
  absl::MutexLock lock(&mu_);
  return JobWalks{jobs_.full_walks(), jobs_.indexed_visits()};
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
