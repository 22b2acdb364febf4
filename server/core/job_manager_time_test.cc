// The JobManager's decisions by time (agents' leases, the reconcile grace after a
// restart, wall-time and hang limits, timestamps), driven by a FakeClock: time moves only
// when a test advances it, so nothing sleeps and no bound depends on the machine's load.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "server/core/job_manager.h"
#include "server/core/job_manager_test_support.h"

namespace bench {
namespace {

using ::testing::HasSubstr;

class JobManagerTimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_manager_time_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    options_.agent_lease = absl::Seconds(30);
    options_.reconcile_grace = absl::Seconds(60);
    options_.clock = &clock_;
    Restart();
  }
  void TearDown() override {
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // benchd restarts on the same database (the fake clock goes on).
  void Restart() {
    manager_.reset();
    store_.reset();  // commits what is queued
    store_ = std::move(Store::Open(dir_ + "/bench.db")).value();
    manager_ = std::make_unique<JobManager>(store_.get(), options_);
    ASSERT_TRUE(manager_->Recover().ok());
  }
  void AddCpuAgent(const std::string& name, int slots, FakeChannel* channel) {
    RegisterCpuAgent(*manager_, name, slots, channel);
  }
  std::string Submit(JobSpec spec) {
    absl::StatusOr<SubmitResult> result = SubmitAndWait(*manager_, std::move(spec));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? result->job_id : "";
  }
  absl::StatusOr<AppendResult> Upload(const std::string& agent,
                                      std::vector<IterationSample> samples) {
    return UploadAndWait(*manager_, agent, std::move(samples));
  }
  static IterationSample Iteration(const std::string& job_id, int attempt, int rank,
                                   int iteration) {
    return {job_id, attempt, rank, iteration, 0.1, 2, 1.0, 0, 0.1 * iteration, false};
  }
  static RankReport Report(int rank, RankOutcome outcome) {
    RankReport report;
    report.rank = rank;
    report.outcome = outcome;
    return report;
  }
  static JobSpec Spec(int devices) { return SmallJobSpec(devices, /*iterations=*/50); }
  JobView View(const std::string& id) { return *manager_->Get(id); }
  void Advance(absl::Duration by) { clock_.Advance(by); }
  void CheckAgents() { manager_->CheckAgents(clock_.SteadyNow()); }
  void CheckLimits() { manager_->CheckLimits(clock_.Now()); }

  std::string dir_;
  FakeClock clock_;  // outlives the managers that read it
  JobManagerOptions options_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
};

TEST_F(JobManagerTimeTest, AnAgentHeardFromKeepsItsLeaseAndASilentOneLosesIt) {
  FakeChannel a, b;
  AddCpuAgent("a", 1, &a);
  AddCpuAgent("b", 1, &b);
  const std::string id = Submit(Spec(2));  // rank 0 on a, rank 1 on b
  ASSERT_EQ(View(id).job.state, JobState::kRunning);
  // Rank 0 started with its rendezvous port: rank 1's assignment goes to b.
  ASSERT_TRUE(manager_->ReportStatus("a", id, 1, 29500, {Report(0, RankOutcome::kStarted)}).ok());
  ASSERT_EQ(b.assignments.size(), 1u);
  // 50 s since they registered, but a heartbeat and an upload 25 s ago renewed a and b.
  Advance(absl::Seconds(25));
  ASSERT_TRUE(manager_->Heartbeat("a", {{id, 1, {0}}}).ok());
  ASSERT_TRUE(Upload("b", {Iteration(id, 1, 1, 1)}).ok());
  Advance(absl::Seconds(25));
  CheckAgents();
  EXPECT_EQ(View(id).job.state, JobState::kRunning);
  EXPECT_TRUE(manager_->AgentLive("a") && manager_->AgentLive("b"));
  // b keeps beating; a falls silent for exactly its lease.
  ASSERT_TRUE(manager_->Heartbeat("b", {{id, 1, {1}}}).ok());
  Advance(absl::Seconds(4));
  CheckAgents();
  EXPECT_TRUE(manager_->AgentLive("a"));
  Advance(absl::Seconds(1));
  CheckAgents();
  EXPECT_FALSE(manager_->AgentLive("a"));
  EXPECT_TRUE(manager_->AgentLive("b"));
  EXPECT_EQ(a.closed.code(), absl::StatusCode::kUnavailable);
  // Its job goes back to the queue; b is told to stop rank 1 of attempt 1.
  JobView view = View(id);
  EXPECT_EQ(view.job.state, JobState::kQueued);
  EXPECT_EQ(view.job.requeues, 1);
  EXPECT_EQ(view.job.history.back().reason,
            "node lost: agent a not heard from for 30s; requeued (1 of 1)");
  ASSERT_EQ(b.cancels.size(), 1u);
  EXPECT_EQ(b.cancels[0].attempt, 1);
  // a's late samples of attempt 1 are fenced off.
  FakeChannel a2;
  AddCpuAgent("a", 1, &a2);
  EXPECT_EQ(Upload("a", {Iteration(id, 1, 0, 2)})->stored, 0);
}

TEST_F(JobManagerTimeTest, ALostNodeRequeuesTheJobOnceThenFailsIt) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  const std::string id = Submit(Spec(1));
  Advance(absl::Seconds(31));
  CheckAgents();
  EXPECT_EQ(View(id).job.state, JobState::kQueued);
  // It returns, runs attempt 2, and falls silent again: no requeue is left.
  FakeChannel a2;
  AddCpuAgent("a", 1, &a2);
  EXPECT_EQ(View(id).job.attempt, 2);
  Advance(absl::Seconds(29));
  CheckAgents();
  EXPECT_EQ(View(id).job.state, JobState::kRunning);
  Advance(absl::Seconds(2));
  CheckAgents();
  JobView view = View(id);
  EXPECT_EQ(view.job.state, JobState::kFailed);
  EXPECT_EQ(view.job.reason,
            "node lost: agent a not heard from for 30s; not requeued again (1 requeue already, "
            "--requeue_on_node_lost=1)");
}

