// End to end with real processes on loopback: benchd, two agents of 2 CPU slots each,
// bench-train ranks, benchctl. Asserts on what a user sees and on the SQLite file.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "tests/e2e/cluster.h"

namespace bench::testing {
namespace {

using ::testing::HasSubstr;

class EndToEndTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new LoopbackCluster();
    absl::Status status = cluster_->StartBenchd();
    if (status.ok()) status = cluster_->StartAgent("agent-a", 2);
    if (status.ok()) status = cluster_->StartAgent("agent-b", 2);
    if (status.ok()) status = cluster_->WaitForAgents(2);
    setup_status_ = new absl::Status(status);
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete setup_status_;
  }
  void SetUp() override { ASSERT_TRUE(setup_status_->ok()) << *setup_status_; }

  static int64_t JobCount() { return QueryInt(cluster_->db_path(), "SELECT count(*) FROM jobs"); }

  static LoopbackCluster* cluster_;
  static absl::Status* setup_status_;
};

LoopbackCluster* EndToEndTest::cluster_ = nullptr;
absl::Status* EndToEndTest::setup_status_ = nullptr;

TEST_F(EndToEndTest, FourRankJobSpansBothAgentsAndStoresEveryIteration) {
  CommandResult submit = cluster_->Benchctl({"submit", "--gpus", "4", "--bs", "2", "--iters",
                                             "5", "--warmup", "1", "--image-size", "64",
                                             "--wait"});
  ASSERT_EQ(submit.exit_code, 0) << submit.output << "\nbenchd:\n"
                                 << cluster_->Log("benchd.log") << "\nagent-a:\n"
                                 << cluster_->Log("agent-agent-a.log");
  std::string job_id = std::string(absl::StripAsciiWhitespace(
      std::vector<std::string>(absl::StrSplit(submit.stdout_text, '\n')).front()));
  ASSERT_THAT(job_id, ::testing::StartsWith("job-"));

  const std::string& db = cluster_->db_path();
  std::string where = " WHERE job_id='" + job_id + "'";
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM samples" + where), 4 * 5);
  EXPECT_EQ(QueryInt(db, "SELECT count(DISTINCT rank) FROM samples" + where), 4);
  EXPECT_EQ(QueryInt(db, "SELECT count(DISTINCT agent) FROM job_ranks" + where), 2);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM job_ranks" + where + " AND agent='agent-a'"), 2);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM rank_summaries" + where), 4);
  EXPECT_EQ(QueryInt(db, "SELECT parameters FROM jobs WHERE id='" + job_id + "'"), 25557032);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM jobs WHERE id='" + job_id +
                             "' AND state='SUCCEEDED'"),
            1);

  CommandResult status = cluster_->Benchctl({"status", job_id, "--format", "json"});
  ASSERT_EQ(status.exit_code, 0) << status.output;
  EXPECT_THAT(status.stdout_text, HasSubstr("\"has_throughput\":true"));

  CommandResult results = cluster_->Benchctl({"results", "--format", "csv"});
  ASSERT_EQ(results.exit_code, 0) << results.output;
  EXPECT_THAT(results.stdout_text, HasSubstr("resnet50,cpu,4,fp32,2,"));
}

TEST_F(EndToEndTest, BadInputIsRefusedWithTheFieldNamedAndNothingStored) {
  int64_t before = JobCount();
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"--gpus", "1", "--bs", "0"}, "batch_size"},
      {{"--gpus", "0", "--bs", "2"}, "devices"},
      {{"--gpus", "64", "--bs", "2"}, "devices"},
      {{"--gpus", "1", "--bs", "2", "--model", "vgg19"}, "model"},
      {{"--gpus", "1", "--bs", "2", "--precision", "fp8"}, "precision"},
      {{"--gpus", "1", "--bs", "2", "--iters", "-5"}, "iterations"},
      {{"--gpus", "1", "--bs", "2", "--iters", "5", "--warmup", "5"}, "warmup"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"submit", "--image-size", "64"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CommandResult result = cluster_->Benchctl(args);
    EXPECT_NE(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr(c.expected)) << c.expected;
  }
  EXPECT_EQ(JobCount(), before);
}

