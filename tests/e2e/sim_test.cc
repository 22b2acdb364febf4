// The simulated trainer through the whole fleet (issue 26 items 6 and 7): real benchd,
// two bench-agents running bench-sim-train (--bench-train) with a fault scenario
// (--fault-scenario), and benchctl. The job's ranks agree on every step, the planted slow
// rank shows in every rank's step, and the job is marked simulated everywhere: the store,
// `benchctl status`, `benchctl results` (only with --simulated), the web API and /metrics.
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/e2e/cluster.h"
#include "tests/e2e/http_get.h"

namespace bench::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

double QueryDouble(const std::string& db, const std::string& sql) {
  // QueryInt reads integers; step times are compared in microseconds.
  return static_cast<double>(QueryInt(db, "SELECT CAST(1e6 * (" + sql + ") AS INTEGER)")) / 1e6;
}

TEST(SimulatedFleetTest, ASimulatedJobRunsThroughTheFleetMarkedSimulatedEverywhere) {
  LoopbackCluster cluster;
  const std::string scenario = cluster.dir() + "/scenario.txt";
  std::ofstream(scenario) << "benchfleet-scenario 1\nseed 5\n"
                             "rank rank=1 iterations=4-5 extra_compute=60%\n";
  ASSERT_TRUE(cluster.StartBenchd().ok());
  for (const char* name : {"sim-a", "sim-b"}) {
    ASSERT_TRUE(cluster.StartAgent(name, 2, {"--fault-scenario", scenario}).ok());
  }
  ASSERT_TRUE(cluster.WaitForAgents(2).ok());

  CommandResult submit = cluster.Benchctl({"submit", "--gpus", "4", "--bs", "2", "--iters",
                                           "8", "--warmup", "2", "--image-size", "64", "--wait"});
  ASSERT_EQ(submit.exit_code, 0) << submit.output << "\nbenchd:\n"
                                 << cluster.Log("benchd.log") << "\nsim-a:\n"
                                 << cluster.Log("agent-sim-a.log");
  const std::string job_id = std::string(absl::StripAsciiWhitespace(
      std::vector<std::string>(absl::StrSplit(submit.stdout_text, '\n')).front()));
  ASSERT_THAT(job_id, ::testing::StartsWith("job-"));

  const std::string& db = cluster.db_path();
  const std::string where = " WHERE job_id='" + job_id + "'";
  EXPECT_EQ(QueryInt(db, "SELECT simulated FROM jobs WHERE id='" + job_id + "'"), 1);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM samples" + where), 4 * 8);
  EXPECT_EQ(QueryInt(db, "SELECT count(DISTINCT agent) FROM job_ranks" + where), 2);
  // One step time per iteration across the four ranks on two agents: they agree.
  EXPECT_EQ(QueryInt(db, "SELECT max(n) FROM (SELECT count(DISTINCT step_time_s) AS n FROM "
                         "samples" + where + " GROUP BY iteration)"),
            1);
  // Rank 1's planted 60 % in iterations 4-5 slows every rank's step then.
  const double slow = QueryDouble(db, "SELECT step_time_s FROM samples" + where +
                                          " AND iteration=4 AND rank=0");
  const double normal = QueryDouble(db, "SELECT step_time_s FROM samples" + where +
                                            " AND iteration=7 AND rank=0");
  EXPECT_GT(slow, normal * 1.4) << slow << " vs " << normal;

  CommandResult status = cluster.Benchctl({"status", job_id});
  ASSERT_EQ(status.exit_code, 0) << status.output;
  EXPECT_THAT(status.stdout_text, HasSubstr("simulated:  yes"));
  EXPECT_THAT(status.stdout_text, HasSubstr("images/s (simulated): "));

  CommandResult real = cluster.Benchctl({"results"});
  ASSERT_EQ(real.exit_code, 0) << real.output;
  EXPECT_THAT(real.stdout_text, Not(HasSubstr("resnet50")));
  CommandResult simulated = cluster.Benchctl({"results", "--simulated"});
  ASSERT_EQ(simulated.exit_code, 0) << simulated.output;
  EXPECT_THAT(simulated.stdout_text, HasSubstr("resnet50 64px (cpu, simulated): median images/s"));

  absl::StatusOr<std::string> job = HttpGet(cluster.http_port(), "/api/v1/jobs/" + job_id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_THAT(*job, HasSubstr("\"simulated\":true"));
  absl::StatusOr<std::string> metrics = HttpGet(cluster.http_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(*metrics, HasSubstr(absl::StrCat("bench_job_measured_images_per_second{bench_job=\"",
                                               job_id, "\"")));
  EXPECT_THAT(*metrics, HasSubstr("simulated=\"true\""));
}

}  // namespace
}  // namespace bench::testing
