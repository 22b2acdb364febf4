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
  std::string path = dir + "/controller_id";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::string();
    return absl::InternalError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::string text;
  char buffer[256];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      close(fd);
      return absl::InternalError(absl::StrCat("cannot read ", path, ": ", std::strerror(error)));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > 4096) {
      close(fd);
      return absl::DataLossError(absl::StrCat(path, " is too long for a controller id"));
    }
  }
  close(fd);
  return std::string(absl::StripAsciiWhitespace(text));
}

absl::Status WriteControllerId(const std::string& dir, const std::string& id) {
  std::string path = dir + "/controller_id";
  std::string tmp = path + ".tmp";
  auto fail = [&](const std::string& what) {
    return absl::InternalError(
        absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(errno)));
  };
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("write");
  std::string text = id + "\n";
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            fsync(fd) == 0;
  if (!ok) {
    absl::Status status = fail("write");
    close(fd);
    unlink(tmp.c_str());
    return status;
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status status = fail("replace");
    unlink(tmp.c_str());
    return status;
  }
  int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return fail("sync the directory of");
  bool synced = fsync(dir_fd) == 0;
  absl::Status status = synced ? absl::OkStatus() : fail("sync the directory of");
  close(dir_fd);
  return status;
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
