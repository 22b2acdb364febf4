// sd_notify.h against real listening sockets: a path and an abstract name, $NOTIFY_SOCKET
// unset, bad addresses, the watchdog interval from the environment, and the watchdog's
// pings following its health check.
#include "common/sd_notify.h"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "common/sd_notify_listener.h"

namespace bench {
namespace {

using ::testing::HasSubstr;
using testing::NotifyListener;

// Sets (or, with nullptr, unsets) an environment variable for one test's scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  bool had_ = false;
  std::string old_;
};

std::string SocketPath(const std::string& name) {
  std::string path = absl::StrCat(::testing::TempDir(), "/sd-", getpid(), "-", name);
  unlink(path.c_str());
  return path;
}

std::string AbstractName(const std::string& name) {
  return absl::StrCat("@benchfleet-sd-test-", getpid(), "-", name);
}

TEST(SdNotifyTest, SendsOneDatagramToAPathSocket) {
  auto listener = NotifyListener::Listen(SocketPath("path"));
  ASSERT_TRUE(listener.ok()) << listener.status();
  ScopedEnv socket("NOTIFY_SOCKET", (*listener)->address().c_str());
  ASSERT_TRUE(SdNotify("READY=1\nSTATUS=serving").ok());
  auto datagram = (*listener)->Receive(absl::Seconds(5));
  ASSERT_TRUE(datagram.ok()) << datagram.status();
  EXPECT_EQ(*datagram, "READY=1\nSTATUS=serving");
}

TEST(SdNotifyTest, SendsToAnAbstractSocket) {
  auto listener = NotifyListener::Listen(AbstractName("abstract"));
  ASSERT_TRUE(listener.ok()) << listener.status();
  ScopedEnv socket("NOTIFY_SOCKET", (*listener)->address().c_str());
  ASSERT_TRUE(SdNotify("STOPPING=1").ok());
  auto datagram = (*listener)->Receive(absl::Seconds(5));
  ASSERT_TRUE(datagram.ok()) << datagram.status();
  EXPECT_EQ(*datagram, "STOPPING=1");
}

TEST(SdNotifyTest, WithoutNotifySocketSendsNothingAndSucceeds) {
  ScopedEnv unset("NOTIFY_SOCKET", nullptr);
  EXPECT_TRUE(SdNotify("READY=1").ok());
  ScopedEnv empty("NOTIFY_SOCKET", "");
  EXPECT_TRUE(SdNotify("READY=1").ok());
}

TEST(SdNotifyTest, AMissingSocketPathIsAnErrorNamingIt) {
  const std::string missing = SocketPath("nobody-listens");
  ScopedEnv socket("NOTIFY_SOCKET", missing.c_str());
  absl::Status status = SdNotify("READY=1");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr(missing));
  EXPECT_THAT(status.message(), HasSubstr("No such file or directory"));
}

TEST(SdNotifyTest, AnAbstractNameNobodyListensOnIsAnErrorNamingIt) {
  const std::string name = AbstractName("nobody");
  absl::Status status = SdNotifyTo(name, "READY=1");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr(name));
}

TEST(SdNotifyTest, AddressesOfAnotherFormAreRefused) {
  for (const std::string bad : {"relative/path", "@", "vsock:2:1234"}) {
    absl::Status status = SdNotifyTo(bad, "READY=1");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr(bad));
  }
  const std::string too_long = "/" + std::string(200, 'x');
  absl::Status status = SdNotifyTo(too_long, "READY=1");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("longer than"));
}

TEST(SdWatchdogIntervalTest, ReadsWatchdogUsecForThisProcess) {
  ScopedEnv usec("WATCHDOG_USEC", "30000000");
  {
    ScopedEnv pid("WATCHDOG_PID", nullptr);
    auto interval = SdWatchdogInterval();
    ASSERT_TRUE(interval.ok()) << interval.status();
    EXPECT_EQ(*interval, absl::Seconds(30));
  }
  {
    ScopedEnv pid("WATCHDOG_PID", absl::StrCat(getpid()).c_str());
    auto interval = SdWatchdogInterval();
    ASSERT_TRUE(interval.ok()) << interval.status();
    EXPECT_EQ(*interval, absl::Seconds(30));
  }
  {
    // Meant for another process (e.g. our parent's, inherited): no watchdog here.
    ScopedEnv pid("WATCHDOG_PID", absl::StrCat(getpid() + 1).c_str());
    auto interval = SdWatchdogInterval();
    ASSERT_TRUE(interval.ok()) << interval.status();
    EXPECT_EQ(*interval, absl::ZeroDuration());
  }
}

