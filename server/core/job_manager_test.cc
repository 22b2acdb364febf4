#include "server/core/job_manager.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <future>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "common/status_macros.h"
#include "server/core/job_manager_test_support.h"
#include "server/core/read_service.h"
#include "server/results/environment.h"

namespace bench {
namespace {

using ::testing::HasSubstr;

class JobManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_manager_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    Reopen();
  }
  void TearDown() override {
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    manager_.reset();
    store_.reset();
    store_ = std::move(Store::Open(dir_ + "/bench.db")).value();
    JobManagerOptions options;
    options.agent_lease = absl::Seconds(30);
    options.clock = &clock_;
    manager_ = std::make_unique<JobManager>(store_.get(), options);
    reads_ = std::make_unique<ReadService>(store_.get(), manager_.get());
    ASSERT_TRUE(manager_->Recover().ok());
  }
  void AddCpuAgent(const std::string& name, int slots, FakeChannel* channel) {
    RegisterCpuAgent(*manager_, name, slots, channel);
  }
  // Uploads `samples` (and `gpu_samples`) as `agent`; waits for the manager's answer.
  absl::StatusOr<AppendResult> Upload(const std::string& agent,
                                      std::vector<IterationSample> samples,
                                      std::vector<GpuSample> gpu_samples = {}) {
    return UploadAndWait(*manager_, agent, std::move(samples), std::move(gpu_samples));
  }
  // manager_->ReportStatus, after uploading for each report with measured images one
  // measured sample of its rank whose step fits the summary (an agent sends a rank's
  // summary after its samples, and benchd refuses a summary nothing stored backs).
  absl::Status ReportStatus(const std::string& agent, const std::string& job_id, int attempt,
                            int master_port, std::vector<RankReport> reports) {
    std::vector<IterationSample> backing;
    for (const RankReport& report : reports) {
      if (!report.summary || report.summary->measured_images <= 0) continue;
      const RankSummary& summary = *report.summary;
      backing.push_back({job_id, attempt, report.rank, /*iteration=*/2,
                         summary.window_s / std::max(summary.measured_iterations, 1),
                         /*images=*/1, /*loss=*/1.0, /*data_time_s=*/0, /*elapsed_s=*/1.0,
                         /*warmup=*/false});
    }
    if (!backing.empty()) RETURN_IF_ERROR(Upload(agent, std::move(backing)).status());
    return manager_->ReportStatus(agent, job_id, attempt, master_port, std::move(reports));
  }
  // Submits `spec`; waits for the manager's answer.
  absl::StatusOr<SubmitResult> Submit(JobSpec spec) {
    return SubmitAndWait(*manager_, std::move(spec));
  }
  // Submits `spec` as `submitted_by`; waits for the manager's answer.
  absl::StatusOr<SubmitResult> SubmitAs(const std::string& submitted_by, JobSpec spec) {
    return SubmitAndWait(*manager_, std::move(spec), submitted_by);
  }
  // Sets the baseline; waits for the manager's answer.
  absl::StatusOr<Baseline> SetBaseline(const std::string& job_id, double lower_tolerance_pct,
                                       double upper_tolerance_pct) {
    std::promise<absl::StatusOr<Baseline>> done;
    manager_->SetBaseline(job_id, lower_tolerance_pct, upper_tolerance_pct,
                          [&](absl::StatusOr<Baseline> r) { done.set_value(std::move(r)); });
    return done.get_future().get();
  }
  static JobSpec Spec(int devices) { return SmallJobSpec(devices); }
  static RankReport Succeeded(int rank, double window) {
    RankReport report;
    report.rank = rank;
    report.outcome = RankOutcome::kSucceeded;
    report.summary = RankSummary{rank, 4, 8, window, 0.1};
    report.parameters = 25557032;
    return report;
  }

  std::string dir_;
  // Stands still unless a test moves it: the managers' time (leases, graces, limits).
  FakeClock clock_;
  LiveMetrics metrics_;  // outlives the managers that point at it
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
  std::unique_ptr<ReadService> reads_;  // over manager_
};

TEST_F(JobManagerTest, RefusesAJobLargerThanTheRegisteredFleet) {
  FakeChannel a;
  AddCpuAgent("a", 2, &a);
  auto result = Submit(Spec(3));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("devices (--gpus)"));
  EXPECT_TRUE(manager_->List().empty());
}

TEST_F(JobManagerTest, InvalidSpecChangesNothing) {
  FakeChannel a;
  AddCpuAgent("a", 2, &a);
  JobSpec spec = Spec(1);
  spec.batch_size = 0;
  auto result = Submit(spec);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(manager_->List().empty());
  EXPECT_TRUE(store_->LoadJobs()->empty());
}

// Submit answers from the store's completion, not by blocking its caller: when `done`
// runs, the job's row is already committed.
TEST_F(JobManagerTest, SubmitAnswersOnceTheJobIsStored) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  std::promise<absl::StatusOr<SubmitResult>> answered;
  std::vector<std::string> stored_when_answered;
  manager_->Submit(Spec(1), [&](absl::StatusOr<SubmitResult> result) {
    absl::StatusOr<std::vector<Job>> stored = store_->LoadJobs();
    if (stored.ok()) {
      for (const Job& job : *stored) stored_when_answered.push_back(job.id);
    }
    answered.set_value(std::move(result));
  });
  absl::StatusOr<SubmitResult> result = answered.get_future().get();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->existing);
  EXPECT_THAT(stored_when_answered, ::testing::ElementsAre(result->job_id));
  EXPECT_EQ(manager_->Get(result->job_id)->job.state, JobState::kRunning);
  ASSERT_EQ(a.assignments.size(), 1u);
}

TEST_F(JobManagerTest, ASubmitTheStoreRefusesIsUnavailableAndForgotten) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  // The id the manager gives its next job is already taken in the store.
  Job squatter;
  squatter.seq = 1;
  squatter.id = "job-000001";
  squatter.spec = Spec(1);
  squatter.created = absl::Now();
  squatter.history.push_back({JobState::kQueued, "submitted", squatter.created});
  ASSERT_TRUE(store_->InsertJob(squatter).ok());
  auto refused = Submit(Spec(1));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("could not store the job: "));
  EXPECT_TRUE(manager_->List().empty());
  EXPECT_TRUE(a.assignments.empty());
}

TEST_F(JobManagerTest, SpanningJobRendezvousThenSucceeds) {
  FakeChannel a, b;
  AddCpuAgent("a", 2, &a);
  AddCpuAgent("b", 2, &b);
  auto submitted = Submit(Spec(4));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const std::string id = submitted->job_id;
  EXPECT_EQ(manager_->Get(id)->job.state, JobState::kRunning);

  // Rank 0's agent is told first, with port 0 (it picks the port); b waits.
  ASSERT_EQ(a.assignments.size(), 1u);
  EXPECT_EQ(a.assignments[0].master_port, 0);
  EXPECT_EQ(a.assignments[0].world_size, 4);
  EXPECT_TRUE(b.assignments.empty());
  ASSERT_TRUE(ReportStatus("a", id, 1, 29555, {}).ok());
  ASSERT_EQ(b.assignments.size(), 1u);
  EXPECT_EQ(b.assignments[0].master_port, 29555);
  EXPECT_EQ(b.assignments[0].master_addr, "127.0.0.1");
  EXPECT_EQ(b.assignments[0].ranks, (std::vector<int>{2, 3}));

  // A second job cannot fit while the first holds every slot.
  auto second = Submit(Spec(1));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(manager_->Get(second->job_id)->job.state, JobState::kQueued);

  ASSERT_TRUE(ReportStatus("a", id, 1, 0, {Succeeded(0, 2.0), Succeeded(1, 2.0)}).ok());
  EXPECT_EQ(manager_->Get(id)->job.state, JobState::kRunning);
  // a's slots are free again: the queued job starts there.
  EXPECT_EQ(manager_->Get(second->job_id)->job.state, JobState::kRunning);
  ASSERT_TRUE(ReportStatus("b", id, 1, 0, {Succeeded(2, 2.0), Succeeded(3, 4.0)}).ok());
  JobView view = *manager_->Get(id);
  EXPECT_EQ(view.job.state, JobState::kSucceeded);
  ASSERT_TRUE(view.images_per_second.has_value());
  EXPECT_DOUBLE_EQ(*view.images_per_second, 32.0 / 4.0);
  EXPECT_EQ(view.job.parameters, 25557032);
}

