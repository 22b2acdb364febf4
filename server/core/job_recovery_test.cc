// benchd killed with -9 while a spanning job runs (issue 27): what an agent was told is
// what the restarted benchd knows, so the job goes on in its attempt when the agents
// come back. A real store; the kill is a copy of the database files as they are on disk
// at the moment the agent has its answer.
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "common/fake_clock.h"
#include "server/core/job_manager.h"
#include "server/core/job_manager_test_support.h"

namespace bench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class JobRecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_recovery_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    std::filesystem::create_directories(dir_ + "/live");
    std::filesystem::create_directories(dir_ + "/killed");
    Start(dir_ + "/live/bench.db");
  }
  void TearDown() override {
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Start(const std::string& path) {
    manager_.reset();
    store_.reset();
    store_ = std::move(Store::Open(path)).value();
    JobManagerOptions options;
    options.agent_lease = absl::Seconds(30);
    options.clock = &clock_;
    manager_ = std::make_unique<JobManager>(store_.get(), options);
    ASSERT_TRUE(manager_->Recover().ok());
  }
  // What a kill -9 leaves: the database and its WAL as they are on disk now.
  void CopyAsKilled() {
    for (const char* suffix : {"", "-wal"}) {
      std::string from = dir_ + "/live/bench.db" + suffix;
      if (!std::filesystem::exists(from)) continue;
      std::filesystem::copy_file(from, dir_ + "/killed/bench.db" + suffix,
                                 std::filesystem::copy_options::overwrite_existing);
    }
  }
  static RankReport Succeeded(int rank) {
    RankReport report;
    report.rank = rank;
    report.outcome = RankOutcome::kSucceeded;
    report.summary = RankSummary{rank, 4, 8, 1.0, 0.1};
    report.parameters = 25557032;
    return report;
  }
  static RankReport Started(int rank) {
    RankReport report;
    report.rank = rank;
    report.outcome = RankOutcome::kStarted;
    return report;
  }

  // Submits `spec` over two registered agents and returns the RUNNING job's id and the
  // agents of its ranks 0 and 1.
  struct TwoRankJob {
    std::string id, first, second;
  };
  TwoRankJob RunTwoRankJob(const JobSpec& spec) {
    auto submitted = SubmitAndWait(*manager_, spec);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    if (!submitted.ok()) return {};
    JobView view = *manager_->Get(submitted->job_id);
    EXPECT_EQ(view.job.state, JobState::kRunning);
    EXPECT_EQ(view.job.placements.size(), 2u);
    if (view.job.placements.size() != 2) return {};
    return {submitted->job_id, view.job.placements[0].agent, view.job.placements[1].agent};
  }

  std::string dir_;
  FakeClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
};