TEST_F(JobManagerTimeTest, TheReconcileGraceStartsWhenBenchdServesNotWhenItRecovers) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  const std::string id = Submit(Spec(1));
  Restart();
  // Recovery took 50 s before benchd served: the grace (60 s) starts only then.
  Advance(absl::Seconds(50));
  manager_->BeginReconcileGrace();
  Advance(absl::Seconds(59));
  CheckAgents();
  EXPECT_EQ(View(id).job.state, JobState::kRunning);
  Advance(absl::Seconds(2));
  CheckAgents();
  JobView view = View(id);
  EXPECT_EQ(view.job.state, JobState::kQueued);
  EXPECT_EQ(
      view.job.history.back().reason,
      "node lost: agent a did not reconnect within 1m of benchd's restart; requeued (1 of 1)");
}

TEST_F(JobManagerTimeTest, AnAgentThatReconnectsWithinTheGraceKeepsItsJob) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  const std::string id = Submit(Spec(1));
  Restart();
  manager_->BeginReconcileGrace();
  Advance(absl::Seconds(45));
  FakeChannel a2;
  AddCpuAgent("a", 1, &a2);
  ASSERT_TRUE(manager_->Heartbeat("a", {{id, 1, {0}}}).ok());
  // Past the grace, but within the lease of its heartbeat.
  Advance(absl::Seconds(29));
  CheckAgents();
  EXPECT_EQ(View(id).job.state, JobState::kRunning);
  EXPECT_EQ(View(id).job.attempt, 1);
  EXPECT_TRUE(a2.cancels.empty());
}

TEST_F(JobManagerTimeTest, TheHangTimeoutCountsFromTheLastStoredIteration) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  JobSpec spec = Spec(1);
  spec.hang_timeout_s = 600;
  const std::string id = Submit(spec);
  Advance(absl::Seconds(500));
  ASSERT_EQ(Upload("a", {Iteration(id, 1, 0, 1)})->stored, 1);
  Advance(absl::Seconds(500));  // 1000 s since placement, 500 since progress
  CheckLimits();
  EXPECT_EQ(View(id).job.state, JobState::kRunning);
  // A repeated iteration stores nothing: it is no progress.
  ASSERT_EQ(Upload("a", {Iteration(id, 1, 0, 1)})->stored, 0);
  Advance(absl::Seconds(101));
  CheckLimits();
  JobView view = View(id);
  EXPECT_EQ(view.job.state, JobState::kFailed);
  EXPECT_EQ(view.job.reason,
            "hung: no iteration stored for 10m1s (hang timeout 10m); its ranks were stopped");
  ASSERT_EQ(a.cancels.size(), 1u);
}

TEST_F(JobManagerTimeTest, TheWallTimeLimitCountsFromPlacementNotFromSubmission) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  const std::string first = Submit(Spec(1));
  JobSpec walled = Spec(1);
  walled.wall_time_limit_s = 100;
  const std::string second = Submit(walled);
  EXPECT_EQ(View(second).job.state, JobState::kQueued);
  Advance(absl::Seconds(300));
  ASSERT_TRUE(manager_->Cancel(first).ok());
  ASSERT_TRUE(manager_->ReportStatus("a", first, 1, 0, {Report(0, RankOutcome::kCancelled)}).ok());
  ASSERT_EQ(View(second).job.state, JobState::kRunning);
  Advance(absl::Seconds(100));
  CheckLimits();
  EXPECT_EQ(View(second).job.state, JobState::kRunning);
  Advance(absl::Seconds(1));
  CheckLimits();
  JobView view = View(second);
  EXPECT_EQ(view.job.state, JobState::kFailed);
  EXPECT_EQ(view.job.reason,
            "wall-time limit: attempt 1 ran longer than 1m40s; its ranks were stopped");
}

TEST_F(JobManagerTimeTest, TheJobsTimestampsAreTheClocks) {
  FakeChannel a;
  AddCpuAgent("a", 1, &a);
  const absl::Time start = clock_.Now();
  const std::string first = Submit(Spec(1));
  Advance(absl::Seconds(7));
  const std::string second = Submit(Spec(1));
  Advance(absl::Seconds(5));
  ASSERT_TRUE(manager_->Cancel(first).ok());
  JobView view = View(first);
  EXPECT_EQ(view.job.created, start);
  ASSERT_EQ(view.job.history.size(), 3u);  // submitted, running, cancelled
  EXPECT_EQ(view.job.history[0].time, start);
  EXPECT_EQ(view.job.history[1].time, start);
  EXPECT_EQ(view.job.history[2].time, start + absl::Seconds(12));
  EXPECT_EQ(View(second).job.created, start + absl::Seconds(7));
  // Stored as given: the restarted manager reads the same times back.
  Restart();
  EXPECT_EQ(View(first).job.history[2].time, start + absl::Seconds(12));
}

}  // namespace
}  // namespace bench
