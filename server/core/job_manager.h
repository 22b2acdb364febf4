// The controller's orchestration: the lifecycle of a job across the fleet (fleet.h:
// agents, streams, device holders), the job table (job_table.h) and the store. It
// accepts jobs, places queued ones with the scheduler (scheduler.h, pure), dispatches
// assignments, folds the agents' rank reports and samples into job state, and
// persists every change through the store. Read-side shapes are in views.h (the
// queries that read the store are ReadService's, read_service.h), the agent protocol's
// messages in agent_messages.h. One class over five files, one concern each:
// job_manager.cc (the job lifecycle API and shared state changes),
// job_manager_placement.cc, job_manager_agents.cc, job_manager_allocation.cc and
// job_recovery.cc. Time comes from JobManagerOptions::clock (common/clock.h), never from
// the process's clocks directly.
//
// Thread-safety: every public method is thread-safe, under one mutex that guards the
// fleet, the job table and the live runtime together. One mutex, deliberately: a
// transition (placement, node loss, a rank report) changes all three at once, and
// the work under it is bookkeeping (capacities are counted, not enumerated), so
// finer locks would buy ordering hazards, not throughput. Under that mutex the
// manager only enqueues store writes, never waits on them, so store completions may
// call back into the manager. Callbacks it makes (AgentChannel, watchers, JobEvents) run
// under the mutex and must not block or call back into the manager.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "server/core/agent_messages.h"
#include "server/core/fleet.h"
#include "server/core/job.h"
#include "server/core/job_events.h"
#include "server/core/job_table.h"
#include "server/core/sample_ingestion.h"
#include "server/core/views.h"
#include "server/metrics/metrics_exporter.h"
#include "server/results/results.h"
#include "server/store/store.h"

namespace bench {

struct JobManagerOptions {
  // Where the manager reads the time (not owned, never null; outlives the manager): its
  // timestamps, placement times, progress, leases and graces. Tests give a FakeClock.
  const Clock* clock = Clock::Real();
  // An agent unheard-of for this long is lost: its running jobs end with "node lost".
  absl::Duration agent_lease = absl::Seconds(30);
  absl::Duration heartbeat_interval = absl::Seconds(5);
  // How many times a job whose node was lost (lease expired, or its ranks vanished
  // when the agent restarted) goes back to the queue before it fails instead.
  int max_requeues = 1;
  // After a restart, how long RUNNING jobs wait for their agents to reconnect and say
  // they still run them before their nodes count as lost.
  absl::Duration reconcile_grace = absl::Seconds(30);
  // Limits of jobs whose spec sets none.
  absl::Duration default_wall_time = absl::Hours(24);
  absl::Duration default_hang_timeout = absl::Minutes(10);
  // Nodes come from an external allocator (benchd --slurm-partition; it calls
  // PendingAllocationWork and UpdateAllocation): each job runs only on agents labelled
  // bench_job=<its id>, which its allocation starts; submits are not checked against the
  // standing fleet; a job that loses a node is not requeued, it ends with its allocation.
  bool external_allocation = false;
  // With external_allocation: how long a job whose agent left waits for the allocator to
  // say why (the allocation ended) before it fails with the agent's reason alone.
  absl::Duration allocation_grace = absl::Seconds(10);
  // How many of the most recently ended jobs keep their per-rank detail (summaries,
  // telemetry, rank devices, versions) in memory. Older ended jobs keep only what the walks
  // over every job read (server/results/released_ranks.h) and their views read the rest
  // from the store: benchd's memory follows the running jobs, not the history.
  int ended_jobs_with_rank_detail = 1000;
};

// The agent label that ties agents to the one job whose allocation started them
// (bench-agent --label bench_job=<job id>).
inline constexpr char kAllocationLabel[] = "bench_job";

// What an external allocator has to do (JobManager::PendingAllocationWork).
struct AllocationRequest {
  std::string job_id;
  std::string job_name;  // the allocator's name for it (filled by the allocator)
  JobSpec spec;
  absl::Duration wall_time;  // the job's wall-time limit
};
struct AllocationWork {
  std::vector<AllocationRequest> to_allocate;  // queued and not allocated yet
  // Live allocations: of jobs still waiting or running (to poll) and of ended jobs (to
  // release, e.g. scancel), by job id.
  std::map<std::string, Allocation> to_poll;
  std::map<std::string, Allocation> to_release;
};

class JobManager {
 public:
  using SteadyTime = Clock::SteadyTime;

