// DatabaseLock: one holder per database file; a second is refused naming the holder's
// pid; the lock goes with its holder, also with a holder killed with -9.
#include "server/store/database_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "server/store/store_test_fixture.h"

namespace bench {
namespace {

// StoreTest's temp dir and database path (path_), the database never opened.
class DatabaseLockTest : public StoreTest {};

TEST_F(DatabaseLockTest, ASecondHolderIsRefusedWithTheFirstsPidUntilTheFirstLetsGo) {
  absl::StatusOr<std::unique_ptr<DatabaseLock>> first = DatabaseLock::Acquire(path_);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->path(), path_ + ".lock");

  absl::StatusOr<std::unique_ptr<DatabaseLock>> second = DatabaseLock::Acquire(path_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find(absl::StrCat("(pid ", getpid(), ")")),
            std::string::npos)
      << second.status();
  EXPECT_NE(second.status().message().find(path_ + ".lock"), std::string::npos);

  first->reset();
  absl::StatusOr<std::unique_ptr<DatabaseLock>> third = DatabaseLock::Acquire(path_);
  EXPECT_TRUE(third.ok()) << third.status();
}

TEST_F(DatabaseLockTest, AnotherDatabaseInTheSameDirectoryHasItsOwnLock) {
  absl::StatusOr<std::unique_ptr<DatabaseLock>> one = DatabaseLock::Acquire(path_);
  absl::StatusOr<std::unique_ptr<DatabaseLock>> other = DatabaseLock::Acquire(dir_ + "/other.db");
  EXPECT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(other.ok()) << other.status();
}

// Another process holding the lock file's flock, as a killed benchd holds it until its
// process is gone: refused while it lives, free once it is killed with -9 and reaped. The
// holder is one forked process that locks with flock(2) itself and writes no pid (no
// exec, no child of its own that could hold the lock a moment longer).
TEST_F(DatabaseLockTest, AHolderKilledWithSigkillLetsGo) {
  const std::string lock_path = path_ + ".lock";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t holder = fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {  // only async-signal-safe calls from here
    int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || flock(fd, LOCK_EX) != 0 || write(ready[1], "x", 1) != 1) _exit(1);
    for (;;) pause();
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1) << "the holder did not take the lock";
  close(ready[0]);

  absl::StatusOr<std::unique_ptr<DatabaseLock>> refused = DatabaseLock::Acquire(path_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message().find("(pid"), std::string::npos) << refused.status();

  ASSERT_EQ(kill(holder, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(holder, &status, 0), holder);  // a zombie: its descriptors are closed
  absl::StatusOr<std::unique_ptr<DatabaseLock>> after = DatabaseLock::Acquire(path_);
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