TEST_F(JobManagerTest, AFailedRankFailsTheJobWithItsStderrAndStopsTheOthers) {
  FakeChannel a, b;
  AddCpuAgent("a", 1, &a);
  AddCpuAgent("b", 1, &b);
  auto submitted = Submit(Spec(2));
  ASSERT_TRUE(submitted.ok());
  const std::string id = submitted->job_id;
  ASSERT_TRUE(ReportStatus("a", id, 1, 29500, {}).ok());
  RankReport failed;
  failed.rank = 1;
  failed.outcome = RankOutcome::kFailed;
  failed.exit_code = 3;
  failed.message = "exit code 3";
  failed.stderr_tail = "CUDA out of memory";
  ASSERT_TRUE(ReportStatus("b", id, 1, 0, {failed}).ok());
  JobView view = *manager_->Get(id);
  EXPECT_EQ(view.job.state, JobState::kFailed);
  EXPECT_THAT(view.job.reason, HasSubstr("rank 1 on b"));
  EXPECT_THAT(view.job.reason, HasSubstr("CUDA out of memory"));
  ASSERT_EQ(a.cancels.size(), 1u);
  EXPECT_EQ(a.cancels[0].job_id, id);
  EXPECT_TRUE(b.cancels.empty());  // b has no rank of the job left
}

TEST_F(JobManagerTest, RequestIdMakesSubmitIdempotent) {
  FakeChannel a;
  AddCpuAgent("a", 2, &a);
  JobSpec spec = Spec(1);
  spec.request_id = "r1";
  auto first = Submit(spec);
  auto again = Submit(spec);
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(first->job_id, again->job_id);
  EXPECT_TRUE(again->existing);
  spec.batch_size = 4;
  auto different = Submit(spec);
  EXPECT_EQ(different.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(manager_->List().size(), 1u);
}

// A job records who submitted it, and keeps it across a restart; a request id names one
// submitter's job: another submitter reusing it gets FAILED_PRECONDITION, not that job.
TEST_F(JobManagerTest, TheSubmitterIsRecordedAndSurvivesARestart) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  JobSpec spec = Spec(1);
  spec.request_id = "r1";
  auto alices = SubmitAs("alice", spec);
  auto anonymous = Submit(Spec(1));
  ASSERT_TRUE(alices.ok() && anonymous.ok());
  EXPECT_EQ(manager_->Get(alices->job_id)->job.submitted_by, "alice");
  auto again = SubmitAs("alice", spec);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->existing);
  auto bobs = SubmitAs("bob", spec);
  EXPECT_EQ(bobs.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(bobs.status().message(), HasSubstr("another submitter"));

  Reopen();
  auto view = manager_->Get(alices->job_id);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->job.submitted_by, "alice");
  EXPECT_EQ(manager_->Get(anonymous->job_id)->job.submitted_by, "");
  EXPECT_EQ(manager_->List().size(), 2u);
}

TEST_F(JobManagerTest, AnUnknownJobIdIsQuotedAsAShortPrefix) {
  const std::string huge(1 << 20, 'j');
  for (absl::Status status : {manager_->Get(huge).status(), manager_->Cancel(huge).status()}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
    EXPECT_LT(status.message().size(), 200u);
    EXPECT_THAT(std::string(status.message()), HasSubstr("(1048576 bytes)"));
  }
  EXPECT_EQ(manager_->Get("job-000042").status().message(), "no job \"job-000042\"");
}

TEST_F(JobManagerTest, CancelQueuedAndRunningJobs) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  auto running = Submit(Spec(1));
  auto queued = Submit(Spec(1));
  ASSERT_TRUE(running.ok() && queued.ok());
  EXPECT_EQ(manager_->Cancel(queued->job_id)->job.state, JobState::kCancelled);
  EXPECT_EQ(manager_->Cancel(running->job_id)->job.state, JobState::kCancelled);
  ASSERT_EQ(a.cancels.size(), 1u);
  EXPECT_EQ(manager_->Cancel(running->job_id).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(JobManagerTest, AJobThatLostItsNodeIsRequeuedOnceThenFails) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok());
  manager_->CheckAgents(clock_.SteadyNow() + std::chrono::seconds(31));
  JobView view = *manager_->Get(submitted->job_id);
  EXPECT_EQ(view.job.state, JobState::kQueued);
  EXPECT_EQ(view.job.requeues, 1);
  EXPECT_THAT(view.job.history.back().reason, HasSubstr("node lost: agent a not heard from"));
  EXPECT_THAT(view.job.history.back().reason, HasSubstr("requeued (1 of 1)"));
  EXPECT_EQ(a.closed.code(), absl::StatusCode::kUnavailable);

  // The agent returns: attempt 2 runs there; attempt 1's samples are fenced off.
  FakeChannel a2;
  AddCpuAgent("a", 1, &a2);
  view = *manager_->Get(submitted->job_id);
  EXPECT_EQ(view.job.state, JobState::kRunning);
  EXPECT_EQ(view.job.attempt, 2);
  ASSERT_EQ(a2.assignments.size(), 1u);
  EXPECT_EQ(a2.assignments[0].attempt, 2);
  IterationSample stale{submitted->job_id, 1, 0, 1, 0.1, 2, 1.0, 0, 0.1, true};
  IterationSample fresh{submitted->job_id, 2, 0, 1, 0.1, 2, 1.0, 0, 0.1, true};
  absl::StatusOr<AppendResult> result = Upload("a", {stale, fresh});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->stored, 1);
  // The heartbeat still lists attempt 1: it is cancelled, attempt 2 is not.
  ASSERT_TRUE(manager_->Heartbeat("a", {{submitted->job_id, 1, {0}},
                                        {submitted->job_id, 2, {0}}}).ok());
  ASSERT_EQ(a2.cancels.size(), 1u);
  EXPECT_EQ(a2.cancels[0].attempt, 1);

  // Lost again: no requeue left.
  manager_->CheckAgents(clock_.SteadyNow() + std::chrono::seconds(31));
  view = *manager_->Get(submitted->job_id);
  EXPECT_EQ(view.job.state, JobState::kFailed);
  EXPECT_THAT(view.job.reason, HasSubstr("node lost"));
  EXPECT_THAT(view.job.reason, HasSubstr("not requeued again"));
}

TEST_F(JobManagerTest, AnAgentThatDeregistersLeavesAtOnceAndItsJobLosesTheNode) {
  FakeChannel a, b;
  AddCpuAgent("a", 1, &a);
  AddCpuAgent("b", 1, &b);
  auto submitted = Submit(Spec(2));  // rank 0 on a, rank 1 on b
  ASSERT_TRUE(submitted.ok());
  ASSERT_TRUE(ReportStatus("a", submitted->job_id, 1, 29500, {}).ok());
  // b stops (SIGTERM): its rank was stopped and reported CANCELLED, which freed its slot
  // but leaves the job unable to finish; then it deregisters, long before its lease.
  RankReport cancelled;
  cancelled.rank = 1;
  cancelled.outcome = RankOutcome::kCancelled;
  ASSERT_TRUE(ReportStatus("b", submitted->job_id, 1, 0, {cancelled}).ok());
  EXPECT_EQ(manager_->Get(submitted->job_id)->job.state, JobState::kRunning);
  ASSERT_TRUE(manager_->Deregister("b", "SIGTERM").ok());

  JobView view = *manager_->Get(submitted->job_id);
  EXPECT_EQ(view.job.state, JobState::kQueued);
  EXPECT_THAT(view.job.history.back().reason,
              HasSubstr("node left: agent b stopped (SIGTERM); requeued (1 of 1)"));
  EXPECT_EQ(b.closed.code(), absl::StatusCode::kUnavailable);
  ASSERT_FALSE(a.cancels.empty());  // rank 0 is told to stop
  std::vector<AgentView> agents = manager_->ListAgents();
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(agents[0].inventory.name, "a");
  // Gone, not lost: a second goodbye is NOT_FOUND, and it may come back.
  EXPECT_EQ(manager_->Deregister("b", "").code(), absl::StatusCode::kNotFound);
  FakeChannel b2;
  AddCpuAgent("b", 1, &b2);
  EXPECT_EQ(manager_->ListAgents().size(), 2u);
}

TEST_F(JobManagerTest, AGoodbyeFromAReplacedAgentProcessLeavesTheNewOneRegistered) {
  // The next Slurm allocation's agent on the node registered before the old one left.
  AgentInventory inventory;
  inventory.name = "node1";
  inventory.address = "127.0.0.1";
  inventory.cpu_slots = 1;
  inventory.instance_id = "new-instance";
  ASSERT_TRUE(manager_->RegisterAgent(inventory).ok());
  absl::Status stale = manager_->Deregister("node1", "SIGTERM", "old-instance");
  EXPECT_EQ(stale.code(), absl::StatusCode::kFailedPrecondition) << stale;
  EXPECT_THAT(stale.message(), HasSubstr("registered again since"));
  EXPECT_EQ(manager_->ListAgents().size(), 1u);
  EXPECT_TRUE(manager_->Deregister("node1", "SIGTERM", "new-instance").ok());
  EXPECT_TRUE(manager_->ListAgents().empty());
}