  // `events` (not owned; may be null; outlives the manager) is told what happens to jobs
  // (job_events.h; benchd gives its LiveMetrics, the figures of /metrics).
  JobManager(Store* store, JobManagerOptions options, JobEvents* events = nullptr);
  // Waits for telemetry joins and for the store completions of submits and baselines
  // in flight (the store must still be running them).
  ~JobManager();

  // Loads jobs from the store. Jobs that were RUNNING when the controller stopped stay
  // RUNNING: their agents hold their devices and are expected to reconnect within
  // reconcile_grace and list them in heartbeats; an agent that does not is lost.
  absl::Status Recover();
  // Starts the reconcile grace of the agents Recover expects back now (benchd calls it
  // once it serves, so that a slow start does not eat into the grace).
  void BeginReconcileGrace();

  // Validates (INVALID_ARGUMENT naming the field), checks the registered fleet can ever
  // hold the job (FAILED_PRECONDITION), stores it durably, then schedules. A request id
  // seen before returns that job; with a different spec, or from another submitter, it
  // is FAILED_PRECONDITION; if the store fails, UNAVAILABLE and the job is forgotten.
  // `submitted_by` is the submitting principal's name ("" when security is off), stored
  // with the job (Job::submitted_by).
  // `done` gets the answer: once the job is stored (on the store's writer thread, after
  // the commit), or at once on the caller's thread when no new job is stored. It runs
  // outside the manager's lock and must not block.
  using SubmitDone = std::function<void(absl::StatusOr<SubmitResult>)>;
  void Submit(JobSpec spec, std::string submitted_by, SubmitDone done);
  void Submit(JobSpec spec, SubmitDone done) { Submit(std::move(spec), "", std::move(done)); }
  // Views carry each job's whole per-rank detail, read back from the store for an ended
  // job whose detail was released (JobManagerOptions::ended_jobs_with_rank_detail).
  absl::StatusOr<JobView> Get(const std::string& job_id);
  std::vector<JobView> List();
  // The web API's job list (server/http/web_api.h): newest first, the views of at most
  // `limit` jobs that `keep` accepts (a pure test, run under the lock) among those
  // submitted before the job of seq `before_seq` (0: from the newest). `more`: another
  // accepted job follows the page. Only the page's jobs are copied.
  struct JobPage {
    std::vector<JobView> views;
    bool more = false;
  };
  JobPage ListNewestFirst(const std::function<bool(const Job&)>& keep, int64_t before_seq,
                          size_t limit);
  // The QUEUED jobs in the order the scheduler considers them, each with why it waits.
  std::vector<JobView> Queue();
  // QUEUED or RUNNING → CANCELLED (ranks are told to stop); a finished job is
  // FAILED_PRECONDITION.
  absl::StatusOr<JobView> Cancel(const std::string& job_id);
  // For the read side (read_service.h): copies, taken under the lock, of the jobs `keep`
  // accepts (in submission order; `keep` runs under the lock, so it must be a pure
  // test) and of every baseline. A released job is copied without its rank detail
  // (FillRankDetail reads it back).
  struct ReadSnapshot {
    std::vector<Job> jobs;
    Baselines baselines;
  };
  ReadSnapshot Snapshot(const std::function<bool(const Job&)>& keep);
  // For reads that need little of each job (the results grid's ResultRow): calls
  // `visit` on every job in submission order under the lock (it must only copy what it
  // needs out: no blocking, no calls into the manager), then returns a copy of every
  // baseline.
  Baselines VisitJobs(const std::function<void(const Job&)>& visit);
  // When `job` (a copy VisitJobs' visitor took) had its rank detail released, reads it back
  // from the store (RestoreRankDetail); call it holding no lock of the manager.
  absl::Status FillRankDetail(Job& job);

  // Makes the job's throughput the baseline of its configuration (ConfigurationOf),
  // replacing an earlier one, once stored. Tolerances as NormalizeTolerances (0 → 5;
  // INVALID_ARGUMENT otherwise); NOT_FOUND for an unknown job; FAILED_PRECONDITION
  // unless it SUCCEEDED with a throughput; UNAVAILABLE if the store fails. `done` gets
  // the answer as Submit's does.
  using BaselineDone = std::function<void(absl::StatusOr<Baseline>)>;
  void SetBaseline(const std::string& job_id, double lower_tolerance_pct,
                   double upper_tolerance_pct, BaselineDone done);

