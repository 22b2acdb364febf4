// GPU telemetry end to end without a GPU: benchd, an agent that loads the fake NVML
// (tests/fake_nvml: two GPUs at 300 W and 250 W) and runs its "GPU" ranks on the CPU,
// real bench-train ranks, benchctl, and a real Prometheus scraping benchd's /metrics.
// The scripted readings must come out of SQLite, benchctl, /metrics and Prometheus; a
// scenario file's planted faults (PCIe downtrain, XID errors) must reach SQLite.
#include <sqlite3.h>

#include <fstream>
#include <memory>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/free_port.h"
#include "common/subprocess.h"
#include "tests/e2e/cluster.h"
#include "tests/e2e/http_get.h"

namespace bench::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kPrometheus[] = "/usr/bin/prometheus";
constexpr char kPromtool[] = "/usr/bin/promtool";
constexpr char kPython[] = "/usr/bin/python3";

double QueryDouble(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  double value = -1;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL) {
      value = sqlite3_column_double(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return value;
}

// Runs `argv`; returns (exit code, stdout and stderr).
std::pair<int, std::string> RunTool(std::vector<std::string> argv, const std::string& output_path) {
  SubprocessOptions options;
  options.argv = std::move(argv);
  options.stdout_mode = SubprocessOptions::Output::kFile;
  options.stderr_mode = SubprocessOptions::Output::kFile;
  options.stdout_path = options.stderr_path = output_path;
  auto process = Subprocess::Start(options);
  if (!process.ok()) return {-1, process.status().ToString()};
  int code = (*process)->Wait();
  std::ifstream in(output_path);
  return {code, std::string(std::istreambuf_iterator<char>(in), {})};
}

class TelemetryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new LoopbackCluster();
    absl::Status status = cluster_->StartBenchd();
    if (status.ok()) {
      status = cluster_->StartAgent("dgx-fake", 0,
                                    {"--nvml-library", FAKE_NVML_LIBRARY, "--gpu-ranks-on-cpu",
                                     "--gpu-sample-hz", "20"});
    }
    if (status.ok()) status = cluster_->WaitForAgents(1);
    if (status.ok()) status = StartPrometheus();
    setup_status_ = new absl::Status(status);
  }
  static void TearDownTestSuite() {
    delete prometheus_;  // SIGKILLs its process group
    delete cluster_;
    delete setup_status_;
  }
  void SetUp() override { ASSERT_TRUE(setup_status_->ok()) << *setup_status_; }

  static absl::Status StartPrometheus() {
    absl::StatusOr<int> port = PickFreePort("127.0.0.1");
    if (!port.ok()) return port.status();
    prometheus_port_ = *port;
    std::string config = cluster_->dir() + "/prometheus.yml";
    std::ofstream(config) << "global:\n  scrape_interval: 500ms\n"
                          << "scrape_configs:\n  - job_name: benchd\n    static_configs:\n"
                          << "      - targets: ['127.0.0.1:" << cluster_->http_port() << "']\n";
    SubprocessOptions options;
    options.argv = {kPrometheus, "--config.file=" + config,
                    "--storage.tsdb.path=" + cluster_->dir() + "/tsdb",
                    absl::StrCat("--web.listen-address=127.0.0.1:", prometheus_port_)};
    options.stdout_mode = SubprocessOptions::Output::kFile;
    options.stderr_mode = SubprocessOptions::Output::kFile;
    options.stdout_path = options.stderr_path = cluster_->dir() + "/prometheus.log";
    auto process = Subprocess::Start(options);
    if (!process.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot start ", kPrometheus, " (the test command installs Debian's "
                       "prometheus package): ", process.status().ToString()));
    }
    prometheus_ = process->release();
    // Ready, and has scraped benchd once: Prometheus applies new targets only every 5 s, so a
    // job submitted right after start can end before the first scrape.
    for (int i = 0; i < 300; ++i) {
      absl::StatusOr<double> up = PromQuery("up{job=\"benchd\"}");
      if (up.ok() && *up == 1) return absl::OkStatus();
      if (prometheus_->TryWait().has_value()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return absl::UnavailableError(
        absl::StrCat("prometheus did not scrape benchd:\n", cluster_->Log("prometheus.log")));
  }

  // The single value of an instant query, or an error.
  static absl::StatusOr<double> PromQuery(const std::string& query) {
    absl::StatusOr<std::string> body =
        HttpGet(prometheus_port_, "/api/v1/query?query=" + UrlEncode(query));
    if (!body.ok()) return body.status();
    // {"status":"success","data":{"resultType":"vector","result":[{"metric":{...},
    //  "value":[1700000000.1,"300"]}]}}
    size_t value = body->find("\"value\":[");
    if (value == std::string::npos) return absl::NotFoundError(*body);
    size_t open = body->find('"', body->find(',', value) + 1);
    size_t close = body->find('"', open + 1);
    double number = 0;
    if (open == std::string::npos || close == std::string::npos ||
        !absl::SimpleAtod(body->substr(open + 1, close - open - 1), &number)) {
      return absl::InternalError(*body);
    }
    return number;
  }

  static LoopbackCluster* cluster_;
  static Subprocess* prometheus_;
  static int prometheus_port_;
  static absl::Status* setup_status_;
};

