#include "worker/agent/rank_registry.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "worker/agent/state_dir.h"

namespace bench::agent {
namespace {

constexpr char kPrefix[] = "rank-";

// The fields of /proc/PID/stat after the command name: [0] is field 3 (state).
absl::StatusOr<std::vector<std::string>> StatFields(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string text;
  if (!in || !std::getline(in, text)) {
    return absl::NotFoundError(absl::StrCat("no process ", pid));
  }
  size_t paren = text.rfind(')');
  if (paren == std::string::npos) {
    return absl::InternalError(absl::StrCat("unreadable /proc/", pid, "/stat"));
  }
  std::vector<std::string> fields =
      absl::StrSplit(absl::string_view(text).substr(paren + 1), ' ', absl::SkipEmpty());
  if (fields.size() < 20) {
    return absl::InternalError(absl::StrCat("short /proc/", pid, "/stat"));
  }
  return fields;
}

void SyncDirectory(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  fsync(fd);
  close(fd);
}

std::string Describe(const RankRecord& record) {
  return absl::StrCat("rank ", record.rank, " of job ", record.job_id, " attempt ",
                      record.attempt, " (pid ", record.pid, ")");
}

}  // namespace

absl::StatusOr<uint64_t> ProcessStartTime(pid_t pid) {
  if (pid <= 0) return absl::InvalidArgumentError(absl::StrCat("bad pid ", pid));
  auto fields = StatFields(pid);
  if (!fields.ok()) return fields.status();
  const std::string& state = (*fields)[0];
  if (state == "Z" || state == "X" || state == "x") {
    return absl::NotFoundError(absl::StrCat("process ", pid, " has exited"));
  }
  uint64_t start = 0;
  if (!absl::SimpleAtoi((*fields)[19], &start)) {
    return absl::InternalError(absl::StrCat("unreadable start time in /proc/", pid, "/stat"));
  }
  return start;
}

bool ProcessGroupAlive(pid_t pgid) {
  DIR* d = opendir("/proc");
  if (d == nullptr) return false;
  bool alive = false;
  while (dirent* entry = readdir(d)) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    auto fields = StatFields(pid);
    if (!fields.ok()) continue;
    const std::string& state = (*fields)[0];
    if (state == "Z" || state == "X" || state == "x") continue;
    if ((*fields)[2] == absl::StrCat(pgid)) {
      alive = true;
      break;
    }
  }
  closedir(d);
  return alive;
}

std::string FormatRankRecord(const RankRecord& record) {
  return absl::StrCat("pid=", record.pid, " pgid=", record.pgid, " start=", record.start_time,
                      " attempt=", record.attempt, " rank=", record.rank,
                      " job=", record.job_id);
}

absl::StatusOr<RankRecord> ParseRankRecord(const std::string& line) {
  RankRecord record;
  absl::string_view rest = absl::StripTrailingAsciiWhitespace(line);
  size_t job = rest.find(" job=");
  if (job == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("no job in \"", line, "\""));
  }
  record.job_id = std::string(rest.substr(job + 5));
  bool ok = !record.job_id.empty();
  int seen = 0;
  for (absl::string_view field : absl::StrSplit(rest.substr(0, job), ' ', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, '=');
    if (kv.first == "pid") ok &= absl::SimpleAtoi(kv.second, &record.pid), ++seen;
    else if (kv.first == "pgid") ok &= absl::SimpleAtoi(kv.second, &record.pgid), ++seen;
    else if (kv.first == "start") ok &= absl::SimpleAtoi(kv.second, &record.start_time), ++seen;
    else if (kv.first == "attempt") ok &= absl::SimpleAtoi(kv.second, &record.attempt), ++seen;
    else if (kv.first == "rank") ok &= absl::SimpleAtoi(kv.second, &record.rank), ++seen;
  }
  if (!ok || seen != 5 || record.pid <= 0 || record.pgid <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("malformed rank record \"", line, "\""));
  }
  return record;
}

absl::StatusOr<std::unique_ptr<RankRegistry>> RankRegistry::Open(const std::string& dir) {
  absl::Status made = MakeWritableDirectory(dir);
  if (!made.ok()) return made;
  return std::unique_ptr<RankRegistry>(new RankRegistry(dir));
}

