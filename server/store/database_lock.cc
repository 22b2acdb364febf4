// DatabaseLock: flock(2) on PATH.lock, the holder's pid written into it while it holds it
// (best effort: a full disk only loses the pid).
#include "server/store/database_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace bench {
namespace {

// The pid the holder wrote, or "" if the file holds none or one no process has (a holder
// that could not write its pid, on a read-only disk, leaves an earlier holder's).
std::string RecordedPid(int fd) {
  char text[32] = {};
  ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
  if (n <= 0) return "";
  int pid = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::string_view(text, n)), &pid) ||
      pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) {
    return "";
  }
  return std::to_string(pid);
}

}  // namespace

absl::StatusOr<std::unique_ptr<DatabaseLock>> DatabaseLock::Acquire(const std::string& db_path) {
  std::string path = db_path + ".lock";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  const bool writable = fd >= 0;
  if (!writable && (errno == EROFS || errno == EACCES)) {
    // A read-only disk (benchd serves what is stored): flock needs no write access.
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      return std::unique_ptr<DatabaseLock>(new DatabaseLock(std::move(path), -1, false));
    }
  }
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot create the lock file ", path, ": ", std::strerror(errno)));
  }
  int locked;
  do {
    locked = flock(fd, LOCK_EX | LOCK_NB);
  } while (locked != 0 && errno == EINTR);
  if (locked != 0) {
    const int error = errno;
    std::string pid = error == EWOULDBLOCK ? RecordedPid(fd) : "";
    close(fd);
    if (error == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrCat(
          "another benchd", pid.empty() ? "" : absl::StrCat(" (pid ", pid, ")"),
          " has this database open: it holds ", path, "; stop it first"));
    }
    return absl::UnavailableError(
        absl::StrCat("cannot lock ", path, ": ", std::strerror(error)));
  }
  // Who holds it, for the next one refused; a full disk only loses the pid.
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (writable && ftruncate(fd, 0) == 0) {
    ssize_t written = pwrite(fd, pid.data(), pid.size(), 0);
    (void)written;
  }
  return std::unique_ptr<DatabaseLock>(new DatabaseLock(std::move(path), fd, writable));
}

DatabaseLock::~DatabaseLock() {
  if (fd_ < 0) return;
  // Still held: no later reader of the file takes this pid for a holder's.
  if (writable_ && ftruncate(fd_, 0) != 0) {
    // Nothing to do: the next holder overwrites it.
  }
  close(fd_);
}

}  // namespace bench