TEST_F(JobManagerTest, AnIdleAgentThatDeregistersChangesNoJob) {
  FakeChannel a, b;
  AddCpuAgent("a", 1, &a);
  AddCpuAgent("b", 1, &b);
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok());
  ASSERT_TRUE(ReportStatus("a", submitted->job_id, 1, 29500, {}).ok());
  ASSERT_TRUE(manager_->Deregister("b", "SIGTERM").ok());
  EXPECT_EQ(manager_->Get(submitted->job_id)->job.state, JobState::kRunning);
  EXPECT_TRUE(a.cancels.empty());
}

class JobManagerAllocationTest : public JobManagerTest {
 protected:
  void SetUp() override {
    JobManagerTest::SetUp();
    manager_.reset();
    JobManagerOptions options;
    options.external_allocation = true;
    options.allocation_grace = absl::Seconds(10);
    options.clock = &clock_;
    manager_ = std::make_unique<JobManager>(store_.get(), options);
    reads_ = std::make_unique<ReadService>(store_.get(), manager_.get());
    ASSERT_TRUE(manager_->Recover().ok());
  }
  // An agent with `slots` CPU slots started by the allocation of `job_id` ("" for none).
  void AddAllocatedAgent(const std::string& name, int slots, const std::string& job_id,
                         FakeChannel* channel) {
    AgentInventory inventory;
    inventory.name = name;
    inventory.address = "127.0.0.1";
    inventory.cpu_slots = slots;
    if (!job_id.empty()) inventory.labels[kAllocationLabel] = job_id;
    ASSERT_TRUE(manager_->RegisterAgent(inventory).ok());
    ASSERT_TRUE(manager_->AttachChannel(name, channel).ok());
  }
  static Allocation Slurm(std::string state, std::string reason, bool ended = false) {
    return {"slurm", "4711", std::move(state), std::move(reason), "node[1-2]", ended};
  }
};

TEST_F(JobManagerAllocationTest, AJobWaitsForItsAllocationAndRunsOnlyOnTheAgentsItStarted) {
  auto submitted = Submit(Spec(2));  // no agent at all: accepted, the allocator asks for nodes
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const std::string id = submitted->job_id;
  EXPECT_EQ(manager_->Get(id)->job.reason, "waiting for an allocation");
  AllocationWork work = manager_->PendingAllocationWork();
  ASSERT_EQ(work.to_allocate.size(), 1u);
  EXPECT_EQ(work.to_allocate[0].job_id, id);
  EXPECT_EQ(work.to_allocate[0].spec.devices, 2);

  ASSERT_TRUE(manager_->UpdateAllocation(id, Slurm("PENDING", "Resources")).ok());
  EXPECT_EQ(manager_->Get(id)->job.reason,
            "waiting for its allocation: Slurm job 4711 PENDING (Resources)");
  EXPECT_TRUE(manager_->PendingAllocationWork().to_allocate.empty());
  EXPECT_EQ(manager_->PendingAllocationWork().to_poll.count(id), 1u);

  FakeChannel standing, other_job, own;
  AddAllocatedAgent("standing", 2, "", &standing);         // not this job's allocation
  AddAllocatedAgent("other", 2, "job-999999", &other_job);  // another job's
  EXPECT_EQ(manager_->Get(id)->job.state, JobState::kQueued);
  ASSERT_TRUE(manager_->UpdateAllocation(id, Slurm("RUNNING", "")).ok());
  EXPECT_EQ(manager_->Get(id)->job.reason,
            "waiting for the agents of Slurm job 4711 RUNNING on node[1-2] to register");
  AddAllocatedAgent("node1", 2, id, &own);
  JobView view = *manager_->Get(id);
  EXPECT_EQ(view.job.state, JobState::kRunning);
  ASSERT_EQ(view.job.placements.size(), 1u);
  EXPECT_EQ(view.job.placements[0].agent, "node1");
  EXPECT_TRUE(standing.assignments.empty());
  EXPECT_TRUE(other_job.assignments.empty());

  // It ends: its allocation is to be released; once seen ended, nothing is left to do.
  ASSERT_TRUE(ReportStatus("node1", id, 1, 29500, {Succeeded(0, 1.0), Succeeded(1, 1.0)}).ok());
  EXPECT_EQ(manager_->Get(id)->job.state, JobState::kSucceeded);
  work = manager_->PendingAllocationWork();
  EXPECT_EQ(work.to_release.count(id), 1u);
  ASSERT_TRUE(manager_->UpdateAllocation(id, Slurm("CANCELLED", "", /*ended=*/true)).ok());
  EXPECT_EQ(manager_->Get(id)->job.state, JobState::kSucceeded);
  work = manager_->PendingAllocationWork();
  EXPECT_TRUE(work.to_release.empty() && work.to_poll.empty() && work.to_allocate.empty());
  EXPECT_EQ(manager_->Get(id)->job.allocation.state, "CANCELLED");
}

TEST_F(JobManagerAllocationTest, AnAllocationThatEndsFirstFailsTheJobWithItsReasonNoRequeue) {
  auto submitted = Submit(Spec(2));
  ASSERT_TRUE(submitted.ok());
  const std::string id = submitted->job_id;
  ASSERT_TRUE(manager_->UpdateAllocation(id, Slurm("RUNNING", "")).ok());
  FakeChannel a, b;
  AddAllocatedAgent("node1", 1, id, &a);
  AddAllocatedAgent("node2", 1, id, &b);
  ASSERT_EQ(manager_->Get(id)->job.state, JobState::kRunning);
  ASSERT_TRUE(ReportStatus("node1", id, 1, 29500, {}).ok());
  // Slurm's time limit: the agents get SIGTERM and leave; the job waits for the allocator.
  ASSERT_TRUE(manager_->Deregister("node2", "SIGTERM").ok());
  EXPECT_EQ(manager_->Get(id)->job.state, JobState::kRunning);
  ASSERT_TRUE(manager_->UpdateAllocation(id, Slurm("TIMEOUT", "TimeLimit", true)).ok());
  JobView view = *manager_->Get(id);
  EXPECT_EQ(view.job.state, JobState::kFailed);
  EXPECT_EQ(view.job.requeues, 0);
  EXPECT_EQ(view.job.reason,
            "Slurm job 4711 ended: TIMEOUT (TimeLimit); node left: agent node2 stopped (SIGTERM)");
  EXPECT_FALSE(a.cancels.empty());
}

TEST_F(JobManagerAllocationTest, AnAllocationThatEndsBeforeTheJobRanFailsIt) {
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok());
  ASSERT_TRUE(manager_->UpdateAllocation(submitted->job_id, Slurm("PENDING", "Priority")).ok());
  ASSERT_TRUE(
      manager_->UpdateAllocation(submitted->job_id, Slurm("CANCELLED", "", /*ended=*/true)).ok());
  JobView view = *manager_->Get(submitted->job_id);
  EXPECT_EQ(view.job.state, JobState::kFailed);
  EXPECT_EQ(view.job.reason, "Slurm job 4711 ended: CANCELLED before the job ran");
  EXPECT_EQ(manager_->UpdateAllocation("job-404", Slurm("RUNNING", "")).code(),
            absl::StatusCode::kNotFound);
}

TEST_F(JobManagerAllocationTest, AnAgentThatLeftALiveAllocationFailsTheJobAfterTheGrace) {
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok());
  const std::string id = submitted->job_id;
  ASSERT_TRUE(manager_->UpdateAllocation(id, Slurm("RUNNING", "")).ok());
  FakeChannel a;
  AddAllocatedAgent("node1", 1, id, &a);
  ASSERT_TRUE(manager_->Deregister("node1", "SIGTERM").ok());
  manager_->CheckLimits(clock_.Now() + absl::Seconds(5));
  EXPECT_EQ(manager_->Get(id)->job.state, JobState::kRunning);
  manager_->CheckLimits(clock_.Now() + absl::Seconds(11));
  JobView view = *manager_->Get(id);
  EXPECT_EQ(view.job.state, JobState::kFailed);
  EXPECT_EQ(view.job.reason, "node left: agent node1 stopped (SIGTERM)");
  EXPECT_EQ(manager_->PendingAllocationWork().to_release.count(id), 1u);
}

TEST_F(JobManagerAllocationTest, TheAllocationSurvivesARestart) {
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok());
  ASSERT_TRUE(manager_->UpdateAllocation(submitted->job_id, Slurm("PENDING", "Resources")).ok());
  manager_.reset();
  store_.reset();  // commits what is queued
  store_ = std::move(Store::Open(dir_ + "/bench.db")).value();
  JobManagerOptions options;
  options.external_allocation = true;
  manager_ = std::make_unique<JobManager>(store_.get(), options);
  ASSERT_TRUE(manager_->Recover().ok());
  JobView view = *manager_->Get(submitted->job_id);
  EXPECT_EQ(view.job.allocation.id, "4711");
  EXPECT_EQ(view.job.allocation.reason, "Resources");
  EXPECT_TRUE(manager_->PendingAllocationWork().to_allocate.empty());
}

