// DatabaseLock: one benchd per database. benchd takes it before it opens the database and
// holds it until it exits or is killed; a second benchd given the same file is refused,
// naming the first one's pid, instead of both recovering and scheduling the same jobs.
//
// The lock is flock(2) on a file beside the database (PATH.lock, which keeps the holder's
// pid as text while it holds it), so the kernel drops it with the holder's last open
// descriptor, and SQLite's own locks (fcntl, on the database and its -shm) are left alone.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace bench {

class DatabaseLock {
 public:
  // Creates PATH.lock if missing and locks it. FAILED_PRECONDITION naming the lock file
  // (and the pid it records, if any) when another process holds it; an error naming the
  // lock file when it cannot be created or locked. On a read-only file system an existing
  // lock file is locked read-only (no pid written); where there is none, nothing can be
  // locked and the lock returned is not held (held() false: the caller says so).
  static absl::StatusOr<std::unique_ptr<DatabaseLock>> Acquire(const std::string& db_path);
  ~DatabaseLock();  // empties the file and unlocks it (the file stays)
  DatabaseLock(const DatabaseLock&) = delete;
  DatabaseLock& operator=(const DatabaseLock&) = delete;

  const std::string& path() const { return path_; }
  bool held() const { return fd_ >= 0; }

 private:
  DatabaseLock(std::string path, int fd, bool writable)
      : path_(std::move(path)), fd_(fd), writable_(writable) {}

  const std::string path_;
  const int fd_;         // -1: not held
  const bool writable_;  // opened for writing: the pid is kept in it
};

}  // namespace bench
