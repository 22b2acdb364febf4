// benchd and bench-agent under systemd's notify protocol (Type=notify,
// deploy/systemd/): the real binaries with $NOTIFY_SOCKET pointing at a socket this test
// listens on (common/sd_notify_listener.h). benchd restarts on a database that needs
// recovery (a RUNNING job, benchd killed -9): READY=1 comes once /readyz answers ready
// and the job is known again, WATCHDOG=1 repeats with $WATCHDOG_USEC set, STOPPING=1
// follows SIGTERM. bench-agent: READY=1 after it started, STOPPING=1 on SIGTERM.
//
// The agents' trainer is tests/e2e/sleeping_trainer.sh (BENCH_TRAIN_PATH in
// tests/CMakeLists.txt): no training is needed to hold a job RUNNING, so this test needs
// neither libtorch nor bench-train.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/sd_notify_listener.h"
#include "common/subprocess.h"
#include "tests/e2e/cluster.h"
#include "tests/e2e/http_get.h"

namespace bench::testing {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

// Polls `condition` every 100 ms until it holds or `timeout` passes.
template <typename Condition>
bool WaitUntil(absl::Duration timeout, Condition condition) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (condition()) return true;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return condition();
}

int Count(const std::vector<std::string>& lines, const std::string& line) {
  return static_cast<int>(std::count(lines.begin(), lines.end(), line));
}

// Reads datagrams for `window`, every line into `lines`.
void Collect(NotifyListener& listener, absl::Duration window, std::vector<std::string>* lines) {
  const absl::Time end = absl::Now() + window;
  for (absl::Duration left = window; left > absl::ZeroDuration(); left = end - absl::Now()) {
    absl::StatusOr<std::string> datagram = listener.Receive(left);
    if (!datagram.ok()) return;
    for (absl::string_view line : absl::StrSplit(*datagram, '\n', absl::SkipEmpty())) {
      lines->emplace_back(line);
    }
  }
}