LoopbackCluster* TelemetryTest::cluster_ = nullptr;
Subprocess* TelemetryTest::prometheus_ = nullptr;
int TelemetryTest::prometheus_port_ = 0;
absl::Status* TelemetryTest::setup_status_ = nullptr;

TEST_F(TelemetryTest, FakeNvmlReadingsReachSqliteBenchctlMetricsAndPrometheus) {
  // Long enough (seconds) for Prometheus, scraping every 500 ms, to see the live series.
  constexpr int kIters = 60;
  CommandResult submit = cluster_->Benchctl({"submit", "--gpus", "2", "--model", "resnet18",
                                             "--bs", "2", "--iters", absl::StrCat(kIters),
                                             "--warmup", "5",
                                             "--image-size", "64"});
  ASSERT_EQ(submit.exit_code, 0) << submit.output;
  std::string job_id = std::string(absl::StripAsciiWhitespace(
      std::vector<std::string>(absl::StrSplit(submit.stdout_text, '\n')).front()));
  ASSERT_THAT(job_id, ::testing::StartsWith("job-"));

  // While it runs, /metrics carries each GPU's readings.
  std::string metrics;
  for (int i = 0; i < 1200 && metrics.find("bench_gpu_power_watts{") == std::string::npos;
       ++i) {
    absl::StatusOr<std::string> body = HttpGet(cluster_->http_port(), "/metrics");
    ASSERT_TRUE(body.ok()) << body.status();
    metrics = *body;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_THAT(metrics, HasSubstr("bench_gpu_power_watts{node=\"dgx-fake\",gpu=\"0\","
                                 "uuid=\"GPU-fake-0\",bench_job=\"" + job_id + "\""))
      << metrics << cluster_->Log("agent-dgx-fake.log");
  ASSERT_THAT(metrics, HasSubstr("bench_gpu_sm_clock_hertz{"));
  std::string metrics_path = cluster_->dir() + "/metrics.txt";
  std::ofstream(metrics_path) << metrics;

  // Prometheus's own linter accepts the exposition...
  auto [lint_code, lint] =
      RunTool({"/bin/sh", "-c", std::string(kPromtool) + " check metrics < " + metrics_path},
          cluster_->dir() + "/promtool.out");
  EXPECT_EQ(lint_code, 0) << lint;
  // ...and every metric the Grafana dashboard queries is exported.
  auto [dash_code, dash] =
      RunTool({kPython, BENCH_SOURCE_DIR "/tests/metrics/dashboard_metrics.py",
           BENCH_SOURCE_DIR "/deploy/grafana/dashboards/benchfleet.json", metrics_path},
          cluster_->dir() + "/dashboard.out");
  EXPECT_EQ(dash_code, 0) << dash;

  // Prometheus scrapes the live series while the job runs (the series ends with the job).
  absl::StatusOr<double> live_power = absl::UnavailableError("not queried");
  for (int i = 0; i < 600; ++i) {
    live_power = PromQuery("bench_gpu_power_watts{gpu=\"1\",bench_job=\"" + job_id + "\"}");
    if (live_power.ok()) break;
    CommandResult status = cluster_->Benchctl({"status", job_id, "--format", "json"});
    if (status.stdout_text.find("JOB_STATE_RUNNING") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(live_power.ok()) << live_power.status() << "\nPrometheus's targets: "
                               << HttpGet(prometheus_port_, "/api/v1/targets").value_or("?");

  // The job ends; its readings are joined to the measured window.
  std::string state;
  for (int i = 0; i < 600; ++i) {
    CommandResult status = cluster_->Benchctl({"status", job_id, "--format", "json"});
    if (status.stdout_text.find("JOB_STATE_SUCCEEDED") != std::string::npos &&
        status.stdout_text.find("gpu_telemetry") != std::string::npos) {
      state = "SUCCEEDED";
      break;
    }
    ASSERT_EQ(status.stdout_text.find("JOB_STATE_FAILED"), std::string::npos)
        << status.stdout_text << cluster_->Log("agent-dgx-fake.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(state, "SUCCEEDED") << cluster_->Log("benchd.log");

  const std::string& db = cluster_->db_path();
  std::string where = " WHERE job_id='" + job_id + "'";
  EXPECT_GT(QueryDouble(db, "SELECT count(*) FROM gpu_samples" + where + " AND rank=0"), 10);
  EXPECT_EQ(QueryDouble(db, "SELECT count(DISTINCT gpu_uuid) FROM gpu_samples" + where), 2);
  EXPECT_EQ(QueryDouble(db, "SELECT max(power_w) FROM gpu_samples" + where + " AND rank=0"), 300);
  EXPECT_EQ(QueryDouble(db, "SELECT count(*) FROM gpu_telemetry" + where), 2);
  // Energy per image = scripted power × the rank's measured window / its images.
  for (int rank : {0, 1}) {
    std::string rank_where = where + " AND rank=" + std::to_string(rank);
    double window = QueryDouble(db, "SELECT window_s FROM rank_summaries" + rank_where);
    double images = QueryDouble(db, "SELECT measured_images FROM rank_summaries" + rank_where);
    double joules = QueryDouble(db, "SELECT energy_per_image_j FROM gpu_telemetry" + rank_where);
    double watts = rank == 0 ? 300 : 250;
    ASSERT_GT(images, 0);
    EXPECT_NEAR(joules, watts * window / images, 0.03 * watts * window / images)
        << "rank " << rank;
  }
  EXPECT_EQ(QueryDouble(db, "SELECT count(*) FROM samples" + where +
                                " AND power_w_mean IS NOT NULL AND sm_clock_mhz_mean IS NOT NULL"),
            2 * kIters);

  CommandResult text = cluster_->Benchctl({"status", job_id});
  EXPECT_THAT(text.stdout_text, HasSubstr("J/image"));
  EXPECT_THAT(text.stdout_text, HasSubstr("GPU-fake-1"));
  EXPECT_THAT(text.stdout_text, HasSubstr("1980 (1980-1980)"));
  CommandResult grid = cluster_->Benchctl({"results", "--metric", "sm_clock"});
  EXPECT_THAT(grid.stdout_text, HasSubstr("median GPU SM clock (MHz)"));
  EXPECT_THAT(grid.stdout_text, HasSubstr("1868"));  // mean of 1980 and 1755, rounded

  // Prometheus scraped the live series while the job ran.
  absl::StatusOr<double> power = absl::UnavailableError("not queried");
  for (int i = 0; i < 100; ++i) {
    power = PromQuery("max_over_time(bench_gpu_power_watts{gpu=\"1\",bench_job=\"" + job_id +
                      "\"}[10m])");
    if (power.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(power.ok()) << power.status() << cluster_->Log("prometheus.log");
  EXPECT_EQ(*power, 250);
  absl::StatusOr<double> ingested = absl::UnavailableError("not queried");
  for (int i = 0; i < 100; ++i) {
    ingested = PromQuery("max_over_time(bench_samples_ingested_total[10m])");
    if (ingested.ok() && *ingested >= 2 * kIters) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(ingested.ok()) << ingested.status();
  EXPECT_GE(*ingested, 2 * kIters);
}

// A scenario file's planted faults (common/fault_scenario.h) on one node's GPU 0 — a PCIe
// link trained at gen 3 x8 below its gen 5 x16, two XID errors — reach benchd's stored
// readings through the fake NVML (FAKE_NVML_SCENARIO, FAKE_NVML_NODE) and a real agent;
// its GPU 1, which no rule of that node names, keeps the healthy defaults.
TEST_F(TelemetryTest, ScenarioPlantedPcieDowntrainAndXidErrorsReachTheStoredReadings) {
  const std::string scenario = cluster_->dir() + "/planted.scenario";
  std::ofstream(scenario) << "benchfleet-scenario 1\n"
                          << "# GPU 0 of dgx-planted: a downtrained link and two XIDs\n"
                          << "gpu node=dgx-planted gpu=0 pcie_gen=3 pcie_gen_max=5 pcie_width=8 "
                             "pcie_width_max=16 xid_errors=2\n"
                          << "gpu node=dgx-other gpu=* pcie_gen=1 xid_errors=9\n";
  ASSERT_TRUE(cluster_
                  ->StartAgent("dgx-planted", 0,
                               {"--nvml-library", FAKE_NVML_LIBRARY, "--gpu-ranks-on-cpu",
                                "--gpu-sample-hz", "20"},
                               {{"FAKE_NVML_SCENARIO", scenario},
                                {"FAKE_NVML_NODE", "dgx-planted"},
                                {"FAKE_NVML_UUID_PREFIX", "GPU-planted"}})
                  .ok());
  ASSERT_TRUE(cluster_->WaitForAgents(2).ok()) << cluster_->Log("agent-dgx-planted.log");

  CommandResult submit =
      cluster_->Benchctl({"submit", "--gpus", "2", "--node", "dgx-planted", "--model", "resnet18",
                          "--bs", "2", "--iters", "20", "--warmup", "2", "--image-size", "64"});
  ASSERT_EQ(submit.exit_code, 0) << submit.output;
  std::string job_id = std::string(absl::StripAsciiWhitespace(
      std::vector<std::string>(absl::StrSplit(submit.stdout_text, '\n')).front()));
  ASSERT_THAT(job_id, ::testing::StartsWith("job-"));
  bool succeeded = false;
  for (int i = 0; i < 1200 && !succeeded; ++i) {
    CommandResult status = cluster_->Benchctl({"status", job_id, "--format", "json"});
    succeeded = status.stdout_text.find("JOB_STATE_SUCCEEDED") != std::string::npos &&
                status.stdout_text.find("gpu_telemetry") != std::string::npos;
    ASSERT_EQ(status.stdout_text.find("JOB_STATE_FAILED"), std::string::npos)
        << status.stdout_text << cluster_->Log("agent-dgx-planted.log");
    if (!succeeded) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(succeeded) << cluster_->Log("benchd.log");

  const std::string& db = cluster_->db_path();
  const std::string gpu0 =
      " FROM gpu_samples WHERE job_id='" + job_id + "' AND gpu_uuid='GPU-planted-0'";
  const std::string gpu1 =
      " FROM gpu_samples WHERE job_id='" + job_id + "' AND gpu_uuid='GPU-planted-1'";
  ASSERT_GT(QueryDouble(db, "SELECT count(*)" + gpu0), 2);
  // Every reading of GPU 0 has the planted link and XID count (the rules hold from the
  // scenario's start, the agent's first nvmlInit, to its end).
  EXPECT_EQ(QueryDouble(db, "SELECT count(*)" + gpu0 +
                                " AND NOT (pcie_gen=3 AND pcie_gen_max=5 AND pcie_width=8 AND "
                                "pcie_width_max=16 AND xid_errors=2)"),
            0);
  EXPECT_EQ(QueryDouble(db, "SELECT max(xid_errors)" + gpu0), 2);
  EXPECT_EQ(QueryDouble(db, "SELECT min(pcie_gen)" + gpu0), 3);
  EXPECT_EQ(QueryDouble(db, "SELECT max(pcie_gen_max)" + gpu0), 5);
  // GPU 1: the fake's healthy defaults (gen 4 x16 at its maximum, no XID, ECC counts 0).
  ASSERT_GT(QueryDouble(db, "SELECT count(*)" + gpu1), 2);
  EXPECT_EQ(QueryDouble(db, "SELECT count(*)" + gpu1 +
                                " AND NOT (pcie_gen=4 AND pcie_gen_max=4 AND pcie_width=16 AND "
                                "xid_errors=0 AND ecc_uncorrected=0 AND power_limit_w=400)"),
            0);
}

}  // namespace
}  // namespace bench::testing