TEST_F(JobManagerTest, WithoutRequeuesALostNodeFailsTheJobAndItsLateSamplesAreFenced) {
  manager_.reset();
  JobManagerOptions options;
  options.max_requeues = 0;
  options.clock = &clock_;
  manager_ = std::make_unique<JobManager>(store_.get(), options);
  reads_ = std::make_unique<ReadService>(store_.get(), manager_.get());
  ASSERT_TRUE(manager_->Recover().ok());
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok());
  manager_->CheckAgents(clock_.SteadyNow() + std::chrono::seconds(31));
  JobView view = *manager_->Get(submitted->job_id);
  EXPECT_EQ(view.job.state, JobState::kFailed);
  EXPECT_EQ(view.job.requeues, 0);
  // It wakes up (SIGCONT) and re-registers: its samples of attempt 1 are refused and
  // its ranks are told to stop.
  FakeChannel back;
  AddCpuAgent("a", 1, &back);
  EXPECT_EQ(Upload("a", {{submitted->job_id, 1, 0, 1, 0.1, 2, 1.0, 0, 0.1, true}})->stored, 0);
  ASSERT_TRUE(manager_->Heartbeat("a", {{submitted->job_id, 1, {0}}}).ok());
  ASSERT_EQ(back.cancels.size(), 1u);
  // A late report of that attempt changes nothing.
  ASSERT_TRUE(ReportStatus("a", submitted->job_id, 1, 0, {Succeeded(0, 1.0)}).ok());
  EXPECT_EQ(manager_->Get(submitted->job_id)->job.state, JobState::kFailed);
}

TEST_F(JobManagerTest, ARestartKeepsRunningJobsForAgentsThatReconnect) {
  FakeChannel a;
  AddCpuAgent("a", 2, &a);
  auto submitted = Submit(Spec(2));
  ASSERT_TRUE(submitted.ok());
  ASSERT_TRUE(ReportStatus("a", submitted->job_id, 1, 29500, {Succeeded(0, 1.0)}).ok());
  Reopen();  // benchd restarted; rank 1 still runs on "a"
  JobView view = *manager_->Get(submitted->job_id);
  EXPECT_EQ(view.job.state, JobState::kRunning);
  // Its devices stay held: another job waits.
  FakeChannel a2;
  AddCpuAgent("a", 2, &a2);
  // Rank 0 ended before the restart: its slot is free, rank 1's is not.
  auto other = Submit(Spec(2));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(manager_->Get(other->job_id)->job.state, JobState::kQueued);
  ASSERT_TRUE(manager_->Heartbeat("a", {{submitted->job_id, 1, {1}}}).ok());
  EXPECT_TRUE(a2.cancels.empty());
  ASSERT_TRUE(ReportStatus("a", submitted->job_id, 1, 0, {Succeeded(1, 1.0)}).ok());
  EXPECT_EQ(manager_->Get(submitted->job_id)->job.state, JobState::kSucceeded);
  EXPECT_EQ(manager_->Get(other->job_id)->job.state, JobState::kRunning);
}

TEST_F(JobManagerTest, SummariesAreCheckedAgainstSamplesStoredBeforeARestart) {
  FakeChannel a;
  AddCpuAgent("a", 2, &a);
  auto submitted = Submit(Spec(2));
  ASSERT_TRUE(submitted.ok());
  const std::string id = submitted->job_id;
  // Rank 0 stores measured steps of 0.25 s before benchd restarts; rank 1 stores none.
  ASSERT_TRUE(Upload("a", {{id, 1, 0, 2, 0.25, 2, 1.0, 0, 0.5, false},
                           {id, 1, 0, 3, 0.25, 2, 1.0, 0, 0.75, false}})
                  .ok());
  Reopen();
  FakeChannel a2;
  AddCpuAgent("a", 2, &a2);
  ASSERT_TRUE(manager_->Heartbeat("a", {{id, 1, {0, 1}}}).ok());
  // Straight to the manager: no backing sample is uploaded after the restart.
  RankReport real = Succeeded(0, 1.0);      // 8 images in 1 s: 8 img/s <= 2 x 2 / 0.25
  RankReport unbacked = Succeeded(1, 1.0);  // nothing of rank 1 is stored
  ASSERT_TRUE(manager_->ReportStatus("a", id, 1, 0, {real, unbacked}).ok());
  JobView view = *manager_->Get(id);
  EXPECT_EQ(view.job.state, JobState::kSucceeded);
  EXPECT_EQ(view.job.summaries.count(0), 1u);
  EXPECT_EQ(view.job.summaries.count(1), 0u);
}

TEST_F(JobManagerTest, ARestartRequeuesJobsWhoseAgentDoesNotReturnWithinTheGrace) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok());
  Reopen();
  manager_->CheckAgents(clock_.SteadyNow() + std::chrono::seconds(29));
  EXPECT_EQ(manager_->Get(submitted->job_id)->job.state, JobState::kRunning);
  manager_->CheckAgents(clock_.SteadyNow() + std::chrono::seconds(31));
  JobView view = *manager_->Get(submitted->job_id);
  EXPECT_EQ(view.job.state, JobState::kQueued);
  EXPECT_THAT(view.job.history.back().reason,
              HasSubstr("agent a did not reconnect within 30s of benchd's restart"));
}

TEST_F(JobManagerTest, AnAgentRestartThatKilledRanksRequeuesTheJob) {
  FakeChannel a;
  FakeChannel b;
  AddCpuAgent("a", 1, &a);
  AddCpuAgent("b", 1, &b);
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok());
  std::string agent = manager_->Get(submitted->job_id)->job.placements[0].agent;
  RankReport killed;
  killed.rank = 0;
  killed.outcome = RankOutcome::kFailed;
  killed.exit_code = -9;
  killed.message = "bench-agent restarted while this rank ran; it was killed (pid 42)";
  ASSERT_TRUE(ReportStatus(agent, submitted->job_id, 1, 0, {killed}).ok());
  JobView view = *manager_->Get(submitted->job_id);
  EXPECT_EQ(view.job.requeues, 1);
  EXPECT_EQ(view.job.state, JobState::kRunning);  // placed again at once
  EXPECT_EQ(view.job.attempt, 2);
}

TEST_F(JobManagerTest, WallTimeAndHangLimitsFailTheJobAndStopItsRanks) {
  FakeChannel a;
  AddCpuAgent("a", 2, &a);
  JobSpec walled = Spec(1);
  walled.wall_time_limit_s = 3600;
  walled.hang_timeout_s = 7200;
  JobSpec hangs = Spec(1);
  hangs.hang_timeout_s = 60;
  auto first = Submit(walled);
  auto second = Submit(hangs);
  ASSERT_TRUE(first.ok() && second.ok());
  manager_->CheckLimits(clock_.Now() + absl::Seconds(30));
  EXPECT_EQ(manager_->Get(first->job_id)->job.state, JobState::kRunning);
  EXPECT_EQ(manager_->Get(second->job_id)->job.state, JobState::kRunning);
  manager_->CheckLimits(clock_.Now() + absl::Seconds(61));
  JobView hung = *manager_->Get(second->job_id);
  EXPECT_EQ(hung.job.state, JobState::kFailed);
  EXPECT_THAT(hung.job.reason, HasSubstr("hung: no iteration stored for 1m"));
  EXPECT_EQ(manager_->Get(first->job_id)->job.state, JobState::kRunning);
  manager_->CheckLimits(clock_.Now() + absl::Seconds(3601));
  JobView walled_view = *manager_->Get(first->job_id);
  EXPECT_EQ(walled_view.job.state, JobState::kFailed);
  EXPECT_THAT(walled_view.job.reason, HasSubstr("wall-time limit"));
  EXPECT_EQ(a.cancels.size(), 2u);
}

TEST_F(JobManagerTest, TheQueueListsWaitingJobsInOrderWithWhyTheyWait) {
  FakeChannel a;
  AddCpuAgent("a", 2, &a);
  auto running = Submit(Spec(2));
  auto big = Submit(Spec(2));
  auto small = Submit(Spec(1));
  ASSERT_TRUE(running.ok() && big.ok() && small.ok());
  std::vector<JobView> queue = manager_->Queue();
  ASSERT_EQ(queue.size(), 2u);
  EXPECT_EQ(queue[0].job.id, big->job_id);
  EXPECT_EQ(queue[0].queue_position, 1);
  EXPECT_THAT(queue[0].job.reason, HasSubstr("waiting for 2 free CPU slots (0 free now"));
  EXPECT_EQ(queue[1].job.id, small->job_id);
  EXPECT_EQ(queue[1].queue_position, 2);
  EXPECT_THAT(queue[1].job.reason, HasSubstr("behind " + big->job_id));
  ASSERT_TRUE(manager_->Cancel(big->job_id).ok());
  queue = manager_->Queue();
  ASSERT_EQ(queue.size(), 1u);
  EXPECT_EQ(queue[0].queue_position, 1);
}

