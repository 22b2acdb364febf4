// Every finished job carries its diagnosis, end to end (issue 26 items 2, 3, 5): real
// benchd, bench-agents with CPU slots and benchctl, the ranks run by the simulated trainer
// bench-sim-train (worker/sim/) whose step model is deterministic, so the figures hold on
// a loaded machine. A 32-rank job over 4 agents × 8 slots with rank 13 planted 8 % slower
// in iterations 200-300: the stored diagnosis names rank 13 and its node, places the
// phase within ±5 iterations and its lost time within 2 points of the plant. A clean
// 8-rank job: no straggler, no blame, every check passes. `benchctl diagnose` gives the
// stored diagnosis again.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "benchfleet/v1/types.pb.h"
#include "tests/e2e/cluster.h"

namespace bench::testing {
namespace {

namespace v1 = benchfleet::v1;

constexpr double kStepS = 0.01;  // --sim-step-s: the nominal forward+backward time
// The simulator's fixed shares of a step (worker/sim/sim_model.h).
constexpr double kDataS = 0.0002;
constexpr double kCommFraction = 0.04;
constexpr double kOptimizerFraction = 0.02;
constexpr int kWarmup = 10;
constexpr int kMeasured = 500;

class DiagnosisEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(cluster_.StartBenchd().ok()) << cluster_.Log("benchd.log"); }
  // A wrapper the agents run as their trainer: bench-sim-train with a short step, its 1 %
  // noise and, when given, the scenario.
  std::string Trainer(const std::string& scenario) {
    std::string path = absl::StrCat(cluster_.dir(), "/sim-trainer.sh");
    std::ofstream out(path);
    out << "#!/bin/sh\nexec " << BENCH_SIM_TRAIN_PATH << " --sim-step-s " << kStepS
        << " --sim-noise 1%";
    if (!scenario.empty()) out << " --fault-scenario " << scenario;
    out << " \"$@\"\n";
    out.close();
    chmod(path.c_str(), 0755);
    return path;
  }
  void StartAgents(int agents, int slots, const std::string& trainer) {
    for (int a = 0; a < agents; ++a) {
      ASSERT_TRUE(
          cluster_.StartAgent(absl::StrCat("node-", a), slots, {"--bench-train", trainer}).ok());
    }
    ASSERT_TRUE(cluster_.WaitForAgents(agents).ok()) << cluster_.Log("benchd.log");
  }
  std::string SubmitAndWait(int ranks) {
    CommandResult submit = cluster_.Benchctl({"submit", "--gpus", absl::StrCat(ranks), "--bs", "2",
                                              "--iters", absl::StrCat(kWarmup + kMeasured),
                                              "--warmup", absl::StrCat(kWarmup), "--wait"});
    EXPECT_EQ(submit.exit_code, 0) << submit.output << "\n" << cluster_.Log("benchd.log");
    return std::string(absl::StripAsciiWhitespace(
        std::vector<std::string>(absl::StrSplit(submit.stdout_text, '\n')).front()));
  }
  // The job as benchctl status --format json gives it, once benchd has diagnosed it.
  v1::JobStatus DiagnosedJob(const std::string& job_id) {
    v1::JobStatus job;
    for (int i = 0; i < 600; ++i) {  // up to a minute
      CommandResult status = cluster_.Benchctl({"status", job_id, "--format", "json"});
      job.Clear();
      EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(status.stdout_text, &job).ok())
          << status.output;
      if (job.has_diagnosis()) break;
      usleep(100'000);
    }
    return job;
  }
  v1::JobDiagnosis Rediagnosed(const std::string& job_id) {
    CommandResult diagnose = cluster_.Benchctl({"diagnose", job_id, "--format", "json"});
    EXPECT_EQ(diagnose.exit_code, 0) << diagnose.output;
    v1::JobDiagnosis d;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(diagnose.stdout_text, &d).ok())
        << diagnose.output;
    return d;
  }

  LoopbackCluster cluster_;
};

