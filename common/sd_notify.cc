#include "common/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace bench {
namespace {

std::string NonEmptyEnv(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

}  // namespace

absl::Status SdNotify(std::string_view state) {
  const std::string socket = NonEmptyEnv("NOTIFY_SOCKET");
  if (socket.empty()) return absl::OkStatus();
  return SdNotifyTo(socket, state);
}

void SdNotifyOrLog(std::string_view state) {
  if (absl::Status sent = SdNotify(state); !sent.ok()) Log("systemd notification: ", sent.message());
}

absl::Status SdNotifyTo(const std::string& socket, std::string_view state) {
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  if (socket.size() < 2 || (socket[0] != '/' && socket[0] != '@')) {
    return absl::InvalidArgumentError(absl::StrCat(
        "notify socket \"", socket, "\": expected an absolute path or @abstract-name"));
  }
  if (socket.size() > sizeof(address.sun_path) - 1) {
    return absl::InvalidArgumentError(absl::StrCat("notify socket \"", socket, "\": longer than ",
                                                   sizeof(address.sun_path) - 1, " bytes"));
  }
  std::memcpy(address.sun_path, socket.data(), socket.size());
  socklen_t length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket.size());
  if (socket[0] == '@') {
    address.sun_path[0] = '\0';  // the abstract namespace: no terminating NUL counted
  } else {
    length += 1;
  }
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("notify socket ", socket, ": socket: ", std::strerror(errno)));
  }
  ssize_t sent;
  do {
    sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                    reinterpret_cast<const sockaddr*>(&address), length);
  } while (sent < 0 && errno == EINTR);
  const int error = errno;
  ::close(fd);
  if (sent < 0) {
    return absl::UnavailableError(
        absl::StrCat("notify socket ", socket, ": sendto: ", std::strerror(error)));
  }
  if (static_cast<size_t>(sent) != state.size()) {
    return absl::UnavailableError(absl::StrCat("notify socket ", socket, ": sent ", sent, " of ",
                                               state.size(), " bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Duration> SdWatchdogInterval() {
  const std::string usec_text = NonEmptyEnv("WATCHDOG_USEC");
  if (usec_text.empty()) return absl::ZeroDuration();
  const std::string pid_text = NonEmptyEnv("WATCHDOG_PID");
  if (!pid_text.empty()) {
    int64_t pid = 0;
    if (!absl::SimpleAtoi(pid_text, &pid) || pid <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("WATCHDOG_PID=\"", pid_text, "\": expected a process id"));
    }
    if (pid != ::getpid()) return absl::ZeroDuration();  // meant for another process
  }
  uint64_t usec = 0;
  if (!absl::SimpleAtoi(usec_text, &usec) || usec == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "WATCHDOG_USEC=\"", usec_text, "\": expected a positive number of microseconds"));
  }
  return absl::Microseconds(usec);
}

SdWatchdog::SdWatchdog(absl::Duration interval, HealthCheck health)
    : period_(interval / 2), health_(std::move(health)) {
  if (interval > absl::ZeroDuration()) thread_ = std::thread([this] { Loop(); });
}

SdWatchdog::~SdWatchdog() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void SdWatchdog::Loop() {
  bool healthy = true;
  absl::Time next = absl::Now();
  do {
    next += period_;
    const absl::Status health = health_();
    if (health.ok()) {
      if (!healthy) {
        Log("healthy again: watchdog pings resume");
        SdNotifyOrLog("STATUS=healthy again");
      }
      SdNotifyOrLog("WATCHDOG=1");
    } else if (healthy) {
      Log("unhealthy, watchdog pings withheld: ", health.message());
      SdNotifyOrLog(absl::StrCat("STATUS=unhealthy, watchdog pings withheld: ", health.message()));
    }
    healthy = health.ok();
    next = std::max(next, absl::Now());  // a check that overran its period: no catching up
  } while (!stop_.WaitForNotificationWithDeadline(next));
}

}  // namespace bench
