#include "worker/agent/rank_registry.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/subprocess.h"
#include "worker/agent/temp_dir.h"

namespace bench::agent {
namespace {

class RankRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(root_.ok());
    dir_ = root_.path() + "/state/ranks";
  }

  std::unique_ptr<RankRegistry> Open() {
    auto registry = RankRegistry::Open(dir_);
    EXPECT_TRUE(registry.ok()) << registry.status();
    return registry.ok() ? std::move(*registry) : nullptr;
  }
  // A child in its own process group (as the agent starts ranks), with a grandchild in
  // the same group.
  static std::unique_ptr<Subprocess> StartSleeper() {
    SubprocessOptions options;
    options.argv = {"/bin/sh", "-c", "sleep 60 & sleep 60; wait"};
    options.stdout_mode = SubprocessOptions::Output::kDiscard;
    options.stderr_mode = SubprocessOptions::Output::kDiscard;
    auto process = Subprocess::Start(options);
    EXPECT_TRUE(process.ok()) << process.status();
    return process.ok() ? std::move(*process) : nullptr;
  }
  bool RecordExists(pid_t pid) {
    return access((dir_ + "/rank-" + std::to_string(pid)).c_str(), F_OK) == 0;
  }

  TempDir root_{"rank_registry_test_"};
  std::string dir_;
};

TEST_F(RankRegistryTest, RecordsRoundTrip) {
  RankRecord record{"job with spaces=1", 3, 7, 1234, 1234, 987654321};
  auto parsed = ParseRankRecord(FormatRankRecord(record));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->job_id, record.job_id);
  EXPECT_EQ(parsed->attempt, 3);
  EXPECT_EQ(parsed->rank, 7);
  EXPECT_EQ(parsed->pid, 1234);
  EXPECT_EQ(parsed->pgid, 1234);
  EXPECT_EQ(parsed->start_time, 987654321u);
  EXPECT_FALSE(ParseRankRecord("pid=1 job=x").ok());
  EXPECT_FALSE(ParseRankRecord("garbage").ok());
}

TEST_F(RankRegistryTest, StartTimeOfALiveProcessAndNoneForAnAbsentOne) {
  auto self = ProcessStartTime(getpid());
  ASSERT_TRUE(self.ok()) << self.status();
  EXPECT_GT(*self, 0u);
  auto sleeper = StartSleeper();
  ASSERT_NE(sleeper, nullptr);
  auto child = ProcessStartTime(sleeper->pid());
  ASSERT_TRUE(child.ok());
  EXPECT_GE(*child, *self);
  EXPECT_TRUE(ProcessGroupAlive(sleeper->pid()));
  sleeper->SignalGroup(SIGKILL);
  // Killed but not reaped: a zombie counts as gone.
  for (int i = 0; i < 500 && ProcessStartTime(sleeper->pid()).ok(); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(absl::IsNotFound(ProcessStartTime(sleeper->pid()).status()));
  sleeper->Wait();
  EXPECT_TRUE(absl::IsNotFound(ProcessStartTime(sleeper->pid()).status()));
}

TEST_F(RankRegistryTest, AFreshRegistryKillsARecordedRankStillRunning) {
  auto sleeper = StartSleeper();
  ASSERT_NE(sleeper, nullptr);
  pid_t pid = sleeper->pid();
  {
    auto registry = Open();
    ASSERT_NE(registry, nullptr);
    ASSERT_TRUE(registry->RecordProcess("job-1", 2, 3, pid).ok());
    EXPECT_TRUE(RecordExists(pid));
  }  // the agent dies; its rank runs on
  ASSERT_FALSE(sleeper->TryWait().has_value());

  ::testing::internal::CaptureStderr();
  auto registry = Open();
  auto leftovers = registry->KillLeftovers(absl::Seconds(10));
  std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(leftovers.size(), 1u);
  EXPECT_TRUE(leftovers[0].was_alive);
  EXPECT_TRUE(leftovers[0].gone);
  EXPECT_EQ(leftovers[0].record.job_id, "job-1");
  EXPECT_EQ(leftovers[0].record.attempt, 2);
  EXPECT_EQ(leftovers[0].record.rank, 3);
  EXPECT_EQ(leftovers[0].record.pid, pid);
  EXPECT_THAT(log, ::testing::HasSubstr("rank 3 of job job-1 attempt 2 (pid " +
                                        std::to_string(pid) + ")"));
  // Killed with SIGKILL (it had exited by the time KillLeftovers returned).
  auto exit_code = sleeper->TryWait();
  ASSERT_TRUE(exit_code.has_value());
  EXPECT_EQ(*exit_code, -SIGKILL);
  // The whole group went: no process of it is left.
  EXPECT_FALSE(ProcessGroupAlive(pid));
  EXPECT_FALSE(RecordExists(pid));
  EXPECT_TRUE(registry->KillLeftovers().empty());
}

TEST_F(RankRegistryTest, ARecycledPidIsNotKilled) {
  auto sleeper = StartSleeper();
  ASSERT_NE(sleeper, nullptr);
  auto start = ProcessStartTime(sleeper->pid());
  ASSERT_TRUE(start.ok());
  {
    auto registry = Open();
    // The recorded rank started at another time: this pid is now another process.
    RankRecord record{"job-1", 1, 0, sleeper->pid(), sleeper->pid(), *start + 1};
    ASSERT_TRUE(registry->Record(record).ok());
  }
  ::testing::internal::CaptureStderr();
  auto leftovers = Open()->KillLeftovers();
  ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(leftovers.size(), 1u);
  EXPECT_FALSE(leftovers[0].was_alive);
  EXPECT_FALSE(sleeper->TryWait().has_value()) << "the other process still runs";
  EXPECT_EQ(kill(sleeper->pid(), 0), 0);
  EXPECT_FALSE(RecordExists(sleeper->pid()));
  sleeper->SignalGroup(SIGKILL);
  sleeper->Wait();
}

TEST_F(RankRegistryTest, AnAbsentPidIsOnlyForgotten) {
  auto sleeper = StartSleeper();
  ASSERT_NE(sleeper, nullptr);
  pid_t pid = sleeper->pid();
  auto start = ProcessStartTime(pid);
  ASSERT_TRUE(start.ok());
  sleeper->SignalGroup(SIGKILL);
  sleeper->Wait();
  {
    auto registry = Open();
    ASSERT_TRUE(registry->Record(RankRecord{"job-9", 1, 0, pid, pid, *start}).ok());
  }
  ::testing::internal::CaptureStderr();
  auto leftovers = Open()->KillLeftovers();
  std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(leftovers.size(), 1u);
  EXPECT_FALSE(leftovers[0].was_alive);
  EXPECT_THAT(log, ::testing::HasSubstr("no longer running"));
  EXPECT_FALSE(RecordExists(pid));
}

TEST_F(RankRegistryTest, ForgetRemovesTheRecord) {
  auto registry = Open();
  ASSERT_TRUE(registry->Record(RankRecord{"job-1", 1, 0, 424242, 424242, 5}).ok());
  EXPECT_TRUE(RecordExists(424242));
  registry->Forget(424242);
  EXPECT_FALSE(RecordExists(424242));
  registry->Forget(424242);  // twice is fine
}

TEST_F(RankRegistryTest, AnUnreadableRecordIsRemoved) {
  auto registry = Open();
  ASSERT_EQ(system(("echo nonsense > '" + dir_ + "/rank-77'").c_str()), 0);
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(registry->KillLeftovers().empty());
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), ::testing::HasSubstr("rank-77"));
  EXPECT_FALSE(RecordExists(77));
}

}  // namespace
}  // namespace bench::agent
