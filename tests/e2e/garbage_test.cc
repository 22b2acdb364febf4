// One misbehaving agent beside a well-behaved one (issue 27's faults): a real benchd with
// mutual TLS, a real bench-agent (node "good", bench-sim-train as its trainer) running a
// job, and tests/bench/garbage_agent (node "garbage", its own valid agent certificate)
// sending raw bytes inside TLS, random protobuf, oversized and impossible uploads from
// before the job is submitted until after it ended. benchd stays up, the good job's
// every iteration is stored once, every garbage call is refused with a clear code (or,
// for impossible samples, answered OK with all of them rejected), and nothing of the
// garbage is stored. No sleeps: each wait is a condition with a deadline.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/subprocess.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/cluster.h"
#include "tests/e2e/pki.h"

namespace bench::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kRanks = 2;
constexpr int kIterations = 40;

// The codes each kind may be answered with: each one a refusal that names its reason.
const std::map<std::string, std::set<std::string>>& AllowedCodes() {
  static const auto* allowed = new std::map<std::string, std::set<std::string>>{
      // benchd closes a connection that is not HTTP/2 (with a GOAWAY, or at once).
      {"raw", {"CLOSED", "CLOSED_BEFORE_WRITE", "RESET", "GOAWAY_PROTOCOL_ERROR"}},
      // Random bytes do not parse (INVALID_ARGUMENT naming the method); if they happen to,
      // the node they name is not the caller's (PERMISSION_DENIED); a method that does not
      // exist is UNIMPLEMENTED.
      {"protobuf", {"INVALID_ARGUMENT", "PERMISSION_DENIED", "UNIMPLEMENTED"}},
      {"oversized", {"RESOURCE_EXHAUSTED"}},
      // OK with every sample rejected (checked on the totals), strings that are not UTF-8
      // (INVALID_ARGUMENT), samples in another node's name (PERMISSION_DENIED), 100,000
      // samples over the size limit (RESOURCE_EXHAUSTED).
      {"impossible", {"OK", "INVALID_ARGUMENT", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED"}}};
  return *allowed;
}

TEST(GarbageAgentTest, GarbageAtFullSpeedIsRefusedAndStoresNothingWhileAGoodAgentRunsItsJob) {
  LoopbackCluster cluster;
  const std::string pki = cluster.dir() + "/pki";
  std::filesystem::create_directories(pki);
  Pki("make-ca.sh", pki);
  Pki("make-server-cert.sh", pki + " server DNS:localhost,IP:127.0.0.1");
  Pki("make-client-cert.sh", pki + " agent good");
  Pki("make-client-cert.sh", pki + " agent garbage");
  const std::string admin = Pki("new-token.sh", "admin ops " + pki + "/tokens");
  ASSERT_FALSE(::testing::Test::HasFailure()) << "deploy/pki could not make the PKI";
  cluster.set_benchctl_env({{"BENCH_TOKEN", admin}, {"BENCH_TLS_CA", pki + "/ca.pem"}});
  ASSERT_TRUE(cluster.StartBenchd(SecureBenchdFlags(pki)).ok()) << cluster.Log("benchd.log");
  ASSERT_TRUE(cluster
                  .StartAgent("good", kRanks,
                              {"--tls-ca", pki + "/ca.pem", "--tls-cert", pki + "/good.pem",
                               "--tls-key", pki + "/good.key"})
                  .ok());
  ASSERT_TRUE(cluster.WaitForAgents(1).ok()) << cluster.Log("agent-good.log");

  // The garbage runs from before the job is submitted until after it ended (SIGTERM).
  const std::string summary = cluster.dir() + "/garbage.json";
  SubprocessOptions options;
  options.argv = {GARBAGE_AGENT_PATH,
                  "--target",
                  cluster.server(),
                  "--tls_ca",
                  pki + "/ca.pem",
                  "--tls_cert",
                  pki + "/garbage.pem",
                  "--tls_key",
                  pki + "/garbage.key",
                  "--agent",
                  "garbage",
                  "--impersonate",
                  "good",
                  "--forge_job",
                  "job-000001",
                  "--duration",
                  "3600s",
                  "--summary_json",
                  summary};
  options.stdout_mode = SubprocessOptions::Output::kFile;
  options.stdout_path = cluster.dir() + "/garbage.log";
  options.stderr_mode = SubprocessOptions::Output::kFile;
  options.stderr_path = cluster.dir() + "/garbage.log";
  absl::StatusOr<std::unique_ptr<Subprocess>> garbage = Subprocess::Start(options);
  ASSERT_TRUE(garbage.ok()) << garbage.status();

  CommandResult submit = cluster.Benchctl({"submit", "--gpus", absl::StrCat(kRanks), "--bs", "2",
                                           "--iters", absl::StrCat(kIterations), "--warmup", "2",
                                           "--image-size", "64", "--wait"});
  (*garbage)->SignalGroup(SIGTERM);
  const int garbage_exit = (*garbage)->Wait();
  ASSERT_EQ(submit.exit_code, 0) << submit.output << "\nbenchd:\n"
                                 << cluster.Log("benchd.log") << "\nagent:\n"
                                 << cluster.Log("agent-good.log");
  const std::string job_id = std::string(absl::StripAsciiWhitespace(
      std::vector<std::string>(absl::StrSplit(submit.stdout_text, '\n')).front()));
  EXPECT_EQ(job_id, "job-000001") << "the garbage forged samples for job-000001";

  // benchd is up and answers; the good job's samples are all there, once.
  EXPECT_TRUE(cluster.BenchdAlive());
  CommandResult agents = cluster.Benchctl({"agents"});
  EXPECT_EQ(agents.exit_code, 0) << agents.output;
  EXPECT_THAT(agents.stdout_text, HasSubstr("good"));
  EXPECT_THAT(agents.stdout_text, ::testing::Not(HasSubstr("garbage")));
  const std::string& db = cluster.db_path();
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM samples WHERE job_id='" + job_id + "'"),
            kRanks * kIterations);
  // Nothing else: no other job's samples, no GPU readings (the good agent has no NVML),
  // no iteration beyond the job's.
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM samples"), kRanks * kIterations);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM gpu_samples"), 0);
  EXPECT_EQ(QueryInt(db, "SELECT max(iteration) FROM samples"), kIterations);

  // Every garbage call was refused with a clear code; nothing it sent was stored.
  EXPECT_EQ(garbage_exit, 0) << ReadFile(cluster.dir() + "/garbage.log");
  const std::string text = ReadFile(summary);
  ASSERT_FALSE(text.empty()) << "no summary; its log:\n"
                             << ReadFile(cluster.dir() + "/garbage.log");
  std::cout << "garbage_agent's summary: " << text;
  nlohmann::json json = nlohmann::json::parse(text);
  for (const auto& [kind, allowed] : AllowedCodes()) {
    SCOPED_TRACE(kind);
    ASSERT_TRUE(json["kinds"].contains(kind)) << text;
    EXPECT_GT(json["kinds"][kind]["calls"].get<int64_t>(), 0) << text;
    for (const auto& [code, n] : json["kinds"][kind]["codes"].items()) {
      EXPECT_TRUE(allowed.count(code) > 0) << code << " x" << n << " in " << text;
    }
  }
  EXPECT_EQ(json["stored"].get<int64_t>(), 0) << text;
  EXPECT_EQ(json["duplicates"].get<int64_t>(), 0) << text;
  EXPECT_EQ(json["gpu_stored"].get<int64_t>(), 0) << text;
  EXPECT_EQ(json["gpu_duplicates"].get<int64_t>(), 0) << text;
  EXPECT_GT(json["rejected"].get<int64_t>(), 0) << text;
}

}  // namespace
}  // namespace bench::testing