  // Calls `on_update` now and on every change of the job until it ends (the last call
  // has final=true), or `on_close` if benchd shuts down first. Returns a handle for
  // Unwatch; NOT_FOUND for an unknown job, UNAVAILABLE once shutting down.
  using WatchCallback = std::function<void(const JobView& view, bool final)>;
  using CloseCallback = std::function<void(const absl::Status& status)>;
  absl::StatusOr<int64_t> Watch(const std::string& job_id, WatchCallback on_update,
                                CloseCallback on_close = nullptr);
  void Unwatch(int64_t handle);

  // Agent protocol.
  absl::StatusOr<std::string> RegisterAgent(AgentInventory inventory);
  // `running`: the (job, attempt)s the agent still runs ranks of. Those that are not
  // the job's current RUNNING attempt with ranks on that agent (ended, requeued,
  // unknown) are cancelled on it. Devices held for attempts it no longer lists are
  // freed; a RUNNING job whose acknowledged ranks are missing from two heartbeats in a
  // row lost its node (requeued or failed, as CheckAgents).
  absl::Status Heartbeat(const std::string& agent, const std::vector<RunningOnAgent>& running);
  // The agent's assignment stream opened: undelivered assignments are re-sent.
  absl::Status AttachChannel(const std::string& agent, AgentChannel* channel);
  void DetachChannel(const std::string& agent, AgentChannel* channel);
  // A rank report. `done` runs once what the report changed (a summary, a rank's end, the
  // job's new state) is committed to the store, so that an acknowledged report survives
  // a kill -9 of benchd: the agent forgets an attempt once its final report was answered,
  // and a recovered job must not wait for ranks that ended before the restart. It runs
  // at once (on the caller's thread) when nothing was written or the report is refused,
  // else on the store's writer thread, with the commit's status (UNAVAILABLE: retry).
  using ReportDone = std::function<void(absl::Status)>;
  void ReportStatus(const std::string& agent, const std::string& job_id, int attempt,
                    int master_port, const std::vector<RankReport>& ranks, ReportDone done);
  // The same, waiting for `done`.
  absl::Status ReportStatus(const std::string& agent, const std::string& job_id, int attempt,
                            int master_port, const std::vector<RankReport>& ranks);
  // The agent stops (its ranks were stopped and reported): it leaves the fleet now, and
  // the RUNNING attempts it still held lose their node (requeued or failed, as
  // CheckAgents) with `reason` in their reason. NOT_FOUND unless registered.
  // `instance_id`: the leaving agent process's (AgentInventory::instance_id); another
  // process registered since under that name is left alone (FAILED_PRECONDITION).
  absl::Status Deregister(const std::string& agent, const std::string& reason,
                          const std::string& instance_id = "");
  // External allocation (options.external_allocation).
  AllocationWork PendingAllocationWork();
  // What the allocator made or saw of the job's allocation (recorded, shown in the job's
  // status). An allocation that ended while the job waits or runs fails it, with the
  // allocation's state and reason. NOT_FOUND for an unknown job.
  absl::Status UpdateAllocation(const std::string& job_id, const Allocation& allocation);
  // The allocator was refused an allocation for the waiting job (e.g. sbatch: no such
  // partition): it fails with `why`. NOT_FOUND for an unknown job.
  absl::Status AllocationRefused(const std::string& job_id, const std::string& why);

  // Stores the samples (iterations and GPU readings) that belong to a rank of the
  // job's current attempt placed on `agent` (SampleIngestion decides, sample_ingestion.h;
  // others are dropped, counted and logged) and calls `done` after the commit, from the
  // store's writer thread.
  using UploadDone = std::function<void(absl::StatusOr<AppendResult>)>;
  void UploadSamples(const std::string& agent, std::vector<IterationSample> samples,
                     std::vector<GpuSample> gpu_samples, UploadDone done);
  void UploadSamples(const std::string& agent, std::vector<IterationSample> samples,
                     UploadDone done) {
    UploadSamples(agent, std::move(samples), {}, std::move(done));
  }
  // OK, unless benchd restarted and still waits for agents of its RUNNING jobs to
  // register again (within reconcile_grace): then UNAVAILABLE saying how many, and the
  // agent keeps its samples and retries. Uploads, replayed spools first, are most of the
  // agents' traffic; taken during that wait they hold up the registrations that keep
  // those jobs alive. Lock-free: the adapter asks before it parses an upload.
  absl::Status UploadsAdmitted() const;
  // Jobs by state, agents and their devices, for /metrics.
  FleetCounts Fleet();
  std::vector<AgentView> ListAgents();
  // Whether an agent of that name is registered and not lost (the bootstrap's "held by a
  // live agent", server/auth/agent_bootstrap.h).
  bool AgentLive(const std::string& name);