TEST_F(EndToEndTest, CancelStopsTheRanksAndFreesTheirDevices) {
  CommandResult submit = cluster_->Benchctl({"submit", "--gpus", "2", "--bs", "2", "--iters",
                                             "100000", "--warmup", "1", "--image-size", "32"});
  ASSERT_EQ(submit.exit_code, 0) << submit.output;
  std::string job_id(absl::StripAsciiWhitespace(submit.stdout_text));

  // Wait until the ranks are really training.
  bool training = false;
  for (int i = 0; i < 600 && !training; ++i) {
    CommandResult status = cluster_->Benchctl({"status", job_id, "--format", "json"});
    training = status.stdout_text.find("\"iterations_done\":0,") == std::string::npos &&
               status.stdout_text.find("\"iterations_done\":") != std::string::npos;
    if (!training) usleep(100 * 1000);
  }
  ASSERT_TRUE(training) << cluster_->Log("benchd.log");

  CommandResult cancel = cluster_->Benchctl({"cancel", job_id});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.output;
  EXPECT_THAT(cancel.output, HasSubstr("CANCELLED"));

  // The controller frees a device only when the agent reports its rank gone.
  bool freed = false;
  std::string agents;
  for (int i = 0; i < 300 && !freed; ++i) {
    agents = cluster_->Benchctl({"agents", "--format", "json"}).stdout_text;
    freed = CountOccurrences(agents, "\"devices_busy\":0") == 2;
    if (!freed) usleep(100 * 1000);
  }
  EXPECT_TRUE(freed) << agents;
  EXPECT_EQ(QueryInt(cluster_->db_path(),
                     "SELECT count(*) FROM jobs WHERE id='" + job_id + "' AND state='CANCELLED'"),
            1);
}

TEST_F(EndToEndTest, BenchdStopsGracefullyOnSigtermAndKeepsEverythingAcrossARestart) {
  CommandResult done = cluster_->Benchctl({"submit", "--gpus", "1", "--bs", "2", "--iters", "3",
                                           "--warmup", "1", "--image-size", "32", "--wait"});
  ASSERT_EQ(done.exit_code, 0) << done.output;
  std::string job_id = std::string(absl::StripAsciiWhitespace(
      std::vector<std::string>(absl::StrSplit(done.stdout_text, '\n')).front()));
  CommandResult before = cluster_->Benchctl({"results", "--format", "csv"});
  ASSERT_EQ(before.exit_code, 0);

  EXPECT_EQ(cluster_->StopBenchd(), 0) << cluster_->Log("benchd.log");
  EXPECT_THAT(cluster_->Log("benchd.log"), HasSubstr("shutting down"));
  EXPECT_NE(cluster_->Benchctl({"list"}).exit_code, 0);

  ASSERT_TRUE(cluster_->StartBenchd().ok());
  CommandResult status = cluster_->Benchctl({"status", job_id, "--format", "json"});
  ASSERT_EQ(status.exit_code, 0) << status.output;
  EXPECT_THAT(status.stdout_text, HasSubstr("\"state\":\"JOB_STATE_SUCCEEDED\""));
  EXPECT_THAT(status.stdout_text, HasSubstr("\"samples_stored\":\"3\""));
  CommandResult after = cluster_->Benchctl({"results", "--format", "csv"});
  EXPECT_EQ(after.stdout_text, before.stdout_text);
  // The agents find the new benchd by themselves and the fleet works again.
  ASSERT_TRUE(cluster_->WaitForAgents(2).ok());
  CommandResult again = cluster_->Benchctl({"submit", "--gpus", "4", "--bs", "2", "--iters", "2",
                                            "--warmup", "1", "--image-size", "32", "--wait"});
  EXPECT_EQ(again.exit_code, 0) << again.output;
}

