// For tests: a listening AF_UNIX SOCK_DGRAM socket that plays systemd's side of the
// notify protocol (sd_notify.h), at a path or ("@name") in the abstract namespace. Give
// address() to the process under test as $NOTIFY_SOCKET and read what it sends. Not
// thread-safe; one reader.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace bench::testing {

class NotifyListener {
 public:
  // Binds `address` ("/path", which must not exist yet, or "@name"). Errors name it.
  static absl::StatusOr<std::unique_ptr<NotifyListener>> Listen(const std::string& address) {
    sockaddr_un sun = {};
    sun.sun_family = AF_UNIX;
    if (address.size() < 2 || address.size() >= sizeof(sun.sun_path)) {
      return absl::InvalidArgumentError(absl::StrCat("listener address \"", address, "\""));
    }
    std::memcpy(sun.sun_path, address.data(), address.size());
    socklen_t length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size());
    if (address[0] == '@') {
      sun.sun_path[0] = '\0';
    } else {
      length += 1;
    }
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&sun), length) != 0) {
      const int error = errno;
      ::close(fd);
      return absl::UnavailableError(
          absl::StrCat("bind ", address, ": ", std::strerror(error)));
    }
    return std::unique_ptr<NotifyListener>(new NotifyListener(fd, address));
  }
  ~NotifyListener() {
    ::close(fd_);
    if (address_[0] == '/') ::unlink(address_.c_str());
  }
  NotifyListener(const NotifyListener&) = delete;
  NotifyListener& operator=(const NotifyListener&) = delete;

  const std::string& address() const { return address_; }

  // The next datagram, or DEADLINE_EXCEEDED after `timeout`.
  absl::StatusOr<std::string> Receive(absl::Duration timeout) {
    pollfd pfd = {fd_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
    if (ready == 0) {
      return absl::DeadlineExceededError(
          absl::StrCat("no datagram on ", address_, " within ", absl::FormatDuration(timeout)));
    }
    if (ready < 0) return absl::UnavailableError(absl::StrCat("poll: ", std::strerror(errno)));
    char buffer[4096];
    const ssize_t size = ::recv(fd_, buffer, sizeof(buffer), 0);
    if (size < 0) return absl::UnavailableError(absl::StrCat("recv: ", std::strerror(errno)));
    return std::string(buffer, static_cast<size_t>(size));
  }

  // Reads datagrams until one has the line `line` (e.g. "READY=1"), for up to `timeout`.
  // Every line read is appended to `seen` (when not null), the matching one included.
  absl::Status WaitForLine(const std::string& line, absl::Duration timeout,
                           std::vector<std::string>* seen = nullptr) {
    const absl::Time deadline = absl::Now() + timeout;
    for (;;) {
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) break;
      absl::StatusOr<std::string> datagram = Receive(left);
      if (!datagram.ok()) break;
      bool found = false;
      for (absl::string_view piece : absl::StrSplit(*datagram, '\n', absl::SkipEmpty())) {
        if (seen != nullptr) seen->emplace_back(piece);
        found = found || piece == line;
      }
      if (found) return absl::OkStatus();
    }
    return absl::DeadlineExceededError(absl::StrCat("no ", line, " on ", address_, " within ",
                                                    absl::FormatDuration(timeout)));
  }

 private:
  NotifyListener(int fd, std::string address) : fd_(fd), address_(std::move(address)) {}
  const int fd_;
  const std::string address_;
};

}  // namespace bench::testing