  // Marks agents silent for longer than the lease as lost: their samples of the jobs
  // they ran are fenced off from then on, and those jobs are requeued (up to
  // max_requeues times) or fail with "node lost".
  void CheckAgents(SteadyTime now);
  // Fails RUNNING jobs past their wall-time limit, or with no iteration stored for
  // their hang timeout (since placement, or since uploads were taken again after a
  // restart; not while UploadsAdmitted refuses them); their ranks are told to stop.
  void CheckLimits(absl::Time now);
  // Closes every agent stream and watcher (benchd is stopping).
  void Shutdown();

  // What the manager's walks over its jobs cost so far (job_table.h's counters; tests
  // and benches): the timers and the agents' RPCs visit only the live jobs (QUEUED,
  // RUNNING) and the live allocations, never every stored job.
  struct JobWalks {
    int64_t full_walks = 0;      // walks of every job (the read side's: lists, snapshots)
    int64_t indexed_visits = 0;  // jobs visited through the live indexes
  };
  JobWalks JobWalkCounts();

  absl::Duration heartbeat_interval() const { return options_.heartbeat_interval; }
  // The store's database id (RegisterResponse.controller_id).
  const std::string& controller_id() const { return store_->database_id(); }

 private:
  // Live state of a job's current attempt (not persisted; samples are).
  struct JobRuntime {
    bool persisted = false;  // the insert committed; only then is it scheduled
    std::map<int, int> iterations_by_rank;
    std::map<int, double> fastest_step_by_rank;  // accepted measured samples' fastest step_time_s
    int64_t samples_stored = 0;
    int64_t nonfinite_losses = 0;  // of the stored samples
    std::map<std::string, std::set<int>> running_ranks;  // agent → ranks not ended
    std::set<std::string> undelivered;  // agents whose assignment is not yet acknowledged
    std::set<int> succeeded_ranks;
    int master_port = 0;
    std::map<std::string, int> missing_from_heartbeat;  // agent → heartbeats in a row
    std::set<std::string> telemetry_notes;  // from the agents' rank reports
    absl::Time started;        // placed (or recovered: its last RUNNING transition)
    absl::Time last_progress;  // placed, recovered, or an iteration of it stored
    bool all_dispatched = false;  // recovered: every assignment counts as sent
    // External allocation: an agent of the attempt left (why, when); the job ends when
    // its allocation is seen ended, or after allocation_grace.
    std::string node_left;
    absl::Time node_left_at;
    // Its ended attempt's analyses (telemetry join, diagnosis) not answered yet: its rank
    // detail is not released before they are. The join answers once its figures are
    // stored (they are read back from the store after the release).
    int analyses_in_flight = 0;
    // Set when its rank detail was released: its lowest count of stored iterations then
    // (iterations_by_rank, fastest_step_by_rank, succeeded_ranks and telemetry_notes are
    // freed with the detail; running_ranks stays: ranks may still end after their job).
    std::optional<int> iterations_done;
  };
  struct Watcher {
    std::string job_id;
    WatchCallback callback;
    CloseCallback on_close;
  };