TEST_F(JobRecoveryTest, ARankReportedDoneBeforeAKillDoesNotVanishAfterTheRestart) {
  FakeChannel one, two;
  RegisterCpuAgent(*manager_, "node-1", 1, &one);
  RegisterCpuAgent(*manager_, "node-2", 1, &two);
  auto submitted = SubmitAndWait(*manager_, SmallJobSpec(2));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const std::string id = submitted->job_id;
  JobView view = *manager_->Get(id);
  ASSERT_EQ(view.job.state, JobState::kRunning);
  ASSERT_EQ(view.job.placements.size(), 2u);
  const std::string first = view.job.placements[0].agent;   // rank 0, the master
  const std::string second = view.job.placements[1].agent;  // rank 1
  ASSERT_EQ(view.job.placements[0].ranks, std::vector<int>{0});
  ASSERT_TRUE(manager_->ReportStatus(first, id, 1, 29500, {Started(0)}).ok());
  ASSERT_TRUE(manager_->ReportStatus(second, id, 1, 0, {Started(1)}).ok());
  // Rank 0's measured step, which backs its summary.
  ASSERT_TRUE(UploadAndWait(*manager_, first, {{id, 1, 0, 2, 0.25, 2, 1.0, 0, 0.5, false}}).ok());

  // The store's writer is slow (here: another connection holds the write lock) when rank
  // 0's final report comes in.
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/live/bench.db").c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::promise<absl::Status> answered;
  std::future<absl::Status> answer = answered.get_future();
  manager_->ReportStatus(first, id, 1, 0, {Succeeded(0)},
                         [&](absl::Status status) { answered.set_value(std::move(status)); });
  // An answer given while nothing can be committed is one a kill -9 now takes back.
  const bool answered_before_the_commit =
      answer.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  if (answered_before_the_commit) CopyAsKilled();
  ASSERT_EQ(sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  absl::Status status = answer.get();
  // Refused (the writer gave up on the lock): the agent sends the report again.
  for (int tries = 0; !status.ok() && tries < 10; ++tries) {
    status = manager_->ReportStatus(first, id, 1, 0, {Succeeded(0)});
  }
  ASSERT_TRUE(status.ok()) << status;
  // Killed the moment the agent has its answer.
  if (!answered_before_the_commit) CopyAsKilled();
  EXPECT_FALSE(answered_before_the_commit) << "the report was answered before its commit";

  // benchd restarts on what the kill left. The first node's agent delivered rank 0's
  // final report, so it no longer lists the attempt; the second still runs rank 1.
  Start(dir_ + "/killed/bench.db");
  view = *manager_->Get(id);
  ASSERT_EQ(view.job.state, JobState::kRunning);
  EXPECT_EQ(view.job.summaries.count(0), 1u);
  FakeChannel one_again, two_again;
  RegisterCpuAgent(*manager_, first, 1, &one_again);
  for (int beat = 0; beat < 3; ++beat) ASSERT_TRUE(manager_->Heartbeat(first, {}).ok());
  RegisterCpuAgent(*manager_, second, 1, &two_again);
  for (int beat = 0; beat < 3; ++beat) {
    ASSERT_TRUE(manager_->Heartbeat(second, {{id, 1, {1}}}).ok());
    ASSERT_TRUE(manager_->Heartbeat(first, {}).ok());
  }
  view = *manager_->Get(id);
  EXPECT_EQ(view.job.state, JobState::kRunning);
  EXPECT_EQ(view.job.attempt, 1);
  EXPECT_EQ(view.job.requeues, 0);
  EXPECT_THAT(view.job.reason, Not(HasSubstr("vanished")));
  EXPECT_TRUE(two_again.cancels.empty());

  // Rank 1 ends: the job succeeds in its first attempt.
  ASSERT_TRUE(UploadAndWait(*manager_, second, {{id, 1, 1, 2, 0.25, 2, 1.0, 0, 0.5, false}}).ok());
  ASSERT_TRUE(manager_->ReportStatus(second, id, 1, 0, {Succeeded(1)}).ok());
  view = *manager_->Get(id);
  EXPECT_EQ(view.job.state, JobState::kSucceeded);
  EXPECT_EQ(view.job.attempt, 1);
  EXPECT_EQ(view.job.summaries.size(), 2u);
}

// Uploads wait while benchd waits for the agents of its running jobs (issue 27: at 1,024
// nodes, replayed uploads held up registrations until jobs failed for want of them).
TEST_F(JobRecoveryTest, UploadsAreRefusedUntilTheAgentsOfRunningJobsAreBackOrLost) {
  EXPECT_TRUE(manager_->UploadsAdmitted().ok());
  FakeChannel one, two, three;
  RegisterCpuAgent(*manager_, "node-1", 1, &one);
  RegisterCpuAgent(*manager_, "node-2", 1, &two);
  RegisterCpuAgent(*manager_, "node-3", 1, &three);  // idle: not waited for
  const auto [id, first, second] = RunTwoRankJob(SmallJobSpec(2));
  ASSERT_FALSE(id.empty());
  EXPECT_TRUE(manager_->UploadsAdmitted().ok());

  Start(dir_ + "/live/bench.db");  // benchd restarted
  absl::Status refused = manager_->UploadsAdmitted();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(refused.message(), HasSubstr("waits for 2 agents"));
  FakeChannel first_again, second_again, third_again;
  RegisterCpuAgent(*manager_, "node-3", 1, &third_again);
  EXPECT_THAT(manager_->UploadsAdmitted().message(), HasSubstr("waits for 2 agents"));
  RegisterCpuAgent(*manager_, first, 1, &first_again);
  EXPECT_THAT(manager_->UploadsAdmitted().message(), HasSubstr("waits for 1 agent "));
  RegisterCpuAgent(*manager_, second, 1, &second_again);
  EXPECT_TRUE(manager_->UploadsAdmitted().ok());
  ASSERT_TRUE(UploadAndWait(*manager_, second, {{id, 1, 1, 2, 0.25, 2, 1.0, 0, 0.5, false}}).ok());

  // Restarted again; only one agent comes back. Once the grace has passed, the other is
  // lost (its job handled as for any lost node) and uploads are taken again.
  Start(dir_ + "/live/bench.db");
  manager_->BeginReconcileGrace();
  FakeChannel first_third;
  RegisterCpuAgent(*manager_, first, 1, &first_third);
  EXPECT_THAT(manager_->UploadsAdmitted().message(), HasSubstr("waits for 1 agent "));
  clock_.Advance(absl::Seconds(29));
  ASSERT_TRUE(manager_->Heartbeat(first, {{id, 1, {0}}}).ok());
  manager_->CheckAgents(clock_.SteadyNow());
  EXPECT_FALSE(manager_->UploadsAdmitted().ok());
  clock_.Advance(absl::Seconds(2));
  ASSERT_TRUE(manager_->Heartbeat(first, {{id, 1, {0}}}).ok());
  manager_->CheckAgents(clock_.SteadyNow());
  EXPECT_TRUE(manager_->UploadsAdmitted().ok());
  JobView view = *manager_->Get(id);
  ASSERT_FALSE(view.job.history.empty());
  bool lost_its_node = false;
  for (const auto& change : view.job.history) {
    lost_its_node |= absl::StrContains(change.reason, "did not reconnect");
  }
  EXPECT_TRUE(lost_its_node) << view.job.reason;
}

// A job's hang clock stops while uploads are refused (nothing can be stored then) and
// starts again when they are taken.
TEST_F(JobRecoveryTest, NoJobHangsWhileUploadsWaitForTheAgentsAfterARestart) {
  FakeChannel one, two;
  RegisterCpuAgent(*manager_, "node-1", 1, &one);
  RegisterCpuAgent(*manager_, "node-2", 1, &two);
  JobSpec spec = SmallJobSpec(2);
  spec.hang_timeout_s = 5;
  const auto [id, first, second] = RunTwoRankJob(spec);
  ASSERT_FALSE(id.empty());

  Start(dir_ + "/live/bench.db");
  manager_->BeginReconcileGrace();
  FakeChannel first_again, second_again;
  RegisterCpuAgent(*manager_, first, 1, &first_again);
  clock_.Advance(absl::Seconds(20));  // past the hang timeout, within the grace
  ASSERT_TRUE(manager_->Heartbeat(first, {{id, 1, {0}}}).ok());
  manager_->CheckLimits(clock_.Now());
  EXPECT_EQ(manager_->Get(id)->job.state, JobState::kRunning);

  RegisterCpuAgent(*manager_, second, 1, &second_again);
  ASSERT_TRUE(manager_->UploadsAdmitted().ok());
  manager_->CheckLimits(clock_.Now());
  EXPECT_EQ(manager_->Get(id)->job.state, JobState::kRunning);
  clock_.Advance(absl::Seconds(6));  // uploads taken, nothing stored for 6 s
  manager_->CheckLimits(clock_.Now());
  JobView view = *manager_->Get(id);
  EXPECT_EQ(view.job.state, JobState::kFailed);
  EXPECT_THAT(view.job.reason, HasSubstr("hung: no iteration stored for 6s"));
}

}  // namespace
}  // namespace bench