TEST_F(EndToEndTest, UnreachableBenchdIsSaidPlainly) {
  CommandResult result = cluster_->Benchctl({"--server", "127.0.0.1:1", "list"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("cannot reach benchd"));
}

// Issue 13: a real diverging run (bench-train with a learning rate of 1e6) through the
// whole fleet. Every iteration is stored with its non-finite loss, counted, and shown by
// `benchctl status`, `status --format json` and `logs --format jsonl`. With bench-train's
// --max-nonfinite-iters (default 20) the job fails as "loss diverged: ..."; a trainer
// without that flag runs to the end and the job succeeds with its count.
TEST(DivergingRunTest, EveryIterationIsStoredCountedAndShown) {
  LoopbackCluster cluster;
  const std::string wrapper = cluster.dir() + "/bench-train-lr1e6";
  {
    FILE* out = fopen(wrapper.c_str(), "w");
    ASSERT_NE(out, nullptr);
    fprintf(out, "#!/bin/sh\nexec '%s' \"$@\" --lr 1e6\n", BENCH_TRAIN_PATH);
    fclose(out);
    ASSERT_EQ(chmod(wrapper.c_str(), 0755), 0);
  }
  ASSERT_TRUE(cluster.StartBenchd().ok());
  ASSERT_TRUE(cluster.StartAgent("agent-d", 1, {"--bench-train", wrapper}).ok());
  ASSERT_TRUE(cluster.WaitForAgents(1).ok()) << cluster.Log("agent-agent-d.log");
  const int kIterations = 60;
  CommandResult submit = cluster.Benchctl(
      {"submit", "--gpus", "1", "--bs", "2", "--iters", std::to_string(kIterations), "--warmup",
       "1", "--image-size", "32", "--wait"});
  std::string job_id = std::string(absl::StripAsciiWhitespace(
      std::vector<std::string>(absl::StrSplit(submit.stdout_text, '\n')).front()));
  ASSERT_THAT(job_id, ::testing::StartsWith("job-")) << submit.output;

  const std::string& db = cluster.db_path();
  const std::string where = " WHERE job_id='" + job_id + "'";
  const int64_t stored = QueryInt(db, "SELECT count(*) FROM samples" + where);
  const int64_t nonfinite = QueryInt(
      db, "SELECT count(*) FROM samples" + where + " AND (loss IS NULL OR abs(loss) = 9e999)");
  EXPECT_GT(nonfinite, 0) << "the run did not diverge\n" << cluster.Log("agent-agent-d.log");

  const bool trainer_gives_up =
      system((std::string("'") + BENCH_TRAIN_PATH +
              "' --help 2>&1 | grep -q -- --max-nonfinite-iters").c_str()) == 0;
  CommandResult text = cluster.Benchctl({"status", job_id});
  ASSERT_EQ(text.exit_code, 0) << text.output;
  if (trainer_gives_up) {
    // It gave up after 20 non-finite iterations in a row: every iteration it ran is stored.
    EXPECT_EQ(submit.exit_code, 1) << submit.output;
    EXPECT_THAT(text.stdout_text, HasSubstr("state:      FAILED (loss diverged: rank 0 on agent-d: "))
        << text.stdout_text;
    EXPECT_GE(nonfinite, 20);
    EXPECT_LT(stored, kIterations);
  } else {
    EXPECT_EQ(submit.exit_code, 0) << submit.output;
    EXPECT_EQ(stored, kIterations);
  }
  EXPECT_THAT(text.stdout_text,
              HasSubstr("non-finite: " + std::to_string(nonfinite) + " of " +
                        std::to_string(stored) + " stored iterations had a NaN or infinite loss"))
      << text.stdout_text;
  EXPECT_THAT(text.stdout_text, HasSubstr("precision:  fp32 (requested fp32)\n"));
  EXPECT_THAT(text.stdout_text, ::testing::Not(HasSubstr("hung")));

  CommandResult json = cluster.Benchctl({"status", job_id, "--format", "json"});
  EXPECT_THAT(json.stdout_text,
              HasSubstr("\"nonfinite_losses\":\"" + std::to_string(nonfinite) + "\""));
  EXPECT_THAT(json.stdout_text, HasSubstr("\"effective_precision\":\"fp32\""));
  EXPECT_THAT(json.stdout_text, HasSubstr("\"precision_mismatch\":\"\""));

  CommandResult logs = cluster.Benchctl({"logs", job_id, "--format", "jsonl"});
  ASSERT_EQ(logs.exit_code, 0) << logs.output;
  EXPECT_EQ(CountOccurrences(logs.stdout_text, "\"loss\":\"NaN\"") +
                CountOccurrences(logs.stdout_text, "\"loss\":\"Infinity\"") +
                CountOccurrences(logs.stdout_text, "\"loss\":\"-Infinity\""),
            nonfinite);
  EXPECT_THAT(cluster.Log("benchd.log"), HasSubstr("reported a non-finite loss"));
}

}  // namespace
}  // namespace bench::testing
