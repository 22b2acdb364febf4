// systemd's service notification protocol, spoken directly (sd_notify(3), no libsystemd):
// a state ("READY=1", "STATUS=...", "STOPPING=1", "WATCHDOG=1"; several joined by '\n')
// is one AF_UNIX SOCK_DGRAM datagram to the socket named by $NOTIFY_SOCKET, an absolute
// path or, with a leading '@', a name in the abstract namespace. Without $NOTIFY_SOCKET
// (not run by systemd with Type=notify) nothing is sent and the calls succeed.
//
// The watchdog: with WatchdogSec= systemd sets $WATCHDOG_USEC (and $WATCHDOG_PID, the pid
// it is meant for) and restarts the service when WATCHDOG=1 does not come within that
// interval. `SdWatchdog` sends it at half the interval from its own thread, only while a
// health check passes, so a process that is alive but stuck gets restarted.
//
// Thread-safe: every call opens its own socket. Errors are absl::Status naming the socket.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace bench {

// Sends `state` to $NOTIFY_SOCKET; OK without sending when it is unset or empty.
absl::Status SdNotify(std::string_view state);

// SdNotify for daemons: a failure is logged, not returned (the service runs on; systemd
// notices a missing READY=1 or WATCHDOG=1 by itself).
void SdNotifyOrLog(std::string_view state);

// Sends `state` to `socket` ("/path" or "@abstract-name"). INVALID_ARGUMENT for an
// address of another form or too long for sockaddr_un; the socket's errno otherwise
// (a missing path, nobody listening). Both name the socket.
absl::Status SdNotifyTo(const std::string& socket, std::string_view state);

// The interval systemd expects WATCHDOG=1 within: $WATCHDOG_USEC when it is set and
// $WATCHDOG_PID is unset or this process's pid; zero (no watchdog) otherwise.
// INVALID_ARGUMENT naming the variable for a value that is not a positive integer.
absl::StatusOr<absl::Duration> SdWatchdogInterval();

// Sends WATCHDOG=1 to $NOTIFY_SOCKET every interval/2 while `health` returns OK (the
// period counted from one check's start to the next, so a slow check does not stretch
// it; keep checks under a quarter of the interval and pings stay 3/4 of it apart). When
// the check fails it sends nothing (so systemd restarts the service once the interval
// has passed), logs the reason and shows it in STATUS=; when it passes again it resumes.
// `health` runs on the watchdog's thread and must return within the interval.
class SdWatchdog {
 public:
  using HealthCheck = std::function<absl::Status()>;
  // A zero interval (no watchdog asked for) starts no thread and sends nothing.
  SdWatchdog(absl::Duration interval, HealthCheck health);
  // Stops the thread (waiting for a check in progress). Call it before tearing down what
  // `health` looks at.
  ~SdWatchdog();
  SdWatchdog(const SdWatchdog&) = delete;
  SdWatchdog& operator=(const SdWatchdog&) = delete;

 private:
  void Loop();

  const absl::Duration period_;
  const HealthCheck health_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace bench
