// The agent's state directory (--state-dir): where it keeps what must outlive it — the
// spools of unacknowledged samples and reports, and the records of its live ranks.
//
//   STATE_DIR/spool/samples/   Spool of iteration and GPU samples (spool.h)
//   STATE_DIR/spool/reports/   Spool of status reports
//   STATE_DIR/ranks/           RankRegistry (rank_registry.h)
//   STATE_DIR/lock             flock'ed by the agent using the directory (holds its pid)
//   STATE_DIR/controller_id    the database id (RegisterResponse.controller_id) of the
//                              benchd the agent last registered with: the spools hold
//                              records meant for that database
//
// One agent per state directory: a second one would replay the first one's spool and
// kill its ranks as leftovers, so it is refused (StateDirLock).
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace bench::agent {

// $BENCH_AGENT_STATE_DIR if set and not empty, else /var/lib/bench-agent/NAME.
std::string DefaultStateDir(const std::string& agent_name);

// mkdir -p `dir`, then checks that a file can be created in it. The error names `dir`.
absl::Status MakeWritableDirectory(const std::string& dir);

// The id recorded in DIR/controller_id (surrounding whitespace removed); "" if there is
// no such file. An error (naming the file) if it exists but cannot be read.
absl::StatusOr<std::string> ReadControllerId(const std::string& dir);
// Records `id` in DIR/controller_id durably: written to a temporary file, fsync'ed,
// renamed over it, and the directory fsync'ed. The error names the file.
absl::Status WriteControllerId(const std::string& dir, const std::string& id);

// An exclusive flock on DIR/lock, held until destroyed (or the process dies: the kernel
// releases it, so a kill -9'd agent leaves no stale lock).
class StateDirLock {
 public:
  // FAILED_PRECONDITION naming `dir` and the holder's pid if another process holds it.
  static absl::StatusOr<std::unique_ptr<StateDirLock>> Acquire(const std::string& dir);
  ~StateDirLock();
  StateDirLock(const StateDirLock&) = delete;
  StateDirLock& operator=(const StateDirLock&) = delete;

 private:
  explicit StateDirLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace bench::agent
