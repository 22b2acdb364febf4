#include "worker/agent/file_io.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace bench::agent {

absl::StatusOr<std::string> ReadFileText(const std::string& path, size_t max_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, " does not exist"));
    return absl::InternalError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::string text;
  char buffer[4096];
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
    if (text.size() > max_bytes) {
      close(fd);
      return absl::OutOfRangeError(
          absl::StrCat(path, " is longer than ", max_bytes, " bytes: not the file expected"));
    }
  }
  close(fd);
  return text;
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& contents,
                                 mode_t mode) {
  const std::string temporary = path + ".new";
  unlink(temporary.c_str());  // a leftover of a crash may have another mode
  int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot write ", temporary, ": ", std::strerror(errno)));
  }
  auto fail = [&](const char* what) {
    absl::Status status = absl::InternalError(
        absl::StrCat("cannot ", what, " ", temporary, ": ", std::strerror(errno)));
    close(fd);
    unlink(temporary.c_str());
    return status;
  };
  if (fchmod(fd, mode) != 0) return fail("chmod");  // whatever the umask
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("write");
    written += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) return fail("fsync");
  close(fd);
  if (rename(temporary.c_str(), path.c_str()) != 0) {
    absl::Status status = absl::InternalError(
        absl::StrCat("cannot rename ", temporary, " to ", path, ": ", std::strerror(errno)));
    unlink(temporary.c_str());
    return status;
  }
  // The rename is durable only once the directory is.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0 || fsync(dir_fd) != 0) {
    absl::Status status = absl::InternalError(
        absl::StrCat("cannot sync the directory of ", path, ": ", std::strerror(errno)));
    if (dir_fd >= 0) close(dir_fd);
    return status;
  }
  close(dir_fd);
  return absl::OkStatus();
}

}  // namespace bench::agent
