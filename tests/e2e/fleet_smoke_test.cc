// The fleet simulator's smoke test (issue 27 item 6): a real benchd with mutual TLS and a
// real fleet_sim process, 64 simulated nodes x 8 GPUs for 60 s at one tenth of the rates
// (1 iteration/s per rank, 1 GPU reading/s per GPU), with job churn. After benchd stops:
// every iteration and reading the simulator saw acknowledged is in the SQLite file exactly
// once (per job, attempt and rank, against fleet_sim's --acked_csv), nothing was left
// unacknowledged or refused, no RPC failed, and the latencies stay within generous bounds
// (the real figures are in docs/PERFORMANCE.md, not here).
#include <sqlite3.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/subprocess.h"
#include "tests/e2e/cluster.h"
#include "tests/e2e/pki.h"

namespace bench::testing {
namespace {

using RankKey = std::tuple<std::string, int, int>;

// (job, attempt, rank) -> rows of `table`.
std::map<RankKey, int64_t> RowsByRank(const std::string& db_path, const std::string& table) {
  std::map<RankKey, int64_t> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << db_path;
    sqlite3_close(db);
    return rows;
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* stmt = nullptr;
  const std::string sql =
      absl::StrCat("SELECT job_id, attempt, rank, COUNT(*) FROM ", table, " GROUP BY 1, 2, 3");
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sql;
  while (stmt != nullptr && sqlite3_step(stmt) == SQLITE_ROW) {
    rows[{reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), sqlite3_column_int(stmt, 1),
          sqlite3_column_int(stmt, 2)}] = sqlite3_column_int64(stmt, 3);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return rows;
}

TEST(FleetSmokeTest, SixtyFourSimulatedNodesOverMutualTlsLoseNothing) {
  LoopbackCluster cluster;
  const std::string pki = cluster.dir() + "/pki";
  Shell(absl::StrCat("bash '", BENCH_SOURCE_DIR, "/tests/bench/fleet_pki.sh' '", pki, "' 64"));
  ASSERT_FALSE(::testing::Test::HasFailure()) << "fleet_pki.sh failed";
  cluster.set_benchctl_env({{"BENCH_TLS_CA", pki + "/ca.pem"},
                            {"BENCH_TLS_CERT", pki + "/fleet-viewer.pem"},
                            {"BENCH_TLS_KEY", pki + "/fleet-viewer.key"}});
  ASSERT_TRUE(cluster
                  .StartBenchd({"--tls-cert", pki + "/server.pem", "--tls-key", pki + "/server.key",
                                "--client-ca", pki + "/ca.pem"})
                  .ok())
      << cluster.Log("benchd.log");

  const std::string summary_path = cluster.dir() + "/summary.json";
  const std::string acked_path = cluster.dir() + "/acked.csv";
  SubprocessOptions sim;
  sim.argv = {FLEET_SIM_PATH,
              "--target",
              cluster.server(),
              "--ca",
              pki + "/ca.pem",
              "--cert_dir",
              pki,
              "--nodes",
              "64",
              "--gpus_per_node",
              "8",
              "--duration",
              "60s",
              "--scale",
              "0.1",
              "--job_iterations",
              "20",
              "--job_mix",
              "1:4,8:3,32:2,256:1",
              "--report_interval",
              "10s",
              "--summary_json",
              summary_path,
              "--acked_csv",
              acked_path};
  sim.stdout_mode = SubprocessOptions::Output::kFile;
  sim.stdout_path = cluster.dir() + "/fleet_sim.log";
  sim.stderr_mode = SubprocessOptions::Output::kFile;
  sim.stderr_path = sim.stdout_path;
  auto process = Subprocess::Start(sim);
  ASSERT_TRUE(process.ok()) << process.status();
  // 60 s of load, then the drain: generous for 2 loaded cores.
  std::optional<int> exit_code;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
       !(exit_code = (*process)->TryWait()) && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const std::string sim_log = cluster.Log("fleet_sim.log");
  ASSERT_TRUE(exit_code.has_value()) << "fleet_sim still running after 300 s\n" << sim_log;
  EXPECT_EQ(*exit_code, 0) << sim_log;
  EXPECT_EQ(cluster.StopBenchd(), 0) << cluster.Log("benchd.log");

  std::ifstream summary_file(summary_path);
  ASSERT_TRUE(summary_file.good()) << sim_log;
  const nlohmann::json summary = nlohmann::json::parse(summary_file, nullptr, false);
  ASSERT_FALSE(summary.is_discarded()) << "unparsable " << summary_path;

  // Nothing lost, refused or left over; no faults, so no duplicates either.
  const auto& samples = summary["samples"];
  EXPECT_GT(samples["iterations_acked"].get<int64_t>(), 0);
  EXPECT_GT(samples["readings_acked"].get<int64_t>(), 0);
  EXPECT_EQ(samples["iterations_acked"], samples["iterations_generated"]);
  EXPECT_EQ(samples["readings_acked"], samples["readings_generated"]);
  EXPECT_EQ(samples["stored"], samples["iterations_acked"]);
  EXPECT_EQ(samples["gpu_stored"], samples["readings_acked"]);
  EXPECT_EQ(samples["duplicates"].get<int64_t>(), 0);
  EXPECT_EQ(samples["gpu_duplicates"].get<int64_t>(), 0);
  EXPECT_EQ(samples["rejected"].get<int64_t>(), 0);
  EXPECT_EQ(samples["unacknowledged_at_exit"].get<int64_t>(), 0);
  EXPECT_EQ(samples["dropped"].get<int64_t>(), 0);

  // Every RPC succeeded (the streams end CANCELLED: the simulator closes them), generous bounds.
  for (const auto& [method, stats] : summary["methods"].items()) {
    for (const auto& [code, count] : stats["errors"].items()) {
      if (method == "StreamAssignments" && code == "CANCELLED") continue;
      ADD_FAILURE() << method << ": " << count << " x " << code;
    }
    if (method == "StreamAssignments" || method == "StreamAssignments.events") continue;
    EXPECT_GT(stats["calls"].get<int64_t>(), 0) << method;
    EXPECT_LT(stats["p99_ms"].get<double>(), 10000) << method;
  }
  EXPECT_EQ(summary["methods"]["Register"]["calls"].get<int64_t>(), 64);
  EXPECT_EQ(summary["reconnects"].get<int64_t>(), 0);
  const auto& jobs = summary["jobs"];
  EXPECT_GT(jobs["submitted"].get<int64_t>(), 0);
  EXPECT_GT(jobs["finished"].get<int64_t>(), 0);
  EXPECT_GT(jobs["submit_to_assigned"]["count"].get<int64_t>(), 0);

  // The database holds exactly what was acknowledged, rank by rank.
  const auto iterations = RowsByRank(cluster.db_path(), "samples");
  const auto readings = RowsByRank(cluster.db_path(), "gpu_samples");
  std::ifstream acked(acked_path);
  std::string line;
  ASSERT_TRUE(std::getline(acked, line));
  EXPECT_EQ(line, "job_id,attempt,rank,iterations,readings,refused_iterations,refused_readings");
  std::map<RankKey, std::pair<int64_t, int64_t>> expected;
  while (std::getline(acked, line)) {
    std::vector<std::string> f = absl::StrSplit(line, ',');
    ASSERT_EQ(f.size(), 7u) << line;
    int attempt = 0, rank = 0;
    int64_t it = 0, rd = 0, refused_it = -1, refused_rd = -1;
    ASSERT_TRUE(absl::SimpleAtoi(f[1], &attempt) && absl::SimpleAtoi(f[2], &rank) &&
                absl::SimpleAtoi(f[3], &it) && absl::SimpleAtoi(f[4], &rd) &&
                absl::SimpleAtoi(f[5], &refused_it) && absl::SimpleAtoi(f[6], &refused_rd))
        << line;
    EXPECT_EQ(refused_it, 0) << line;  // no faults: benchd refuses nothing
    EXPECT_EQ(refused_rd, 0) << line;
    expected[{f[0], attempt, rank}] = {it, rd};
  }
  EXPECT_GT(expected.size(), 64u);
  for (const auto& [key, counts] : expected) {
    auto found_it = iterations.find(key);
    auto found_rd = readings.find(key);
    EXPECT_EQ(found_it == iterations.end() ? 0 : found_it->second, counts.first)
        << std::get<0>(key) << " attempt " << std::get<1>(key) << " rank " << std::get<2>(key);
    EXPECT_EQ(found_rd == readings.end() ? 0 : found_rd->second, counts.second)
        << std::get<0>(key) << " attempt " << std::get<1>(key) << " rank " << std::get<2>(key);
  }
  // And nothing that was not acknowledged.
  for (const auto& [key, n] : iterations) {
    EXPECT_TRUE(expected.count(key)) << std::get<0>(key) << " rank " << std::get<2>(key);
  }
  for (const auto& [key, n] : readings) {
    EXPECT_TRUE(expected.count(key)) << std::get<0>(key) << " rank " << std::get<2>(key);
  }
}

}  // namespace
}  // namespace bench::testing