  Job* FindJob(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Submit's answers that store nothing: shutting down, a request id seen before, a job
  // the registered fleet can never hold. Unset: store the job.
  std::optional<absl::StatusOr<SubmitResult>> AnswerWithoutStoring(
      const JobSpec& spec, const std::string& submitted_by) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The insert of a submitted job finished: schedule it, or forget it if it failed.
  void OnJobInserted(const std::string& job_id, const absl::Status& status, const SubmitDone& done)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The baseline the job would be, or why it cannot be one.
  absl::StatusOr<Baseline> BaselineOf(const std::string& job_id, double lower_tolerance_pct,
                                      double upper_tolerance_pct)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnBaselineStored(const Baseline& baseline, const absl::Status& status,
                        const BaselineDone& done) ABSL_LOCKS_EXCLUDED(mu_);
  bool NothingInFlight() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return joins_in_flight_ == 0 && completions_in_flight_ == 0;
  }
  JobView ViewOf(const Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The lowest count of stored iterations over the job's ranks (at most its iterations).
  static int LowestIterationCount(const Job& job, const JobRuntime& runtime);
  // Views of released jobs with their rank detail read back (FillRankDetail); a read that
  // fails is logged and leaves that view without it.
  void FillRankDetail(std::vector<JobView>& views) ABSL_LOCKS_EXCLUDED(mu_);
  // Releases the rank detail of the ended jobs beyond options_.ended_jobs_with_rank_detail,
  // oldest ended first, each once its analyses are done.
  void ReleaseEndedRankDetail() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Transition(Job& job, JobState state, std::string reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the job whole (Store::UpdateJobAsync); `then`, if given, runs after PersistDone's
  // bookkeeping, as a store callback does (on the writer thread, or at once when the store
  // is shutting down: see StoreCompletion).
  void Persist(const Job& job, Store::Done then = nullptr) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Persists a rank report's changes: the job's row and `ranks`' rows only
  // (Store::UpdateRanksAsync), or the whole job (Persist) after a write of it failed.
  void PersistRanks(const Job& job, const std::set<int>& ranks) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The store's callback for a write of job `job_id`: logs and marks a failed write, and
  // completes the PersistWait ReportStatus left in persist_wait_, if any.
  Store::Done PersistDone(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One UpdateJobAsync that ReportStatus waits on (the last one queued while it ran: the
  // writer commits in order, so its commit is every earlier one's too).
  struct PersistWait {
    // The commit (or failure) of the UpdateJobAsync: runs `done` if one waits.
    void Committed(absl::Status status);
    // Runs `done` with the commit's status now if it came, else when it comes.
    void WhenCommitted(ReportDone done);

    absl::Mutex mu;
    bool committed ABSL_GUARDED_BY(mu) = false;
    absl::Status status ABSL_GUARDED_BY(mu);
    ReportDone done ABSL_GUARDED_BY(mu);
  };
  absl::Status ReportStatusLocked(const std::string& agent_name, const std::string& job_id,
                                  int attempt, int master_port,
                                  const std::vector<RankReport>& ranks)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notify(const Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Schedule() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Recover: a RUNNING job keeps its devices on its agents (placeholders until they
  // register) and waits for them to reconnect.
  void AdoptRecoveredRunningJob(Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The last_seen that makes a placeholder agent lost once reconcile_grace has passed.
  SteadyTime ReconcileDeadlineAsLastSeen() const;
  void StartJob(Job& job, const PlacementPlan& plan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Duration WallTimeLimit(const Job& job) const;
  absl::Duration HangTimeout(const Job& job) const;
  // The attempt lost a node (`agent`): the agent's samples of it are fenced off, its
  // other ranks are told to stop, and the job goes back to the queue while it has
  // requeues left, else it fails.
  void NodeLost(Job& job, const std::string& agent, std::string reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The fleet took `agent` out (lease expired or deregistered): each RUNNING attempt
  // that held its devices loses its node with `why`.
  void AgentLost(const bench::Fleet::LostAgent& agent, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Why a queued job waits, with external allocation.
  static std::string AllocationWaitReason(const Job& job);
  // Ends a waiting or running job whose allocation ended.
  void AllocationEnded(Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells every agent still running ranks of the current attempt to stop them.
  void StopRanks(Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Dispatch(Job& job, const Placement& placement) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  AssignmentMessage AssignmentFor(const Job& job, const Placement& placement)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends a RUNNING job: every agent still running ranks of it is told to stop.
  void EndRunningJob(Job& job, JobState state, std::string reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Logs the attempt's non-finite losses and skipped steps, where there are any.
  void LogLossHealth(const Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees the agent's devices held by the job once none of its ranks runs there.
  void MaybeReleaseDevices(Job& job, const std::string& agent)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees the agent's devices held by the job's current attempt.
  void ReleaseAllDevices(Job& job, const std::string& agent)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After the attempt ended (job_manager_analyses.cc): JoinTelemetry and, when
  // ShouldDiagnose (SUCCEEDED or FAILED), its diagnosis (server/results/job_diagnosis.h),
  // both from one read of its rows on the store's analysis thread.
  void AnalyzeEndedAttempt(const Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Joins the ended attempt's GPU samples to its iterations (on the store's analysis
  // thread) and records the per-GPU figures on the job.
  void JoinTelemetry(const Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records the joined figures on the job and stores it; the join is answered once stored.
  void OnTelemetryJoined(const std::string& job_id, int attempt,
                         absl::StatusOr<JoinedTelemetry> joined) ABSL_LOCKS_EXCLUDED(mu_);
  // The job's gpu_telemetry and telemetry_note from the join's answer.
  void RecordJoinedTelemetry(Job& job, absl::StatusOr<JoinedTelemetry> joined)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The write of the joined figures answered: the join counts as answered, and the job's
  // detail may be released (if the write failed, it is kept in memory instead).
  void OnJoinedTelemetryStored(const std::string& job_id, const absl::Status& status)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Records the attempt's diagnosis on the job (stored by the store already).
  void OnJobDiagnosed(const std::string& job_id, int attempt,
                      absl::StatusOr<JobDiagnosis> diagnosis);
  // One of the job's analyses answered (its runtime's analyses_in_flight).
  void AnalysisAnswered(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string AgentOfRank(const Job& job, int rank) const;
  // Copies the fleet's count of awaited agents to agents_awaited_ (after a change).
  void PublishAgentsAwaited() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Store* const store_;
  const JobManagerOptions options_;
  const Clock* const clock_;  // options_.clock
  JobEvents* const events_;

  absl::Mutex mu_;
  JobTable jobs_ ABSL_GUARDED_BY(mu_);  // every job, in submission order
  // While ReportStatus runs: where Persist leaves the wait for its UpdateJobAsync.
  std::shared_ptr<PersistWait>* persist_wait_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::map<std::string, JobRuntime> runtime_ ABSL_GUARDED_BY(mu_);
  // Agents, streams, leases, device holders (bench::: JobManager::Fleet() hides the name).
  bench::Fleet fleet_ ABSL_GUARDED_BY(mu_);
  // QUEUED job id → its place, from the latest scheduling pass.
  std::map<std::string, int> queue_positions_ ABSL_GUARDED_BY(mu_);
  // What the latest scheduling pass planned from: the fleet's capacities, the jobs and
  // their states (both versions), and how many submits had committed (a QUEUED job is
  // scheduled once its insert committed). While these are equal a pass would start
  // nothing and say the same (time passing only narrows backfill: see Schedule), so
  // Schedule, called on every heartbeat and rank report, skips it.
  struct PlanInputs {
    uint64_t fleet = 0;
    uint64_t jobs = 0;
    int64_t committed_submits = 0;
    bool operator==(const PlanInputs& other) const {
      return fleet == other.fleet && jobs == other.jobs &&
             committed_submits == other.committed_submits;
    }
  };
  std::optional<PlanInputs> planned_from_ ABSL_GUARDED_BY(mu_);
  int64_t committed_submits_ ABSL_GUARDED_BY(mu_) = 0;
  // Which uploaded samples may be stored; the (agent, job, attempt)s whose samples and
  // reports are refused (the agent's lease expired, or it left, while it ran them).
  SampleIngestion ingestion_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, Watcher> watchers_ ABSL_GUARDED_BY(mu_);
  int64_t next_watch_handle_ ABSL_GUARDED_BY(mu_) = 1;
  int joins_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  // Ended jobs whose rank detail is still in memory, in the order they ended.
  std::deque<std::string> ended_with_detail_ ABSL_GUARDED_BY(mu_);
  // Submits and baselines whose store write has not answered yet.
  int completions_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  Baselines baselines_ ABSL_GUARDED_BY(mu_);  // the destructor waits for them
  // Jobs a store write of which failed: their next persist rewrites them whole, as a
  // per-rank write cannot repair what an earlier one left out. Shared with the store's
  // callbacks, which may run after the manager is gone.
  struct FailedWrites {
    absl::Mutex mu;
    std::set<std::string> job_ids ABSL_GUARDED_BY(mu);
    // Jobs whose failed write was logged and not stored since: one line per job until
    // it is stored again (a full disk fails every write of every running job).
    std::set<std::string> logged ABSL_GUARDED_BY(mu);
  };
  const std::shared_ptr<FailedWrites> failed_writes_ = std::make_shared<FailedWrites>();
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  // fleet_.placeholders(), readable without the lock (UploadsAdmitted).
  std::atomic<int> agents_awaited_{0};
};

}  // namespace bench
