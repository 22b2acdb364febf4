// The disk briefly full under upload load (issue 27's faults), with the tool the scale run
// uses: tests/bench/fault_disk.sh makes a loop-mounted ext4 (needs root), benchd keeps its
// database there, three real bench-agents (their spools on another disk) run three jobs
// of bench-sim-train at 5 ms a step, and the disk is filled while they upload. benchd
// stays up and answers the uploads UNAVAILABLE (and nothing else); the agents keep their
// samples in their spools and stay registered; after `fault_disk.sh free` they replay
// them and every job ends SUCCEEDED in its first attempt with every iteration stored
// exactly once. No sleeps: each wait is a condition with a generous deadline.
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tests/e2e/cluster.h"
#include "tests/e2e/http_get.h"
#include "tests/e2e/pki.h"

namespace bench::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kAgents = 3;
constexpr int kRanks = 4;  // per job, one job per agent
constexpr int kIterations = 3000;

bool WaitUntil(absl::Duration timeout, const std::function<bool()>& done) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(200));
  }
  return true;
}

std::string FaultDisk(const std::string& args) {
  return Shell(absl::StrCat("bash '", BENCH_SOURCE_DIR, "/tests/bench/fault_disk.sh' ", args));
}

// The samples benchd could not store (bench_ingest_errors_total{reason="store_failed"}).
int64_t StoreFailed(int http_port) {
  absl::StatusOr<std::string> metrics = HttpGet(http_port, "/metrics");
  if (!metrics.ok()) return -1;
  const std::string key = "bench_ingest_errors_total{reason=\"store_failed\"} ";
  for (absl::string_view line : absl::StrSplit(*metrics, '\n')) {
    int64_t n = 0;
    if (absl::ConsumePrefix(&line, key) && absl::SimpleAtoi(line, &n)) return n;
  }
  return 0;
}

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = std::make_unique<LoopbackCluster>();
    disk_ = cluster_->dir() + "/disk";
    std::cout << FaultDisk("make " + disk_ + " 128");
    ASSERT_FALSE(HasFailure()) << "fault_disk.sh make needs root (losetup, mount)";
    made_ = true;
  }
  void TearDown() override {
    cluster_->StopBenchd();  // it holds the database open
    if (made_) FaultDisk("remove " + disk_);
    cluster_.reset();
  }

  std::unique_ptr<LoopbackCluster> cluster_;
  std::string disk_;
  bool made_ = false;
};

TEST_F(DiskFullTest, UploadsOnAFullDiskAreRefusedUnavailableAndReplayedFromTheSpoolsOnceFreed) {
  // bench-sim-train at 5 ms a step (--sim-step-s): about 200 iterations/s a rank.
  const std::string trainer = cluster_->dir() + "/fast-sim-train.sh";
  Shell(absl::StrCat("printf '#!/bin/sh\\nexec %s \"$@\" --sim-step-s 0.005\\n' '",
                     BENCH_TRAIN_PATH, "' > '", trainer, "' && chmod +x '", trainer, "'"));
  cluster_->set_db_path(disk_ + "/bench.db");
  ASSERT_TRUE(cluster_->StartBenchd().ok()) << cluster_->Log("benchd.log");
  std::vector<std::string> agents;
  for (int a = 0; a < kAgents; ++a) {
    agents.push_back(absl::StrCat("node-", a));
    ASSERT_TRUE(cluster_->StartAgent(agents.back(), kRanks, {"--bench-train", trainer}).ok());
  }
  ASSERT_TRUE(cluster_->WaitForAgents(kAgents).ok()) << cluster_->Log("benchd.log");
  std::vector<std::string> jobs;
  for (int j = 0; j < kAgents; ++j) {
    CommandResult submit =
        cluster_->Benchctl({"submit", "--gpus", absl::StrCat(kRanks), "--bs", "2", "--iters",
                            absl::StrCat(kIterations), "--warmup", "2", "--image-size", "64"});
    ASSERT_EQ(submit.exit_code, 0) << submit.output;
    jobs.push_back(std::string(absl::StripAsciiWhitespace(submit.stdout_text)));
  }
  const std::string& db = cluster_->db_path();
  auto stored = [&](const std::string& where) {
    return QueryInt(db, "SELECT count(*) FROM samples" + where);
  };
  // Every job is uploading.
  ASSERT_TRUE(WaitUntil(absl::Seconds(120), [&] {
    for (const std::string& job : jobs) {
      if (stored(" WHERE job_id='" + job + "'") <= 0) return false;
    }
    return true;
  })) << cluster_->Log("benchd.log");

  // Full: uploads are refused (benchd counts the samples it could not store) while the
  // ranks go on; wait until every rank has exited, so the rest of every job is spooled.
  std::cout << FaultDisk("fill " + disk_);
  ASSERT_TRUE(WaitUntil(absl::Seconds(120), [&] { return StoreFailed(cluster_->http_port()) > 0; }))
      << "no upload refused on a full disk\n"
      << cluster_->Log("benchd.log");
  ASSERT_TRUE(WaitUntil(absl::Seconds(600), [&] {
    for (const std::string& agent : agents) {
      if (!cluster_->AgentChildren(agent).empty()) return false;
    }
    return true;
  })) << "the ranks did not end";
  const int64_t stored_while_full = stored("");
  EXPECT_LT(stored_while_full, kAgents * kRanks * kIterations) << "nothing left to replay";
  EXPECT_TRUE(cluster_->BenchdAlive()) << cluster_->Log("benchd.log");
  // The refusals the agents saw were UNAVAILABLE (retried), nothing else.
  for (const std::string& agent : agents) {
    const std::string log = cluster_->Log("agent-" + agent + ".log");
    for (absl::string_view line : absl::StrSplit(log, '\n')) {
      if (!absl::StrContains(line, " failed (attempt ")) continue;
      EXPECT_THAT(std::string(line), HasSubstr("UNAVAILABLE")) << agent;
    }
  }
  std::cout << "stored while full: " << stored_while_full << " of "
            << kAgents * kRanks * kIterations << "; refused samples so far "
            << StoreFailed(cluster_->http_port()) << "\n";

  // Freed: the spools replay; every job ends in its first attempt with all it ran.
  std::cout << FaultDisk("free " + disk_);
  ASSERT_TRUE(WaitUntil(
      absl::Seconds(600),
      [&] { return QueryInt(db, "SELECT count(*) FROM jobs WHERE state='SUCCEEDED'") == kAgents; }))
      << cluster_->Benchctl({"list"}).output << cluster_->Log("benchd.log");
  for (const std::string& job : jobs) {
    SCOPED_TRACE(job);
    const std::string where = " WHERE job_id='" + job + "'";
    EXPECT_EQ(stored(where), kRanks * kIterations);
    EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM (SELECT DISTINCT rank, iteration FROM samples" +
                               where + ")"),
              kRanks * kIterations);
    EXPECT_EQ(QueryInt(db, "SELECT attempt FROM jobs WHERE id='" + job + "'"), 1);
  }
  EXPECT_EQ(stored(""), kAgents * kRanks * kIterations);
  CommandResult list = cluster_->Benchctl({"agents"});
  EXPECT_EQ(CountOccurrences(list.stdout_text, " yes "), kAgents) << list.output;
  EXPECT_TRUE(cluster_->BenchdAlive());
}

}  // namespace
}  // namespace bench::testing
