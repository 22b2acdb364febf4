// The ranks this agent has running, recorded on disk so that an agent that restarts
// (after kill -9, a crash, an OOM kill) finds the ranks its predecessor left behind and
// kills them: their stdout pipe is gone, so nobody would read their samples, and the
// controller must learn that they failed.
//
// On disk: one file per rank in the registry's directory, "rank-PID", holding one line
//   pid=N pgid=N start=TICKS attempt=N rank=N job=JOB_ID
// (job last: it is the rest of the line), written to a temporary file, fsync'ed and
// renamed into place; the directory is fsync'ed too. `start` is the process start time
// (field 22 of /proc/PID/stat, clock ticks since boot), so that a pid recycled by
// another process is never mistaken for the rank.
//
// Thread-safe: Record and Forget may be called from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace bench::agent {

struct RankRecord {
  std::string job_id;
  int attempt = 0;
  int rank = 0;
  pid_t pid = 0;
  pid_t pgid = 0;
  uint64_t start_time = 0;  // /proc/PID/stat field 22
};

// The start time (field 22 of /proc/PID/stat) of a live process; NOT_FOUND if there is
// no such process, or it is a zombie (it has exited, only its status is left).
absl::StatusOr<uint64_t> ProcessStartTime(pid_t pid);

// True if a process of group `pgid` is alive (not a zombie), from a scan of /proc.
bool ProcessGroupAlive(pid_t pgid);

// A rank left behind by a previous agent, as KillLeftovers found it.
struct LeftoverRank {
  RankRecord record;
  bool was_alive = false;  // alive with the recorded start time, and killed
  bool gone = true;        // false: still there after SIGKILL and the wait
};

class RankRegistry {
 public:
  // Opens (creating it, and its parents, if missing) the registry in `dir`; fails with
  // a message naming `dir` if it cannot be created or written.
  static absl::StatusOr<std::unique_ptr<RankRegistry>> Open(const std::string& dir);

  // Records a live rank (durably, before returning).
  absl::Status Record(const RankRecord& record);
  // Records the rank `pid` of (job, attempt, rank), reading its start time and process
  // group from /proc. Fails if the process cannot be read there (it is gone).
  absl::Status RecordProcess(const std::string& job_id, int attempt, int rank, pid_t pid);
  // Removes the record of `pid` (its rank was reaped). A missing record is fine.
  void Forget(pid_t pid);

  // Every rank recorded (by a previous agent; call before recording any). Each one
  // still alive with its recorded start time has its process group SIGKILLed, and is
  // waited for (up to `timeout`) until it and every process of its group have exited
  // (zombies count as exited: their parent, perhaps init, reaps them). Every record is then removed,
  // except those of ranks that would not go. Unreadable records are logged and removed.
  std::vector<LeftoverRank> KillLeftovers(absl::Duration timeout = absl::Seconds(10));

  const std::string& dir() const { return dir_; }

 private:
  explicit RankRegistry(std::string dir) : dir_(std::move(dir)) {}
  std::string PathOf(pid_t pid) const;

  const std::string dir_;
};

// "pid=1 pgid=1 start=2 attempt=3 rank=4 job=job-5" and back (exposed for tests).
std::string FormatRankRecord(const RankRecord& record);
absl::StatusOr<RankRecord> ParseRankRecord(const std::string& line);

}  // namespace bench::agent
