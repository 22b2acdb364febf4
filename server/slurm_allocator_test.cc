// The Slurm adapter's pure parts: the shape and time asked for, the batch script (run
// through /bin/sh with a stand-in srun that prints the agent's argv), and scontrol's
// output. tests/slurm/ runs the whole adapter against a real Slurm.
#include "server/slurm_allocator.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/run_command.h"

namespace bench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

JobSpec Spec(int devices, int nodes = 0, int per_node = 0) {
  JobSpec spec;
  spec.devices = devices;
  spec.nodes = nodes;
  spec.devices_per_node = per_node;
  return spec;
}

TEST(SlurmShapeTest, NodesAndDevicesPerNodeComeFromTheSpecElseOneNode) {
  SlurmShape shape = SlurmShapeOf(Spec(4, 2, 2));
  EXPECT_EQ(shape.nodes, 2);
  EXPECT_EQ(shape.devices_per_node, 2);
  shape = SlurmShapeOf(Spec(16, 2));
  EXPECT_EQ(shape.devices_per_node, 8);
  shape = SlurmShapeOf(Spec(8));
  EXPECT_EQ(shape.nodes, 1);
  EXPECT_EQ(shape.devices_per_node, 8);
  shape = SlurmShapeOf(Spec(32, 0, 8));
  EXPECT_EQ(shape.nodes, 4);
}

TEST(SlurmTimeLimitTest, WholeMinutesRoundedUpAndAtLeastOne) {
  EXPECT_EQ(SlurmTimeLimit(absl::Seconds(1)), "1");
  EXPECT_EQ(SlurmTimeLimit(absl::Seconds(60)), "1");
  EXPECT_EQ(SlurmTimeLimit(absl::Seconds(61)), "2");
  EXPECT_EQ(SlurmTimeLimit(absl::Hours(24) + absl::Minutes(5)), "1445");
}

class SlurmBatchScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_slurm_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    // srun's stand-in: runs the step's command once, as a node's task would.
    std::ofstream(dir_ + "/srun") << "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\n"
                                     "exec \"$@\"\n";
    // The agent's stand-in prints its argv, one word a line.
    std::ofstream(dir_ + "/agent") << "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\n";
    chmod((dir_ + "/srun").c_str(), 0755);
    chmod((dir_ + "/agent").c_str(), 0755);
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  SlurmOptions Options() const {
    SlurmOptions options;
    options.partition = "gpu";
    options.agent_command = {dir_ + "/agent", "--tls-ca", "/etc/bench/ca it's.pem"};
    options.controller = "ctl.example:7600";
    options.script_dir = dir_;
    options.time_margin = absl::Minutes(5);
    return options;
  }
  // Runs `script` as Slurm's batch step would on node `node` of Slurm job 4711.
  std::string RunOnNode(const std::string& script, const std::string& node) {
    std::ofstream(dir_ + "/job.sbatch") << script;
    absl::StatusOr<CommandOutput> out = RunCommand(
        {"/usr/bin/env", "PATH=" + dir_ + ":/usr/bin:/bin", "SLURMD_NODENAME=" + node,
         "SLURM_JOB_ID=4711", "/bin/sh", dir_ + "/job.sbatch"},
        absl::Seconds(10));
    EXPECT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->exit_code, 0) << out->stderr_text;
    return out->stdout_text;
  }

  std::string dir_;
};

TEST_F(SlurmBatchScriptTest, AsksForTheShapeAndTimeAndStartsOneLabelledAgentPerNode) {
  AllocationRequest request{"job-000042", "benchfleet-abcd-job-000042", Spec(16, 2, 8),
                            absl::Hours(1)};
  std::string script = SlurmBatchScript(Options(), request);
  for (const char* line :
       {"#SBATCH --job-name=benchfleet-abcd-job-000042\n", "#SBATCH --partition=gpu\n",
        "#SBATCH --nodes=2\n", "#SBATCH --ntasks-per-node=1\n", "#SBATCH --gpus-per-node=8\n",
        "#SBATCH --exclusive\n", "#SBATCH --time=65\n"}) {
    EXPECT_THAT(script, HasSubstr(line));
  }
  EXPECT_THAT(script, Not(HasSubstr("--cpus-per-task")));
  EXPECT_EQ(RunOnNode(script, "dgx-07"),
            "--tls-ca\n/etc/bench/ca it's.pem\n--controller\nctl.example:7600\n"
            "--label=bench_job=job-000042\n--name\ndgx-07\n--label\n"
            "slurm_job=4711\n");
}

