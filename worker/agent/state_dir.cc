#include "worker/agent/state_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "worker/agent/file_io.h"

namespace bench::agent {

std::string DefaultStateDir(const std::string& agent_name) {
  const char* env = std::getenv("BENCH_AGENT_STATE_DIR");
  if (env != nullptr && *env != '\0') return env;
  return absl::StrCat("/var/lib/bench-agent/", agent_name);
}

absl::Status MakeWritableDirectory(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("no state directory given");
  std::string path;
  for (absl::string_view part : absl::StrSplit(dir, '/')) {
    path += std::string(part);
    if (!path.empty() && mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::PermissionDeniedError(absl::StrCat("cannot create directory ", path,
                                                      " (for ", dir, "): ",
                                                      std::strerror(errno)));
    }
    path += '/';
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(dir, " is not a directory"));
  }
  std::string probe = absl::StrCat(dir, "/.write-test-", getpid());
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("directory ", dir, " is not writable: ", std::strerror(errno)));
  }
  close(fd);
  unlink(probe.c_str());
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadControllerId(const std::string& dir) {
  absl::StatusOr<std::string> text = ReadFileText(dir + "/controller_id", 4096);
  if (absl::IsNotFound(text.status())) return std::string();
  if (!text.ok()) return text.status();
  return std::string(absl::StripAsciiWhitespace(*text));
}

absl::Status WriteControllerId(const std::string& dir, const std::string& id) {
  return WriteFileAtomically(dir + "/controller_id", id + "\n", 0644);
}

absl::StatusOr<std::unique_ptr<StateDirLock>> StateDirLock::Acquire(const std::string& dir) {
  std::string path = dir + "/lock";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    char buffer[32] = {};
    ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
    close(fd);
    std::string holder = n > 0 ? absl::StrCat(" (pid ", absl::StripAsciiWhitespace(
                                                            absl::string_view(buffer, n)),
                                              ")")
                               : "";
    if (error == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrCat(
          "state directory ", dir, " is in use by another bench-agent", holder,
          "; give each agent its own --state-dir"));
    }
    return absl::InternalError(absl::StrCat("cannot lock ", path, ": ", std::strerror(error)));
  }
  std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The pid is only for the message above.
  }
  return std::unique_ptr<StateDirLock>(new StateDirLock(fd));
}

StateDirLock::~StateDirLock() { close(fd_); }

}  // namespace bench::agent