TEST_F(JobManagerTest, ConstraintsNoAgentCanMeetAreRefusedAtSubmit) {
  FakeChannel a;
  AddCpuAgent("a", 2, &a);
  JobSpec spec = Spec(1);
  spec.node_labels = {{"rack", "r9"}};
  auto refused = Submit(spec);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("labels rack=r9"));
  spec.node_labels.clear();
  spec.allowed_nodes = {"a"};
  EXPECT_TRUE(Submit(spec).ok());
}

TEST_F(JobManagerTest, WatchersSeeProgressAndTheEnd) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok());
  std::vector<std::pair<int, bool>> seen;  // iterations_done, final
  auto handle = manager_->Watch(submitted->job_id, [&](const JobView& v, bool final) {
    seen.emplace_back(v.iterations_done, final);
  });
  ASSERT_TRUE(handle.ok());
  std::vector<IterationSample> samples;
  for (int it = 1; it <= 3; ++it) {
    IterationSample s;
    s.job_id = submitted->job_id;
    s.attempt = 1;
    s.iteration = it;
    s.images = 2;
    samples.push_back(s);
  }
  auto result = Upload("a", samples);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->stored, 3);
  ASSERT_TRUE(ReportStatus("a", submitted->job_id, 1, 29500, {Succeeded(0, 1.0)}).ok());
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen.front().first, 0);
  EXPECT_TRUE(seen.back().second);
  bool saw_three = false;
  for (auto& [done, final] : seen) saw_three |= done == 3;
  EXPECT_TRUE(saw_three);
  EXPECT_EQ(manager_->Get(submitted->job_id)->samples_stored, 3);
}

TEST_F(JobManagerTest, RestartKeepsRunningAndQueuedJobs) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  auto running = Submit(Spec(1));
  auto queued = Submit(Spec(1));
  ASSERT_TRUE(running.ok() && queued.ok());
  Reopen();
  auto view = manager_->Get(running->job_id);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->job.state, JobState::kRunning);
  EXPECT_EQ(manager_->Get(queued->job_id)->job.state, JobState::kQueued);
  // Ids continue after the highest stored one.
  FakeChannel b;
  AddCpuAgent("b", 1, &b);
  auto next = Submit(Spec(1));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->job_id, "job-000003");
}

TEST_F(JobManagerTest, HeartbeatListingAnEndedJobGetsItCancelledOnTheAgent) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok());
  ASSERT_TRUE(manager_->Cancel(submitted->job_id).ok());
  // benchd restarts before the agent heard of the cancel ...
  Reopen();
  FakeChannel after;
  AddCpuAgent("a", 1, &after);
  // ... and the agent, still running it, is told to stop it.
  ASSERT_TRUE(manager_->Heartbeat("a", {{submitted->job_id, 0, {}}}).ok());
  ASSERT_EQ(after.cancels.size(), 1u);
  EXPECT_EQ(after.cancels[0].job_id, submitted->job_id);
  EXPECT_EQ(after.cancels[0].attempt, 1);
  EXPECT_THAT(after.cancels[0].reason, HasSubstr("CANCELLED"));
}

TEST_F(JobManagerTest, HeartbeatListingARunningJobChangesNothing) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok());
  ASSERT_TRUE(manager_->Heartbeat("a", {{submitted->job_id, 0, {}}}).ok());
  EXPECT_TRUE(a.cancels.empty());
  EXPECT_EQ(manager_->Heartbeat("nobody", {}).code(), absl::StatusCode::kNotFound);
}

TEST_F(JobManagerTest, CancelBeforeTheRendezvousPortFreesEveryAgentsDevices) {
  FakeChannel a, b;
  AddCpuAgent("a", 1, &a);
  AddCpuAgent("b", 1, &b);
  auto submitted = Submit(Spec(2));
  ASSERT_TRUE(submitted.ok());
  ASSERT_TRUE(manager_->Cancel(submitted->job_id).ok());  // a never reported its port
  EXPECT_TRUE(b.assignments.empty());
  EXPECT_TRUE(b.cancels.empty());
  RankReport cancelled;
  cancelled.rank = 0;
  cancelled.outcome = RankOutcome::kCancelled;
  ASSERT_TRUE(ReportStatus("a", submitted->job_id, 1, 0, {cancelled}).ok());
  for (const AgentView& agent : manager_->ListAgents()) {
    EXPECT_EQ(agent.devices_busy, 0) << agent.inventory.name;
  }
}

TEST_F(JobManagerTest, RanksThatVanishFromHeartbeatsRequeueTheJobAndFreeTheDevices) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok());
  RankReport started;
  started.outcome = RankOutcome::kStarted;
  ASSERT_TRUE(ReportStatus("a", submitted->job_id, 1, 29500, {started}).ok());
  ASSERT_TRUE(manager_->Heartbeat("a", {{submitted->job_id, 0, {}}}).ok());
  // The agent restarts within its lease and no longer runs the job.
  ASSERT_TRUE(manager_->Heartbeat("a", {}).ok());
  EXPECT_EQ(manager_->Get(submitted->job_id)->job.state, JobState::kRunning);  // once: wait
  ASSERT_TRUE(manager_->Heartbeat("a", {}).ok());
  JobView view = *manager_->Get(submitted->job_id);
  EXPECT_EQ(view.job.requeues, 1);
  EXPECT_THAT(view.job.history[view.job.history.size() - 2].reason, HasSubstr("vanished"));
  // Attempt 1's slot was freed and attempt 2 took it.
  EXPECT_EQ(view.job.state, JobState::kRunning);
  EXPECT_EQ(view.job.attempt, 2);
  EXPECT_EQ(manager_->ListAgents()[0].devices_busy, 1);
}

TEST_F(JobManagerTest, SamplesThatMatchNoRankPlacedOnTheSenderAreDropped) {
  FakeChannel a, b;
  AddCpuAgent("a", 1, &a);
  AddCpuAgent("b", 1, &b);
  auto submitted = Submit(Spec(2));
  ASSERT_TRUE(submitted.ok());
  auto sample = [&](int attempt, int rank, int iteration) {
    IterationSample s;
    s.job_id = submitted->job_id;
    s.attempt = attempt;
    s.rank = rank;
    s.iteration = iteration;
    s.images = 2;  // within the batch: an empty iteration is refused (bad_images)
    return s;
  };
  std::vector<IterationSample> samples = {
      sample(1, 0, 1),   // the one good sample: rank 0 runs on a
      sample(1, 1, 1),   // rank 1 runs on b, not a
      sample(2, 0, 2),   // no such attempt
      sample(1, 7, 1),   // no such rank
      sample(1, 0, 99),  // past the last iteration
  };
  auto result = Upload("a", samples);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->stored, 1);
  EXPECT_EQ(*store_->CountSamples(submitted->job_id, 1), 1);
  EXPECT_EQ(manager_->Get(submitted->job_id)->samples_stored, 1);

  // Nor may an agent report the end of a rank it does not host.
  ASSERT_TRUE(
      ReportStatus("a", submitted->job_id, 1, 29500, {Succeeded(0, 1.0), Succeeded(1, 1.0)}).ok());
  EXPECT_EQ(manager_->Get(submitted->job_id)->job.state, JobState::kRunning);
}