TEST(SdWatchdogIntervalTest, UnsetMeansNoWatchdog) {
  ScopedEnv usec("WATCHDOG_USEC", nullptr);
  auto interval = SdWatchdogInterval();
  ASSERT_TRUE(interval.ok()) << interval.status();
  EXPECT_EQ(*interval, absl::ZeroDuration());
}

TEST(SdWatchdogIntervalTest, BadValuesNameTheVariable) {
  ScopedEnv pid("WATCHDOG_PID", nullptr);
  for (const char* bad : {"soon", "0", "-5", "12us"}) {
    ScopedEnv usec("WATCHDOG_USEC", bad);
    auto interval = SdWatchdogInterval();
    EXPECT_EQ(interval.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(interval.status().message(), HasSubstr("WATCHDOG_USEC")) << bad;
  }
  ScopedEnv usec("WATCHDOG_USEC", "1000000");
  ScopedEnv pid_bad("WATCHDOG_PID", "me");
  EXPECT_THAT(SdWatchdogInterval().status().message(), HasSubstr("WATCHDOG_PID"));
}

// Counts WATCHDOG=1 datagrams for `window`; other lines (STATUS=) go to `others`.
int CountPings(NotifyListener& listener, absl::Duration window,
               std::vector<std::string>* others = nullptr) {
  int pings = 0;
  const absl::Time end = absl::Now() + window;
  for (absl::Duration left = window; left > absl::ZeroDuration(); left = end - absl::Now()) {
    auto datagram = listener.Receive(left);
    if (!datagram.ok()) break;
    if (*datagram == "WATCHDOG=1") {
      ++pings;
    } else if (others != nullptr) {
      others->push_back(*datagram);
    }
  }
  return pings;
}

TEST(SdWatchdogTest, PingsAtHalfTheIntervalWhileHealthyAndStopsWhenNot) {
  auto listener = NotifyListener::Listen(SocketPath("watchdog"));
  ASSERT_TRUE(listener.ok()) << listener.status();
  ScopedEnv socket("NOTIFY_SOCKET", (*listener)->address().c_str());
  std::atomic<bool> healthy{true};
  SdWatchdog watchdog(absl::Milliseconds(400), [&healthy] {
    return healthy ? absl::OkStatus() : absl::UnavailableError("store writer stuck");
  });
  // Every 200 ms: about 10 in 2 s (the first at once); a loaded machine may lose a few.
  const int healthy_pings = CountPings(**listener, absl::Seconds(2));
  EXPECT_GE(healthy_pings, 6);
  EXPECT_LE(healthy_pings, 12);

  healthy = false;
  absl::SleepFor(absl::Milliseconds(250));  // a ping may have been on its way
  std::vector<std::string> others;
  for (auto datagram = (*listener)->Receive(absl::ZeroDuration()); datagram.ok();
       datagram = (*listener)->Receive(absl::ZeroDuration())) {
    if (*datagram != "WATCHDOG=1") others.push_back(*datagram);
  }
  EXPECT_EQ(CountPings(**listener, absl::Seconds(1), &others), 0);

  healthy = true;
  EXPECT_GE(CountPings(**listener, absl::Seconds(1), &others), 3);
  EXPECT_THAT(others, ::testing::Contains(HasSubstr("store writer stuck")));
  EXPECT_THAT(others, ::testing::Contains("STATUS=healthy again"));
}

TEST(SdWatchdogTest, AZeroIntervalSendsNothing) {
  auto listener = NotifyListener::Listen(SocketPath("no-watchdog"));
  ASSERT_TRUE(listener.ok()) << listener.status();
  ScopedEnv socket("NOTIFY_SOCKET", (*listener)->address().c_str());
  std::atomic<int> checks{0};
  {
    SdWatchdog watchdog(absl::ZeroDuration(), [&checks] {
      ++checks;
      return absl::OkStatus();
    });
    EXPECT_EQ(CountPings(**listener, absl::Milliseconds(300)), 0);
  }
  EXPECT_EQ(checks, 0);
}

}  // namespace
}  // namespace bench