TEST_F(SlurmBatchScriptTest, WithACertDirEachNodesAgentPresentsItsOwnCertificate) {
  SlurmOptions options = Options();
  options.agent_cert_dir = "/etc/bench/nodes dir";
  AllocationRequest request{"job-7", "n", Spec(8), absl::Hours(1)};
  EXPECT_THAT(RunOnNode(SlurmBatchScript(options, request), "dgx-03"),
              HasSubstr("--name\ndgx-03\n--label\nslurm_job=4711\n--tls-cert\n"
                        "/etc/bench/nodes dir/dgx-03.pem\n--tls-key\n"
                        "/etc/bench/nodes dir/dgx-03.key\n"));
}

TEST_F(SlurmBatchScriptTest, OnCpuNodesItAsksForCpusAndTheAgentsOfferThemAsSlots) {
  SlurmOptions options = Options();
  options.cpu_nodes = true;
  AllocationRequest request{"job-7", "n", Spec(4, 2, 2), absl::Seconds(30)};
  std::string script = SlurmBatchScript(options, request);
  EXPECT_THAT(script, HasSubstr("#SBATCH --cpus-per-task=2\n"));
  EXPECT_THAT(script, Not(HasSubstr("--gpus-per-node")));
  EXPECT_THAT(RunOnNode(script, "nodeB"), HasSubstr("--cpu-slots\n2\n--name\nnodeB\n"));
}

TEST(ParseScontrolJobsTest, ReadsStateReasonNodesAndNameOfEveryJob) {
  const char* text =
      "JobId=12 JobName=benchfleet-abcd-job-000001 UserId=root(0) GroupId=root(0) "
      "MCS_label=N/A Priority=1 Nice=0 Account=(null) QOS=(null) JobState=PENDING "
      "Reason=Resources Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 "
      "ExitCode=0:0 RunTime=00:00:00 TimeLimit=00:06:00 NodeList=(null) "
      "BatchHost=(null) ReqNodeList=(null) ExcNodeList=(null) NumNodes=2\n"
      "JobId=13 JobName=other JobState=TIMEOUT Reason=TimeLimit NodeList=node[A-B] "
      "ReqNodeList=nodeC\n"
      "JobId=14 JobName=x JobState=COMPLETED Reason=None NodeList=nodeA\n"
      "\n";
  std::map<std::string, SlurmJob> jobs = ParseScontrolJobs(text);
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs["12"].name, "benchfleet-abcd-job-000001");
  EXPECT_EQ(jobs["12"].state, "PENDING");
  EXPECT_EQ(jobs["12"].reason, "Resources");
  EXPECT_EQ(jobs["12"].nodes, "");
  EXPECT_EQ(jobs["13"].state, "TIMEOUT");
  EXPECT_EQ(jobs["13"].reason, "TimeLimit");
  EXPECT_EQ(jobs["13"].nodes, "node[A-B]");
  EXPECT_EQ(jobs["14"].reason, "");
  EXPECT_TRUE(ParseScontrolJobs("No jobs in the system\n").empty());
}

TEST(SlurmStateEndedTest, OnlyStatesThatHoldNoNodes) {
  for (const char* ended : {"COMPLETED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "FAILED",
                            "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"}) {
    EXPECT_TRUE(SlurmStateEnded(ended)) << ended;
  }
  for (const char* live : {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"}) {
    EXPECT_FALSE(SlurmStateEnded(live)) << live;
  }
}

}  // namespace
}  // namespace bench