TEST_F(JobManagerTest, ShutdownClosesWatchersAndRefusesNewOnes) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok());
  absl::Status closed;
  ASSERT_TRUE(manager_->Watch(submitted->job_id, [](const JobView&, bool) {},
                              [&](const absl::Status& s) { closed = s; }).ok());
  manager_->Shutdown();
  EXPECT_EQ(closed.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(manager_->Watch(submitted->job_id, [](const JobView&, bool) {}).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace bench

namespace bench {
namespace {

// A GPU job's NVML readings are joined to its iterations when it succeeds: per-GPU
// energy per image over the measured window, stored, and still there after a restart.
TEST_F(JobManagerTest, GpuSamplesAreJoinedToTheMeasuredWindowWhenTheJobEnds) {
  manager_.reset();
  manager_ = std::make_unique<JobManager>(store_.get(), JobManagerOptions{}, &metrics_);
  reads_ = std::make_unique<ReadService>(store_.get(), manager_.get());
  ASSERT_TRUE(manager_->Recover().ok());
  FakeChannel a;
  AgentInventory inventory;
  inventory.name = "dgx";
  inventory.address = "127.0.0.1";
  inventory.gpus = {{0, "Fake GPU 0", "GPU-fake-0", 1 << 30}};
  ASSERT_TRUE(manager_->RegisterAgent(inventory).ok());
  ASSERT_TRUE(manager_->AttachChannel("dgx", &a).ok());
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const std::string id = submitted->job_id;

  // 5 iterations of 1 s from wall time 1000 s (the first is warm-up), 2 images each;
  // a steady 250 W sampled every 0.25 s from 999.9 s to 1005.1 s.
  std::vector<IterationSample> samples;
  for (int i = 1; i <= 5; ++i) {
    IterationSample s;
    s.job_id = id;
    s.attempt = 1;
    s.rank = 0;
    s.iteration = i;
    s.elapsed_s = i;
    s.step_time_s = 1;
    s.images = 2;
    s.warmup = i == 1;
    s.received_unix_ns = static_cast<int64_t>((1000 + i) * 1e9);
    samples.push_back(s);
  }
  std::vector<GpuSample> readings;
  for (int k = 0; k <= 20; ++k) {
    double t = 999.9 + 0.26 * k;
    GpuSample g;
    g.job_id = id;
    g.attempt = 1;
    g.rank = 0;
    g.seq = k + 1;
    g.gpu_uuid = "GPU-fake-0";
    g.time_unix_ns = static_cast<int64_t>(t * 1e9);
    g.power_w = 250;
    g.energy_j = 250 * (t - 999.9);
    g.sm_clock_mhz = 1980;
    g.temperature_c = 65;
    readings.push_back(g);
  }
  absl::StatusOr<AppendResult> result = Upload("dgx", samples, readings);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->stored, 5);
  EXPECT_EQ(result->gpu_stored, 21);
  ASSERT_EQ(metrics_.Take(absl::Now()).jobs.at(id).ranks.at(0).gpu->seq, 21);

  RankReport done = Succeeded(0, 4.0);
  done.summary->measured_images = 8;
  ASSERT_TRUE(ReportStatus("dgx", id, 1, 0, {done}).ok());
  // The join runs on the store's writer thread after the samples.
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (manager_->Get(id)->job.gpu_telemetry.empty() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  Job job = manager_->Get(id)->job;
  ASSERT_EQ(job.gpu_telemetry.size(), 1u) << job.telemetry_note;
  const GpuTelemetry& gpu = job.gpu_telemetry[0];
  EXPECT_EQ(gpu.agent, "dgx");
  EXPECT_EQ(gpu.gpu_uuid, "GPU-fake-0");
  // Measured window [1001, 1005]: 4 s × 250 W = 1000 J over 8 images.
  ASSERT_TRUE(gpu.energy_j.has_value());
  EXPECT_NEAR(*gpu.energy_j, 1000, 1e-3);
  EXPECT_NEAR(*gpu.energy_per_image_j, 125, 1e-3);
  EXPECT_DOUBLE_EQ(gpu.sm_clock_mhz.p50, 1980);
  EXPECT_EQ(job.telemetry_note, "");
  EXPECT_NEAR(*JobEnergyPerImage(job), 125, 1e-3);
  EXPECT_NEAR(*metrics_.Take(absl::Now()).jobs.at(id).energy_per_image_j, 125, 1e-3);
  auto means = store_->ReadIterationMeans(id, 1);
  ASSERT_TRUE(means.ok());
  EXPECT_NEAR(*means->at({0, 3}).power_w, 250, 1e-9);

  Reopen();
  Job reloaded = manager_->Get(id)->job;
  ASSERT_EQ(reloaded.gpu_telemetry.size(), 1u);
  EXPECT_NEAR(*reloaded.gpu_telemetry[0].energy_per_image_j, 125, 1e-3);
}

TEST_F(JobManagerTest, ACpuJobSaysWhyItHasNoGpuTelemetry) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  auto submitted = Submit(Spec(1));
  ASSERT_TRUE(submitted.ok());
  ASSERT_TRUE(ReportStatus("a", submitted->job_id, 1, 0, {Succeeded(0, 1.0)}).ok());
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (manager_->Get(submitted->job_id)->job.telemetry_note.empty() &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_THAT(manager_->Get(submitted->job_id)->job.telemetry_note, HasSubstr("CPU slots"));
}

}  // namespace
}  // namespace bench

namespace bench {
namespace {

class JobManagerGpuTest : public JobManagerTest {
 protected:
  void AddGpuAgent(const std::string& name, int gpus, FakeChannel* channel,
                   Versions versions = {}, const std::string& uuid_prefix = "GPU-") {
    AgentInventory inventory;
    inventory.name = name;
    inventory.hostname = name + ".example";
    inventory.address = "127.0.0.1";
    for (int i = 0; i < gpus; ++i) {
      inventory.gpus.push_back({i, "NVIDIA H100 80GB HBM3",
                                uuid_prefix + name + "-" + std::to_string(i), 80LL << 30});
    }
    inventory.versions = std::move(versions);
    ASSERT_TRUE(manager_->RegisterAgent(inventory).ok());
    ASSERT_TRUE(manager_->AttachChannel(name, channel).ok());
  }
  // Runs a job of `devices` ranks on the agent's GPUs to success; rank r's median step
  // time is step_times[r] (window 2 s, 8 images each).
  std::string RunToSuccess(const std::string& agent, int devices,
                           const std::vector<double>& step_times) {
    auto submitted = Submit(Spec(devices));
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    std::vector<RankReport> reports;
    for (int r = 0; r < devices; ++r) {
      RankReport report = Succeeded(r, 2.0);
      report.summary->step_time_median_s = step_times[r];
      reports.push_back(report);
    }
    EXPECT_TRUE(ReportStatus(agent, submitted->job_id, 1, 29500, reports).ok());
    EXPECT_EQ(manager_->Get(submitted->job_id)->job.state, JobState::kSucceeded);
    return submitted->job_id;
  }
};

TEST_F(JobManagerGpuTest, RankDevicesAreRecordedAtPlacementAndVersionsMerged) {
  FakeChannel a, b;
  AddGpuAgent("dgx-a", 1, &a, {{"driver", "550.54.15"}, {"cuda_driver", "12.4"}});
  AddGpuAgent("dgx-b", 1, &b, {{"driver", "535.104.05"}, {"cuda_driver", "12.4"}});
  auto submitted = Submit(Spec(2));
  ASSERT_TRUE(submitted.ok());
  const std::string id = submitted->job_id;
  RankReport started0;
  started0.rank = 0;
  started0.versions = {{"torch", "2.3.0"}, {"nccl", "2.20.5"}, {"bench_train", "abc"}};
  ASSERT_TRUE(ReportStatus("dgx-a", id, 1, 29500, {started0}).ok());
  RankReport started1 = started0;
  started1.rank = 1;
  started1.versions["nccl"] = "2.18.1";
  ASSERT_TRUE(ReportStatus("dgx-b", id, 1, 0, {started1}).ok());

  // The agent re-registers with another GPU in slot 0: history is not rewritten.
  FakeChannel a2;
  AddGpuAgent("dgx-a", 1, &a2, {{"driver", "999"}}, "GPU-new-");

  auto check = [&](const Job& job) {
    ASSERT_EQ(job.rank_devices.size(), 2u);
    EXPECT_EQ(job.rank_devices[0].agent, "dgx-a");
    EXPECT_EQ(job.rank_devices[0].hostname, "dgx-a.example");
    EXPECT_EQ(job.rank_devices[0].gpu_uuid, "GPU-dgx-a-0");
    EXPECT_EQ(job.rank_devices[1].gpu_uuid, "GPU-dgx-b-0");
    EXPECT_EQ(job.rank_devices[1].gpu_name, "NVIDIA H100 80GB HBM3");
    Environment env = MergeEnvironment(job);
    EXPECT_EQ(env.versions.at("driver"), "535.104.05 | 550.54.15");
    EXPECT_EQ(env.versions.at("cuda_driver"), "12.4");
    EXPECT_EQ(env.versions.at("nccl"), "2.18.1 | 2.20.5");
    EXPECT_EQ(env.versions.at("torch"), "2.3.0");
    EXPECT_EQ(env.hostnames, (std::vector<std::string>{"dgx-a.example", "dgx-b.example"}));
  };
  check(manager_->Get(id)->job);
  Reopen();  // the job fails on recovery (it was running) but keeps what was recorded
  check(manager_->Get(id)->job);
}

TEST_F(JobManagerGpuTest, BaselinesAreValidatedComparedAndSurviveRestart) {
  FakeChannel a;
  AddGpuAgent("dgx", 1, &a);
  EXPECT_EQ(SetBaseline("job-424242", 0, 0).status().code(), absl::StatusCode::kNotFound);
  std::string first = RunToSuccess("dgx", 1, {0.1});  // 8 images / 2 s = 4 img/s
  EXPECT_EQ(SetBaseline(first, -1, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SetBaseline(first, 100, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SetBaseline(first, 0, -3).status().code(), absl::StatusCode::kInvalidArgument);
  auto running = Submit(Spec(1));
  ASSERT_TRUE(running.ok());
  auto refused = SetBaseline(running->job_id, 0, 0);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("RUNNING"));
  // A job that succeeded without a throughput (its rank measured no images).
  RankReport empty = Succeeded(0, 2.0);
  empty.summary->measured_images = 0;
  ASSERT_TRUE(ReportStatus("dgx", running->job_id, 1, 29500, {empty}).ok());
  ASSERT_EQ(manager_->Get(running->job_id)->job.state, JobState::kSucceeded);
  refused = SetBaseline(running->job_id, 0, 0);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("no throughput"));

  auto baseline = SetBaseline(first, kDefaultTolerancePct, 10);
  ASSERT_TRUE(baseline.ok()) << baseline.status();
  EXPECT_EQ(baseline->lower_tolerance_pct, 5);
  EXPECT_EQ(baseline->upper_tolerance_pct, 10);
  EXPECT_DOUBLE_EQ(baseline->images_per_second, 4);
  EXPECT_EQ(baseline->configuration.gpu_model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(baseline->configuration.device_kind, DeviceKind::kCuda);

  // A later, slower run of the same configuration: 8 images / 2.5 s = 3.2 img/s, 0.8×.
  auto slower = Submit(Spec(1));
  ASSERT_TRUE(slower.ok());
  ASSERT_TRUE(ReportStatus("dgx", slower->job_id, 1, 29500, {Succeeded(0, 2.5)}).ok());
  auto check = [&] {
    JobView view = *manager_->Get(slower->job_id);
    ASSERT_TRUE(view.baseline.has_value());
    EXPECT_EQ(view.baseline->verdict, BaselineVerdict::kBelow);
    EXPECT_DOUBLE_EQ(view.baseline->ratio, 0.8);
    EXPECT_EQ(view.baseline->baseline_job_id, first);
    EXPECT_FALSE(manager_->Get(running->job_id)->baseline.has_value()) << "no throughput";
    std::vector<ResultCell> cells = reads_->Results(ResultsFilter{});
    ASSERT_EQ(cells.size(), 1u);
    EXPECT_EQ(cells[0].runs(), 2);
    EXPECT_EQ(cells[0].unmeasured_runs, 1);
    ASSERT_TRUE(cells[0].baseline.has_value());
    EXPECT_EQ(cells[0].baseline->verdict, BaselineVerdict::kBelow);  // median 3.6 < 3.8
    ASSERT_EQ(reads_->ListBaselines().size(), 1u);
    EXPECT_EQ(reads_->ListBaselines()[0].job_id, first);
  };
  check();
  Reopen();
  check();

  // Setting the slower run as the baseline replaces the first.
  ASSERT_TRUE(SetBaseline(slower->job_id, 5, 5).ok());
  ASSERT_EQ(reads_->ListBaselines().size(), 1u);
  EXPECT_EQ(reads_->ListBaselines()[0].job_id, slower->job_id);
  EXPECT_EQ(manager_->Get(first)->baseline->verdict, BaselineVerdict::kAbove);  // 1.25×
}

TEST_F(JobManagerGpuTest, VariabilityFlagsTheGpuWhoseRanksAreSlower) {
  FakeChannel a;
  AddGpuAgent("dgx", 4, &a);
  // Twice, four single-GPU jobs at once (one per GPU); GPU 3 takes 1.5× the others'
  // step time. A 4-GPU job is ignored: its ranks share one step time.
  for (int round = 0; round < 2; ++round) {
    std::vector<std::string> ids;
    for (int gpu = 0; gpu < 4; ++gpu) ids.push_back(Submit(Spec(1))->job_id);
    for (int gpu = 0; gpu < 4; ++gpu) {
      RankReport report = Succeeded(0, 2.0);
      report.summary->step_time_median_s = gpu == 3 ? 0.15 : 0.1;
      ASSERT_TRUE(ReportStatus("dgx", ids[gpu], 1, 29500, {report}).ok());
    }
  }
  RunToSuccess("dgx", 4, {0.3, 0.3, 0.3, 0.3});
  auto report = reads_->Variability(0, "");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->threshold_pct, 5);
  const std::vector<GpuVariability>* gpus = &report->gpus;
  ASSERT_EQ(gpus->size(), 4u);
  EXPECT_EQ((*gpus)[0].gpu_uuid, "GPU-dgx-3");
  EXPECT_NEAR((*gpus)[0].normalized_step_time, 1.5, 1e-12);
  EXPECT_TRUE((*gpus)[0].outlier);
  EXPECT_EQ((*gpus)[0].jobs, 2);
  EXPECT_EQ((*gpus)[0].hostname, "dgx.example");
  EXPECT_EQ((*gpus)[0].gpu_index, 3);
  for (size_t i = 1; i < gpus->size(); ++i) {
    EXPECT_DOUBLE_EQ((*gpus)[i].normalized_step_time, 1.0);
    EXPECT_FALSE((*gpus)[i].outlier) << (*gpus)[i].gpu_uuid;
  }
  EXPECT_TRUE(reads_->Variability(0, "resnet18")->gpus.empty());
  EXPECT_EQ(reads_->Variability(-1, "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(JobManagerTest, GetSamplesReturnsTheStoredIterationsOfTheCurrentAttempt) {
  EXPECT_EQ(reads_->GetSamples("job-000404", 0).status().code(),
            absl::StatusCode::kNotFound);
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  auto queued_first = Submit(Spec(1));
  ASSERT_TRUE(queued_first.ok());
  std::vector<IterationSample> samples;
  for (int it = 1; it <= 4; ++it) {
    IterationSample s;
    s.job_id = queued_first->job_id;
    s.attempt = 1;
    s.iteration = it;
    s.step_time_s = 0.1 * it;
    s.images = 2;
    s.warmup = it == 1;
    samples.push_back(s);
  }
  ASSERT_TRUE(Upload("a", samples).ok());
  auto all = reads_->GetSamples(queued_first->job_id, 0);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->view.job.state, JobState::kRunning);
  ASSERT_EQ(all->samples.size(), 4u);
  EXPECT_TRUE(all->samples[0].warmup);
  auto later = reads_->GetSamples(queued_first->job_id, 3);
  ASSERT_TRUE(later.ok());
  ASSERT_EQ(later->samples.size(), 2u);
  EXPECT_EQ(later->samples[0].iteration, 3);
  EXPECT_DOUBLE_EQ(later->samples[1].step_time_s, 0.4);
  // A job never placed has nothing stored.
  auto waiting = Submit(Spec(1));
  ASSERT_TRUE(waiting.ok());
  auto none = reads_->GetSamples(waiting->job_id, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->view.job.state, JobState::kQueued);
  EXPECT_TRUE(none->samples.empty());
}

// A diverging run (issue 13): its iterations with a NaN or infinite loss are stored
// and counted, not dropped as duplicates (which let the job look hung); when the trainer
// gives up with "loss diverged: ..." the job fails with that as its outcome; the count
// survives a restart of benchd.
TEST_F(JobManagerTest, ADivergedLossIsStoredCountedAndEndsTheJobAsLossDiverged) {
  FakeChannel a;
  AddCpuAgent("a", 2, &a);
  JobSpec spec = Spec(2);
  spec.iterations = 6;
  auto submitted = Submit(spec);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const std::string id = submitted->job_id;
  std::vector<IterationSample> samples;
  for (int rank = 0; rank < 2; ++rank) {
    for (int it = 1; it <= 6; ++it) {
      IterationSample s;
      s.job_id = id;
      s.attempt = 1;
      s.rank = rank;
      s.iteration = it;
      s.step_time_s = 0.1;
      s.images = 2;
      s.loss = it <= 2 ? 6.9 : (it == 3 ? std::numeric_limits<double>::infinity()
                                        : std::numeric_limits<double>::quiet_NaN());
      samples.push_back(s);
    }
  }
  auto uploaded = Upload("a", samples);
  ASSERT_TRUE(uploaded.ok()) << uploaded.status();
  EXPECT_EQ(uploaded->stored, 12);
  EXPECT_EQ(uploaded->duplicates, 0);
  JobView running = *manager_->Get(id);
  EXPECT_EQ(running.samples_stored, 12);
  EXPECT_EQ(running.iterations_done, 6);
  EXPECT_EQ(running.nonfinite_losses, 8);
  // Stored iterations are progress: the hang check leaves the job alone.
  manager_->CheckLimits(clock_.Now());
  EXPECT_EQ(manager_->Get(id)->job.state, JobState::kRunning);
  // A redelivery does not count them twice.
  ASSERT_TRUE(Upload("a", samples).ok());
  EXPECT_EQ(manager_->Get(id)->nonfinite_losses, 8);

  RankReport diverged;
  diverged.rank = 1;
  diverged.outcome = RankOutcome::kFailed;
  diverged.exit_code = 1;
  diverged.message =
      "loss diverged: non-finite loss in 4 consecutive iterations (from iteration 3)";
  diverged.stderr_tail = "lots of trainer output";
  ASSERT_TRUE(ReportStatus("a", id, 1, 29500, {diverged}).ok());
  JobView ended = *manager_->Get(id);
  EXPECT_EQ(ended.job.state, JobState::kFailed);
  EXPECT_EQ(ended.job.reason,
            "loss diverged: rank 1 on a: non-finite loss in 4 consecutive iterations (from "
            "iteration 3) (8 non-finite losses stored so far)");
  ASSERT_EQ(a.cancels.size(), 1u);  // rank 0 is told to stop

  auto stored = reads_->GetSamples(id, 0);
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->samples.size(), 12u);
  EXPECT_EQ(stored->samples[2].loss, std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(stored->samples[5].loss));

  Reopen();
  EXPECT_EQ(manager_->Get(id)->nonfinite_losses, 8);
  // The counts come back from sample_series' kept counts (Store::ReadSeriesCounts).
  EXPECT_EQ(manager_->Get(id)->samples_stored, 12);
  EXPECT_EQ(manager_->Get(id)->iterations_done, 6);
  EXPECT_EQ(manager_->Get(id)->job.reason, ended.job.reason);
}

// The precision in effect arrives with a rank's STARTED report (its start event), is
// kept per rank and survives a restart; skipped steps come with the summaries.
TEST_F(JobManagerTest, PrecisionInEffectAndSkippedStepsReachTheJob) {
  FakeChannel a;
  AddCpuAgent("a", 2, &a);
  JobSpec spec = Spec(2);
  spec.precision = Precision::kAmp;
  auto submitted = Submit(spec);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const std::string id = submitted->job_id;
  RankReport started;
  started.rank = 0;
  started.outcome = RankOutcome::kStarted;
  started.precision = "fp32";
  ASSERT_TRUE(ReportStatus("a", id, 1, 29500, {started}).ok());
  Job job = manager_->Get(id)->job;
  EXPECT_EQ(job.rank_precisions, (std::map<int, std::string>{{0, "fp32"}}));
  EXPECT_EQ(MergePrecision(job).mismatch, "requested amp, ran fp32");

  RankReport done0 = Succeeded(0, 2.0);
  done0.precision = "fp32";
  done0.summary->skipped_steps = 3;
  RankReport done1 = Succeeded(1, 2.0);
  done1.precision = "amp_bf16";
  done1.summary->skipped_steps = 1;
  ASSERT_TRUE(ReportStatus("a", id, 1, 0, {done0, done1}).ok());
  Reopen();
  job = manager_->Get(id)->job;
  EXPECT_EQ(job.state, JobState::kSucceeded);
  EXPECT_EQ(job.rank_precisions, (std::map<int, std::string>{{0, "fp32"}, {1, "amp_bf16"}}));
  EXPECT_EQ(job.summaries.at(0).skipped_steps + job.summaries.at(1).skipped_steps, 4);
  EXPECT_EQ(MergePrecision(job).in_effect, "amp_bf16 | fp32");
}

// A rank whose trainer said "simulated": true (bench-sim-train, issue 26) makes the job
// simulated, for good and across a restart; its figures never enter a real results cell,
// only the simulated ones, and it cannot be a baseline.
TEST_F(JobManagerTest, ASimulatedRankMakesTheJobSimulatedAndKeepsItOutOfRealResults) {
  FakeChannel a;
  AddCpuAgent("a", 2, &a);
  auto real = Submit(Spec(1));
  ASSERT_TRUE(real.ok()) << real.status();
  ASSERT_TRUE(ReportStatus("a", real->job_id, 1, 0, {Succeeded(0, 2.0)}).ok());
  auto simulated = Submit(Spec(1));
  ASSERT_TRUE(simulated.ok()) << simulated.status();
  const std::string id = simulated->job_id;
  RankReport started;
  started.rank = 0;
  started.outcome = RankOutcome::kStarted;
  started.precision = "fp32";
  started.simulated = true;
  ASSERT_TRUE(ReportStatus("a", id, 1, 29500, {started}).ok());
  EXPECT_TRUE(manager_->Get(id)->job.simulated);
  RankReport done = Succeeded(0, 1.0);  // twice the real job's throughput
  done.simulated = false;               // a later report without the mark does not clear it
  ASSERT_TRUE(ReportStatus("a", id, 1, 0, {done}).ok());
  Reopen();
  EXPECT_TRUE(manager_->Get(id)->job.simulated);
  EXPECT_FALSE(manager_->Get(real->job_id)->job.simulated);

  std::vector<ResultCell> cells = reads_->Results(ResultsFilter{});
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_FALSE(cells[0].key.simulated);
  EXPECT_EQ(cells[0].job_ids, std::vector<std::string>{real->job_id});
  ResultsFilter simulated_only;
  simulated_only.configuration.simulated = true;
  cells = reads_->Results(simulated_only);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_TRUE(cells[0].key.simulated);
  EXPECT_EQ(cells[0].job_ids, std::vector<std::string>{id});

  auto baseline = SetBaseline(id, 5, 5);
  ASSERT_FALSE(baseline.ok());
  EXPECT_EQ(baseline.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(baseline.status().message()), HasSubstr("is simulated"));
}

}  // namespace
}  // namespace bench

namespace bench {
namespace {

// benchd stopped after a GPU job ended but before its telemetry join committed: the
// restart joins it.
TEST_F(JobManagerTest, RestartJoinsTheTelemetryOfAnEndedJobThatHasNone) {
  Job job;
  job.id = "job-000001";
  job.seq = 1;
  job.spec = Spec(1);
  job.state = JobState::kSucceeded;
  job.attempt = 1;
  job.device_kind = DeviceKind::kCuda;
  job.created = absl::Now();
  job.placements = {Placement{"dgx", {0}, {0}}};
  job.summaries[0] = RankSummary{0, 4, 8, 4.0, 1.0};
  ASSERT_TRUE(store_->InsertJob(job).ok());
  std::vector<IterationSample> samples;
  for (int i = 1; i <= 5; ++i) {
    IterationSample s;
    s.job_id = job.id;
    s.attempt = 1;
    s.iteration = i;
    s.elapsed_s = i;
    s.images = 2;
    s.warmup = i == 1;
    s.received_unix_ns = static_cast<int64_t>((1000 + i) * 1e9);
    samples.push_back(s);
  }
  std::vector<GpuSample> readings;
  for (int k = 0; k <= 12; ++k) {
    GpuSample g;
    g.job_id = job.id;
    g.attempt = 1;
    g.seq = k + 1;
    g.gpu_uuid = "GPU-x";
    g.time_unix_ns = static_cast<int64_t>((1000.5 + 0.4 * k) * 1e9);
    g.power_w = 100;
    g.energy_j = 100 * 0.4 * k;
    readings.push_back(g);
  }
  ASSERT_TRUE(store_->AppendSamplesSync(samples, readings).ok());

  Reopen();
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (manager_->Get(job.id)->job.gpu_telemetry.empty() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  Job recovered = manager_->Get(job.id)->job;
  ASSERT_EQ(recovered.gpu_telemetry.size(), 1u) << recovered.telemetry_note;
  EXPECT_NEAR(*recovered.gpu_telemetry[0].energy_per_image_j, 100 * 4.0 / 8, 1e-6);
}

// The most CPU slots an inventory may offer; 20,000,000 are refused at Register
// (job_manager_validation_test.cc).
TEST_F(JobManagerTest, AnAgentWithTheMostCpuSlotsRegistersAndTakesAJob) {
  FakeChannel channel;
  AddCpuAgent("huge", 4096, &channel);
  absl::StatusOr<SubmitResult> first = Submit(Spec(2));
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<SubmitResult> second = Submit(Spec(3));
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(channel.assignments.size(), 2u);
  EXPECT_EQ(channel.assignments[0].job_id, first->job_id);
  EXPECT_THAT(channel.assignments[0].device_indices, ::testing::ElementsAre(0, 1));
  EXPECT_EQ(channel.assignments[1].job_id, second->job_id);
  EXPECT_THAT(channel.assignments[1].device_indices, ::testing::ElementsAre(2, 3, 4));
  std::vector<AgentView> agents = manager_->ListAgents();
  ASSERT_EQ(agents.size(), 1u);
  EXPECT_EQ(agents[0].inventory.cpu_slots, 4096);
  EXPECT_EQ(agents[0].devices_busy, 5);
}

}  // namespace
}  // namespace bench
