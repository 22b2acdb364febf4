// The controller's timers and the agents' per-second RPCs cost in proportion to the live
// jobs, not to the history: beside 10,000 ended jobs recovered from a real store, they
// still act on the live jobs (a limit fires, a reconnect re-sends, a lost agent's job is
// requeued, the Slurm poll sees its work) while the job table's cost counters
// (JobManager::JobWalkCounts) show that no call walked every job and that each visited no
// more jobs than are live. Time is a FakeClock's; nothing is timed.
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_format.h"
#include "common/fake_clock.h"
#include "server/core/job_manager.h"
#include "server/core/job_manager_test_support.h"

namespace bench {
namespace {

using ::testing::HasSubstr;

constexpr int kEnded = 10000;

// An ended one-slot CPU job (1 in 20 failed, 1 in 50 cancelled, the rest succeeded);
// every 1,000th still holds a Slurm allocation that was not released.
Job EndedJob(int64_t seq) {
  Job job;
  job.seq = seq;
  job.id = absl::StrFormat("job-%06d", seq);
  job.spec = SmallJobSpec(1);
  job.created = absl::FromUnixSeconds(1'700'000'000) + absl::Seconds(seq);
  job.state = seq % 20 == 7    ? JobState::kFailed
              : seq % 50 == 11 ? JobState::kCancelled
                               : JobState::kSucceeded;
  job.history.push_back({JobState::kQueued, "submitted", job.created});
  job.history.push_back({job.state, JobStateText(job.state), job.created + absl::Seconds(1)});
  job.attempt = 1;
  job.device_kind = DeviceKind::kCpu;
  job.placements.push_back({"old-node", {0}, {0}});
  if (seq % 1000 == 0) {
    job.allocation = {"slurm", absl::StrCat(seq), "COMPLETED", "", "node1", /*ended=*/false};
  }
  return job;
}

class JobManagerWalksTest : public ::testing::Test {
 protected:
  // One database of kEnded ended jobs for the suite; each test recovers from its own copy.
  static void SetUpTestSuite() {
    char pattern[] = "/tmp/bench_manager_walks_test_XXXXXX";
    base_dir_ = new std::string(mkdtemp(pattern));
    std::unique_ptr<Store> store = std::move(Store::Open(*base_dir_ + "/base.db")).value();
    std::vector<std::future<absl::Status>> written;
    for (int64_t seq = 1; seq <= kEnded; ++seq) {
      Job job = EndedJob(seq);
      auto inserted = std::make_shared<std::promise<absl::Status>>();
      auto updated = std::make_shared<std::promise<absl::Status>>();
      written.push_back(inserted->get_future());
      written.push_back(updated->get_future());
      store->InsertJobAsync(job, [inserted](absl::Status s) { inserted->set_value(s); });
      store->UpdateJobAsync(job, [updated](absl::Status s) { updated->set_value(s); });
    }
    for (auto& w : written) ASSERT_TRUE(w.get().ok());
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*base_dir_);
    delete base_dir_;
  }

  void SetUp() override { Start(JobManagerOptions{}); }
  void TearDown() override {
    manager_.reset();
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  void Start(JobManagerOptions options) {
    manager_.reset();
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
    char pattern[] = "/tmp/bench_manager_walks_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    std::filesystem::copy_file(*base_dir_ + "/base.db", dir_ + "/bench.db");
    options.clock = &clock_;
    store_ = std::move(Store::Open(dir_ + "/bench.db")).value();
    manager_ = std::make_unique<JobManager>(store_.get(), options);
    ASSERT_TRUE(manager_->Recover().ok());
  }
  std::string Submit(JobSpec spec) {
    absl::StatusOr<SubmitResult> result = SubmitAndWait(*manager_, std::move(spec));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? result->job_id : "";
  }
  JobView View(const std::string& id) { return *manager_->Get(id); }
  static RankReport Started(int rank) {
    RankReport report;
    report.rank = rank;
    return report;
  }
  // What the manager's walks cost since the last call (or since the test began).
  JobManager::JobWalks Walked() {
    JobManager::JobWalks now = manager_->JobWalkCounts();
    JobManager::JobWalks since{now.full_walks - last_.full_walks,
                               now.indexed_visits - last_.indexed_visits};
    last_ = now;
    return since;
  }

  static std::string* base_dir_;
  std::string dir_;
  FakeClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
  JobManager::JobWalks last_;
};

std::string* JobManagerWalksTest::base_dir_ = nullptr;

TEST_F(JobManagerWalksTest, AWallTimeLimitStillFiresAmongTenThousandEndedJobsVisitingOnlyLiveOnes) {
  FakeChannel channel;
  RegisterCpuAgent(*manager_, "a", 2, &channel);
  JobSpec limited = SmallJobSpec(1);
  limited.wall_time_limit_s = 60;
  const std::string limited_id = Submit(limited);
  const std::string other_id = Submit(SmallJobSpec(1));
  ASSERT_EQ(View(limited_id).job.state, JobState::kRunning);
  ASSERT_EQ(View(other_id).job.state, JobState::kRunning);
  Walked();
  clock_.Advance(absl::Seconds(59));
  manager_->CheckLimits(clock_.Now());
  EXPECT_EQ(View(limited_id).job.state, JobState::kRunning);
  JobManager::JobWalks walked = Walked();
  EXPECT_EQ(walked.full_walks, 0);
  EXPECT_EQ(walked.indexed_visits, 2);  // the two running jobs, none of the ended ones
  clock_.Advance(absl::Seconds(2));
  manager_->CheckLimits(clock_.Now());
  JobView view = View(limited_id);
  EXPECT_EQ(view.job.state, JobState::kFailed);
  EXPECT_THAT(view.job.reason, HasSubstr("wall-time limit"));
  EXPECT_EQ(View(other_id).job.state, JobState::kRunning);
  ASSERT_FALSE(channel.cancels.empty());
  EXPECT_EQ(channel.cancels.back().job_id, limited_id);
  walked = Walked();
  EXPECT_EQ(walked.full_walks, 0);
  EXPECT_LE(walked.indexed_visits, 2);
  // The ended job is not visited again.
  manager_->CheckLimits(clock_.Now());
  EXPECT_EQ(Walked().indexed_visits, 1);
}

TEST_F(JobManagerWalksTest, HeartbeatsReportsAndUploadsWalkNoJobsWhenNothingIsQueued) {
  FakeChannel channel;
  RegisterCpuAgent(*manager_, "a", 1, &channel);
  const std::string id = Submit(SmallJobSpec(1));
  ASSERT_EQ(View(id).job.state, JobState::kRunning);
  Walked();
  ASSERT_TRUE(manager_->ReportStatus("a", id, 1, 29500, {Started(0)}).ok());
  ASSERT_TRUE(manager_->Heartbeat("a", {{id, 1, {0}}}).ok());
  IterationSample sample;
  sample.job_id = id;
  sample.attempt = 1;
  sample.iteration = 2;  // the first measured one
  sample.step_time_s = 0.1;
  sample.images = 2;
  sample.loss = 1.0;
  sample.elapsed_s = 0.2;
  absl::StatusOr<AppendResult> uploaded = UploadAndWait(*manager_, "a", {sample});
  ASSERT_TRUE(uploaded.ok()) << uploaded.status();
  EXPECT_EQ(uploaded->stored, 1);
  JobManager::JobWalks walked = Walked();
  EXPECT_EQ(walked.full_walks, 0);
  EXPECT_EQ(walked.indexed_visits, 0);
  // With a job waiting, its submit's scheduling pass visits the live jobs only.
  const std::string waiting = Submit(SmallJobSpec(1));
  ASSERT_EQ(View(waiting).job.state, JobState::kQueued);
  walked = Walked();
  EXPECT_EQ(walked.full_walks, 0);
  EXPECT_EQ(walked.indexed_visits, 2);
  EXPECT_EQ(View(waiting).queue_position, 1);
}

TEST_F(JobManagerWalksTest, AJobWaitsWithoutAPassPerHeartbeatAndStartsWhenADeviceIsFreed) {
  FakeChannel channel;
  RegisterCpuAgent(*manager_, "a", 1, &channel);
  const std::string id = Submit(SmallJobSpec(1));
  const std::string waiting = Submit(SmallJobSpec(1));
  ASSERT_EQ(View(waiting).job.state, JobState::kQueued);
  Walked();
  // Heartbeats and a report that change nothing the queue depends on: no pass, the
  // waiting job keeps its place, however much time passes.
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(absl::Seconds(10));
    ASSERT_TRUE(manager_->Heartbeat("a", {{id, 1, {0}}}).ok());
  }
  ASSERT_TRUE(manager_->ReportStatus("a", id, 1, 29500, {Started(0)}).ok());
  JobManager::JobWalks walked = Walked();
  EXPECT_EQ(walked.full_walks, 0);
  EXPECT_EQ(walked.indexed_visits, 0);
  EXPECT_EQ(View(waiting).job.state, JobState::kQueued);
  EXPECT_EQ(View(waiting).queue_position, 1);
  // The running job's rank ends: its device is freed and the waiting job takes it.
  RankReport succeeded = Started(0);
  succeeded.outcome = RankOutcome::kSucceeded;
  ASSERT_TRUE(manager_->ReportStatus("a", id, 1, 29500, {succeeded}).ok());
  EXPECT_EQ(View(id).job.state, JobState::kSucceeded);
  EXPECT_EQ(View(waiting).job.state, JobState::kRunning);
  ASSERT_EQ(channel.assignments.size(), 2u);
  EXPECT_EQ(channel.assignments[1].job_id, waiting);
  EXPECT_EQ(Walked().full_walks, 0);
}

TEST_F(JobManagerWalksTest, AReconnectResendsTheUndeliveredAssignmentVisitingOnlyLiveJobs) {
  FakeChannel first;
  RegisterCpuAgent(*manager_, "a", 1, &first);
  const std::string id = Submit(SmallJobSpec(1));
  ASSERT_EQ(first.assignments.size(), 1u);
  manager_->DetachChannel("a", &first);
  Walked();
  FakeChannel second;
  ASSERT_TRUE(manager_->AttachChannel("a", &second).ok());
  ASSERT_EQ(second.assignments.size(), 1u);  // not acknowledged: sent again
  EXPECT_EQ(second.assignments[0].job_id, id);
  JobManager::JobWalks walked = Walked();
  EXPECT_EQ(walked.full_walks, 0);
  EXPECT_EQ(walked.indexed_visits, 1);
}

TEST_F(JobManagerWalksTest, ALostAgentsJobIsRequeuedVisitingOnlyLiveJobs) {
  FakeChannel channel;
  RegisterCpuAgent(*manager_, "a", 1, &channel);
  const std::string id = Submit(SmallJobSpec(1));
  ASSERT_TRUE(manager_->ReportStatus("a", id, 1, 29500, {Started(0)}).ok());
  Walked();
  ASSERT_TRUE(manager_->Deregister("a", "maintenance").ok());
  JobView view = View(id);
  EXPECT_EQ(view.job.state, JobState::kQueued);
  EXPECT_EQ(view.job.requeues, 1);
  EXPECT_THAT(view.job.history.back().reason, HasSubstr("node left: agent a stopped"));
  JobManager::JobWalks walked = Walked();
  EXPECT_EQ(walked.full_walks, 0);
  EXPECT_LE(walked.indexed_visits, 2);  // the lost agent's job, then the queue's pass
  // The lease check: nothing expires, nothing is walked.
  clock_.Advance(absl::Seconds(1));
  manager_->CheckAgents(clock_.SteadyNow());
  EXPECT_EQ(Walked().full_walks, 0);
}

TEST_F(JobManagerWalksTest, FleetCountsAndTheQueueComeFromTheIndexes) {
  int64_t failed = 0, cancelled = 0;
  for (int64_t seq = 1; seq <= kEnded; ++seq) {
    JobState state = EndedJob(seq).state;
    failed += state == JobState::kFailed;
    cancelled += state == JobState::kCancelled;
  }
  FakeChannel channel;
  RegisterCpuAgent(*manager_, "a", 1, &channel);
  const std::string running = Submit(SmallJobSpec(1));
  const std::string queued = Submit(SmallJobSpec(1));
  Walked();
  FleetCounts fleet = manager_->Fleet();
  EXPECT_EQ(fleet.running, 1);
  EXPECT_EQ(fleet.queued, 1);
  EXPECT_EQ(fleet.failed, failed);
  EXPECT_EQ(fleet.cancelled, cancelled);
  EXPECT_EQ(fleet.succeeded, kEnded - failed - cancelled);
  std::vector<JobView> queue = manager_->Queue();
  ASSERT_EQ(queue.size(), 1u);
  EXPECT_EQ(queue[0].job.id, queued);
  JobManager::JobWalks walked = Walked();
  EXPECT_EQ(walked.full_walks, 0);
  EXPECT_EQ(walked.indexed_visits, 2);  // Queue's: the two live jobs; Fleet visits none
  // The counts follow a job that ends.
  ASSERT_TRUE(manager_->Cancel(queued).ok());
  fleet = manager_->Fleet();
  EXPECT_EQ(fleet.cancelled, cancelled + 1);
  EXPECT_EQ(fleet.running, 1);
  EXPECT_EQ(fleet.queued, 0);
  EXPECT_TRUE(manager_->Queue().empty());
  EXPECT_EQ(View(running).job.state, JobState::kRunning);
}

TEST_F(JobManagerWalksTest, TheSlurmPollSeesItsWorkVisitingOnlyLiveJobsAndLiveAllocations) {
  JobManagerOptions options;
  options.external_allocation = true;
  Start(options);
  const std::string waiting = Submit(SmallJobSpec(1));
  const std::string allocated = Submit(SmallJobSpec(1));
  ASSERT_TRUE(
      manager_->UpdateAllocation(allocated, {"slurm", "77", "PENDING", "Resources", "", false})
          .ok());
  Walked();
  AllocationWork work = manager_->PendingAllocationWork();
  ASSERT_EQ(work.to_allocate.size(), 1u);
  EXPECT_EQ(work.to_allocate[0].job_id, waiting);
  ASSERT_EQ(work.to_poll.size(), 1u);
  EXPECT_EQ(work.to_poll.count(allocated), 1u);
  // The ended jobs still holding an allocation (every 1,000th) are to be released.
  ASSERT_EQ(work.to_release.size(), static_cast<size_t>(kEnded / 1000));
  EXPECT_EQ(work.to_release.count(absl::StrFormat("job-%06d", 1000)), 1u);
  JobManager::JobWalks walked = Walked();
  EXPECT_EQ(walked.full_walks, 0);
  EXPECT_EQ(walked.indexed_visits, 2 + 1 + kEnded / 1000);  // live jobs, then live allocations
  // Released: an allocation seen ended leaves the poll.
  ASSERT_TRUE(
      manager_->UpdateAllocation("job-001000", {"slurm", "1000", "COMPLETED", "", "node1", true})
          .ok());
  ASSERT_TRUE(
      manager_->UpdateAllocation(allocated, {"slurm", "77", "CANCELLED", "", "", true}).ok());
  EXPECT_EQ(View(allocated).job.state, JobState::kFailed);
  work = manager_->PendingAllocationWork();
  EXPECT_EQ(work.to_poll.size(), 0u);
  EXPECT_EQ(work.to_release.size(), static_cast<size_t>(kEnded / 1000 - 1));
  EXPECT_EQ(work.to_allocate.size(), 1u);
}

}  // namespace
}  // namespace bench