TEST(SystemdNotifyTest, BenchdIsReadyAfterRecoveryPingsTheWatchdogAndSaysStopping) {
  LoopbackCluster cluster;
  ASSERT_TRUE(cluster.StartBenchd().ok()) << cluster.Log("benchd.log");
  ASSERT_TRUE(cluster.StartAgent("node-a", 1).ok());
  ASSERT_TRUE(cluster.WaitForAgents(1).ok()) << cluster.Log("agent-node-a.log");
  CommandResult submitted = cluster.Benchctl(
      {"submit", "--gpus", "1", "--model", "resnet18", "--bs", "2", "--iters", "5", "--warmup",
       "1", "--image-size", "32"},
      60);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
  const std::string job_id = std::string(absl::StripAsciiWhitespace(
      std::vector<std::string>(absl::StrSplit(submitted.stdout_text, '\n')).front()));
  ASSERT_TRUE(absl::StartsWith(job_id, "job-")) << submitted.output;
  const std::string running =
      absl::StrCat("SELECT count(*) FROM jobs WHERE id='", job_id, "' AND state='RUNNING'");
  ASSERT_TRUE(WaitUntil(absl::Seconds(60), [&] { return QueryInt(cluster.db_path(), running) == 1; }))
      << cluster.Log("benchd.log");

  // Killed mid-job: the database holds a RUNNING job for the next benchd to recover.
  ASSERT_EQ(cluster.KillBenchd(), -SIGKILL);

  auto listener = NotifyListener::Listen(cluster.dir() + "/notify.sock");
  ASSERT_TRUE(listener.ok()) << listener.status();
  SubprocessOptions options;
  options.argv = {BENCHD_PATH,
                  "--listen",
                  cluster.server(),
                  "--http",
                  absl::StrCat("127.0.0.1:", cluster.http_port()),
                  "--db",
                  cluster.db_path()};
  options.env = {{"NOTIFY_SOCKET", (*listener)->address()}, {"WATCHDOG_USEC", "1000000"}};
  options.stdout_mode = options.stderr_mode = SubprocessOptions::Output::kFile;
  options.stdout_path = options.stderr_path = cluster.dir() + "/benchd-notify.log";
  auto benchd = Subprocess::Start(options);
  ASSERT_TRUE(benchd.ok()) << benchd.status();
  const std::string log_file = "benchd-notify.log";

  std::vector<std::string> lines;
  ASSERT_TRUE((*listener)->WaitForLine("READY=1", absl::Seconds(60), &lines).ok())
      << cluster.Log(log_file);
  // Ready means recovered and serving: /readyz already answers so, and the job is back.
  absl::StatusOr<std::string> readyz = HttpGet(cluster.http_port(), "/readyz", 5);
  ASSERT_TRUE(readyz.ok()) << readyz.status() << cluster.Log(log_file);
  EXPECT_EQ(*readyz, "ready\n");
  CommandResult status = cluster.Benchctl({"status", job_id}, 10);
  EXPECT_EQ(status.exit_code, 0) << status.output;
  EXPECT_THAT(status.output, HasSubstr(job_id));
  // What it was doing before, and what it does now, in STATUS= lines.
  EXPECT_THAT(lines, Contains(HasSubstr("STATUS=opening " + cluster.db_path())));
  EXPECT_THAT(lines, Contains(HasSubstr(absl::StrCat("STATUS=serving: gRPC port ",
                                                      cluster.server().substr(
                                                          cluster.server().rfind(':') + 1)))));
  EXPECT_EQ(Count(lines, "READY=1"), 1);

  // WATCHDOG_USEC=1s: a ping every 500 ms while the store answers.
  lines.clear();
  Collect(**listener, absl::Seconds(3), &lines);
  EXPECT_GE(Count(lines, "WATCHDOG=1"), 4);
  EXPECT_LE(Count(lines, "WATCHDOG=1"), 8);

  (*benchd)->SignalGroup(SIGTERM);
  lines.clear();
  EXPECT_TRUE((*listener)->WaitForLine("STOPPING=1", absl::Seconds(10), &lines).ok())
      << cluster.Log(log_file);
  EXPECT_EQ((*benchd)->Wait(), 0) << cluster.Log(log_file);
  // No ping after STOPPING=1 (the watchdog stops first), nothing after the exit.
  lines.clear();
  Collect(**listener, absl::Milliseconds(700), &lines);
  EXPECT_EQ(Count(lines, "WATCHDOG=1"), 0);
}

TEST(SystemdNotifyTest, BenchAgentIsReadyAfterStartAndSaysStoppingOnSigterm) {
  LoopbackCluster cluster;
  ASSERT_TRUE(cluster.StartBenchd().ok()) << cluster.Log("benchd.log");
  // The abstract namespace this time (systemd uses a path, but both are the protocol).
  auto listener = NotifyListener::Listen(absl::StrCat("@benchfleet-e2e-agent-", getpid()));
  ASSERT_TRUE(listener.ok()) << listener.status();
  ASSERT_TRUE(cluster.StartAgent("node-n", 1, {}, {{"NOTIFY_SOCKET", (*listener)->address()}}).ok());
  std::vector<std::string> lines;
  ASSERT_TRUE((*listener)->WaitForLine("READY=1", absl::Seconds(30), &lines).ok())
      << cluster.Log("agent-node-n.log");
  EXPECT_THAT(lines, Contains(HasSubstr("STATUS=running; controller " + cluster.server())));
  ASSERT_TRUE(cluster.WaitForAgents(1).ok()) << cluster.Log("agent-node-n.log");

  cluster.SignalAgent("node-n", SIGTERM);
  EXPECT_TRUE((*listener)->WaitForLine("STOPPING=1", absl::Seconds(10), &lines).ok())
      << cluster.Log("agent-node-n.log");
  EXPECT_TRUE(WaitUntil(absl::Seconds(30), [&] { return cluster.agent_pid("node-n") < 0; }))
      << cluster.Log("agent-node-n.log");
  EXPECT_EQ(Count(lines, "READY=1"), 1);
}

}  // namespace
}  // namespace bench::testing