TEST_F(DiagnosisEndToEndTest, APlantedStragglerIsNamedPlacedAndItsLostTimeMeasured) {
  const std::string scenario = absl::StrCat(cluster_.dir(), "/straggler.scenario");
  std::ofstream(scenario) << "benchfleet-scenario 1\nseed 7\n"
                          << "rank rank=13 iterations=200-300 extra_compute=8%\n";
  StartAgents(4, 8, Trainer(scenario));
  const std::string job_id = SubmitAndWait(32);
  ASSERT_THAT(job_id, ::testing::StartsWith("job-"));
  v1::JobStatus job = DiagnosedJob(job_id);
  ASSERT_TRUE(job.has_diagnosis()) << "no diagnosis\n" << cluster_.Log("benchd.log");
  const v1::JobDiagnosis& d = job.diagnosis();
  ASSERT_TRUE(d.available()) << d.note();
  std::string node;
  for (const v1::RankDevice& device : job.rank_devices()) {
    if (device.rank() == 13) node = device.agent();
  }
  ASSERT_FALSE(node.empty());

  ASSERT_EQ(d.stragglers().stragglers_size(), 1) << d.DebugString();
  const v1::Straggler& s = d.stragglers().stragglers(0);
  EXPECT_EQ(s.rank(), 13);
  EXPECT_EQ(s.node(), node);
  ASSERT_EQ(s.phases_size(), 1) << s.DebugString();
  EXPECT_NEAR(s.phases(0).first_iteration(), 200, 5);
  EXPECT_NEAR(s.phases(0).last_iteration(), 300, 5);
  // The plant, from the simulator's model: rank 13 computes 8 % more of kStepS in 101
  // iterations; every step is data + the slowest forward+backward + comm + optimizer.
  const double lost = 101 * 0.08 * kStepS;
  const double step = kDataS + kStepS * (1 + kCommFraction + kOptimizerFraction);
  const double planted = lost / (kMeasured * step + lost);
  EXPECT_NEAR(d.stragglers().lost_fraction(), planted, 0.02) << "planted " << planted << "\n"
                                                             << d.DebugString();
  // Its excess is blamed on rank 13, which made the others wait (a CPU slot: no GPU cause).
  bool blamed = false;
  for (const v1::RankCauseTime& c : d.excess().by_rank()) {
    blamed |= c.rank() == 13 && c.cause() == "waiting_for_rank";
  }
  EXPECT_TRUE(blamed) << d.excess().DebugString();

  // benchctl diagnose computes the same from the stored data, every time.
  v1::JobDiagnosis again = Rediagnosed(job_id);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(again, d));
  EXPECT_EQ(cluster_.Benchctl({"diagnose", job_id}).stdout_text,
            cluster_.Benchctl({"diagnose", job_id}).stdout_text);
}

TEST_F(DiagnosisEndToEndTest, ACleanJobHasNoStragglerNoBlameAndPassesEveryCheck) {
  StartAgents(2, 4, Trainer(""));
  const std::string job_id = SubmitAndWait(8);
  ASSERT_THAT(job_id, ::testing::StartsWith("job-"));
  v1::JobStatus job = DiagnosedJob(job_id);
  ASSERT_TRUE(job.has_diagnosis()) << "no diagnosis\n" << cluster_.Log("benchd.log");
  const v1::JobDiagnosis& d = job.diagnosis();
  ASSERT_TRUE(d.available()) << d.note();
  EXPECT_TRUE(d.stragglers().applicable());
  EXPECT_EQ(d.stragglers().stragglers_size(), 0) << d.stragglers().DebugString();
  for (const v1::CauseTime& c : d.excess().by_cause()) {  // no GPU is blamed: CPU slots
    EXPECT_THAT(c.cause(), ::testing::AnyOf("data_wait", "waiting_for_rank", "unexplained"))
        << d.excess().DebugString();
  }
  EXPECT_EQ(d.failing_checks(), 0);
  for (const v1::DiagnosisCheck& c : d.checks()) {
    EXPECT_NE(c.outcome(), "fail") << c.DebugString();
  }
  CommandResult status = cluster_.Benchctl({"status", job_id});
  EXPECT_THAT(status.stdout_text, ::testing::HasSubstr("diagnosis:\n  stragglers: none (8 ranks"));
  EXPECT_THAT(status.stdout_text, ::testing::HasSubstr(" 0 fail, "));
}

}  // namespace
}  // namespace bench::testing