std::string RankRegistry::PathOf(pid_t pid) const {
  return absl::StrCat(dir_, "/", kPrefix, pid);
}

absl::Status RankRegistry::Record(const RankRecord& record) {
  std::string path = PathOf(record.pid);
  std::string tmp = path + ".tmp";
  std::string text = FormatRankRecord(record) + "\n";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot write ", tmp, ": ", std::strerror(errno)));
  }
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = fsync(fd) == 0 && ok;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    int error = errno;
    unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(error)));
  }
  SyncDirectory(dir_);
  return absl::OkStatus();
}

absl::Status RankRegistry::RecordProcess(const std::string& job_id, int attempt, int rank,
                                         pid_t pid) {
  auto fields = StatFields(pid);
  if (!fields.ok()) return fields.status();
  RankRecord record;
  record.job_id = job_id;
  record.attempt = attempt;
  record.rank = rank;
  record.pid = pid;
  if (!absl::SimpleAtoi((*fields)[19], &record.start_time)) {
    return absl::InternalError(absl::StrCat("unreadable /proc/", pid, "/stat"));
  }
  // Subprocess puts the child in its own group (setpgid in the child and the parent), so
  // the group is the pid even if /proc does not show it yet.
  record.pgid = pid;
  return Record(record);
}

void RankRegistry::Forget(pid_t pid) {
  if (unlink(PathOf(pid).c_str()) != 0 && errno != ENOENT) {
    Log("warning: cannot remove ", PathOf(pid), ": ", std::strerror(errno));
  }
}

std::vector<LeftoverRank> RankRegistry::KillLeftovers(absl::Duration timeout) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir_.c_str())) {
    while (dirent* entry = readdir(d)) {
      std::string name = entry->d_name;
      if (absl::StartsWith(name, kPrefix)) names.push_back(name);
    }
    closedir(d);
  }
  std::vector<LeftoverRank> found;
  std::vector<std::string> paths;
  for (const std::string& name : names) {
    std::string path = absl::StrCat(dir_, "/", name);
    if (absl::EndsWith(name, ".tmp")) {  // a record never completed: its rank was not started
      unlink(path.c_str());
      continue;
    }
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    auto record = ParseRankRecord(line);
    if (!record.ok()) {
      Log("rank registry ", path, ": ", record.status().message(),
                            "; removed");
      unlink(path.c_str());
      continue;
    }
    LeftoverRank leftover;
    leftover.record = *record;
    auto start = ProcessStartTime(record->pid);
    if (start.ok() && *start == record->start_time) {
      leftover.was_alive = true;
      Log("found ", Describe(*record),
                            " left running by a previous bench-agent; killing its process "
                            "group ", record->pgid);
      kill(-record->pgid, SIGKILL);
      kill(record->pid, SIGKILL);  // in case it left the group
    } else {
      Log("found the record of ", Describe(*record),
                            " from a previous bench-agent; it is no longer running",
                            start.ok() ? " (its pid now belongs to another process)" : "");
    }
    found.push_back(std::move(leftover));
    paths.push_back(std::move(path));
  }

  absl::Time deadline = absl::Now() + timeout;
  for (size_t i = 0; i < found.size(); ++i) {
    LeftoverRank& leftover = found[i];
    if (leftover.was_alive) {
      const RankRecord& record = leftover.record;
      while (true) {
        auto start = ProcessStartTime(record.pid);
        leftover.gone = (!start.ok() || *start != record.start_time) &&
                        !ProcessGroupAlive(record.pgid);
        if (leftover.gone || absl::Now() >= deadline) break;
        absl::SleepFor(absl::Milliseconds(10));  // polls /proc: nothing to wait on
      }
      if (!leftover.gone) {
        Log("warning: ", Describe(record), " is still there after SIGKILL; "
                              "keeping its record");
        continue;
      }
    }
    unlink(paths[i].c_str());
  }
  if (!found.empty()) SyncDirectory(dir_);
  return found;
}

}  // namespace bench::agent
