// DatabaseLock: one holder per database file; a second is refused naming the holder's
// pid; the lock goes with its holder, also with a holder killed with -9.
#include "server/store/database_lock.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/subprocess.h"

namespace bench {
namespace {

class DatabaseLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_database_lock_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    db_ = dir_ + "/bench.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  std::string db_;
};

TEST_F(DatabaseLockTest, ASecondHolderIsRefusedWithTheFirstsPidUntilTheFirstLetsGo) {
  absl::StatusOr<std::unique_ptr<DatabaseLock>> first = DatabaseLock::Acquire(db_);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->path(), db_ + ".lock");

  absl::StatusOr<std::unique_ptr<DatabaseLock>> second = DatabaseLock::Acquire(db_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find(absl::StrCat("(pid ", getpid(), ")")),
            std::string::npos)
      << second.status();
  EXPECT_NE(second.status().message().find(db_ + ".lock"), std::string::npos);

  first->reset();
  absl::StatusOr<std::unique_ptr<DatabaseLock>> third = DatabaseLock::Acquire(db_);
  EXPECT_TRUE(third.ok()) << third.status();
}

TEST_F(DatabaseLockTest, AnotherDatabaseInTheSameDirectoryHasItsOwnLock) {
  absl::StatusOr<std::unique_ptr<DatabaseLock>> one = DatabaseLock::Acquire(db_);
  absl::StatusOr<std::unique_ptr<DatabaseLock>> other = DatabaseLock::Acquire(dir_ + "/other.db");
  EXPECT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(other.ok()) << other.status();
}

// A process holding the lock file's flock (util-linux's flock(1), as a killed benchd
// holds it until its process is gone): refused while it lives, free once it is killed.
TEST_F(DatabaseLockTest, AHolderKilledWithSigkillLetsGo) {
  SubprocessOptions options;
  options.argv = {"flock", "--exclusive", "--close", db_ + ".lock", "sleep", "600"};
  options.stdout_mode = options.stderr_mode = SubprocessOptions::Output::kDiscard;
  absl::StatusOr<std::unique_ptr<Subprocess>> holder = Subprocess::Start(options);
  ASSERT_TRUE(holder.ok()) << holder.status();
  // Refused once flock(1) has the lock (it writes no pid: none is named).
  absl::StatusOr<std::unique_ptr<DatabaseLock>> refused;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  do {
    refused = DatabaseLock::Acquire(db_);
    if (!refused.ok()) break;
    refused->reset();
    absl::SleepFor(absl::Milliseconds(10));
  } while (absl::Now() < deadline);
  ASSERT_FALSE(refused.ok()) << "flock(1) never took the lock";
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message().find("(pid"), std::string::npos) << refused.status();

  (*holder)->SignalGroup(SIGKILL);
  (*holder)->Wait();
  absl::StatusOr<std::unique_ptr<DatabaseLock>> after = DatabaseLock::Acquire(db_);
  EXPECT_TRUE(after.ok()) << after.status();
}

TEST_F(DatabaseLockTest, ALockFileThatCannotBeCreatedIsAnErrorNamingIt) {
  absl::StatusOr<std::unique_ptr<DatabaseLock>> lock =
      DatabaseLock::Acquire(dir_ + "/missing/bench.db");
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.status().message().find(dir_ + "/missing/bench.db.lock"), std::string::npos)
      << lock.status();
}

}  // namespace
}  // namespace bench
