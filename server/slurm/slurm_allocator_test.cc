// The Slurm adapter's pure parts: the shape and time asked for, the batch script (run
// through /bin/sh with a stand-in srun that prints the agent's argv), and scontrol's
// output; and its join tokens, with stand-ins for sbatch, scontrol and scancel.
// tests/slurm/ runs the whole adapter against a real Slurm.
#include "server/slurm/slurm_allocator.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <future>
#include <sstream>

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

// Issue 24: with a join token each node's agent gets it in a 0600 file of its own, never
// on a command line nor left in its environment, and no certificate of another node.
TEST_F(SlurmBatchScriptTest, WithAJoinTokenEachNodesAgentEnrolsFromAFileOfItsOwn) {
  // This stand-in agent prints its argv, then the token file's mode and text and whether
  // the token is still in its environment.
  std::ofstream(dir_ + "/agent")
      << "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; last=$a; done\n"
         "echo \"mode $(stat -c %a \"$last\")\"\necho \"text $(cat \"$last\")\"\n"
         "echo \"env ${BENCH_JOIN_TOKEN:-unset}\"\nrm -f \"$last\"\n";
  const std::string token = "bj1.0123456789abcdef." + std::string(64, 'c');
  AllocationRequest request{"job-9", "benchfleet-abcd-job-9", Spec(8, 2, 4), absl::Hours(1)};
  const std::string script = SlurmBatchScript(Options(), request, token);
  // In the script's environment only: not on the step's or the agent's command line.
  EXPECT_THAT(script, HasSubstr("BENCH_JOIN_TOKEN='" + token + "'\nexport BENCH_JOIN_TOKEN\n"));
  const std::string srun = script.substr(script.find("exec srun"));
  EXPECT_THAT(srun, Not(HasSubstr(token)));
  const std::string out = RunOnNode(script, "dgx-05");
  EXPECT_THAT(out, HasSubstr("--name\ndgx-05\n--label\nslurm_job=4711\n--join-token-file\n"));
  EXPECT_THAT(out, HasSubstr("\nmode 600\ntext " + token + "\nenv unset\n"));
  EXPECT_THAT(out, Not(HasSubstr("--tls-cert")));
  // A cert dir wins: the token is not used.
  SlurmOptions with_dir = Options();
  with_dir.agent_cert_dir = "/etc/bench/nodes";
  EXPECT_THAT(SlurmBatchScript(with_dir, request, token), Not(HasSubstr(token)));
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

// The allocator with join tokens, against stand-ins for sbatch, scontrol and scancel on
// PATH: an allocation gets a token with one use per node in a 0600 batch script, and the
// token is revoked once Slurm says the allocation ended.
class SlurmJoinTokenTest : public SlurmBatchScriptTest {
 protected:
  void SetUp() override {
    SlurmBatchScriptTest::SetUp();
    // sbatch keeps the script it was given and answers job 4711; scontrol lists it once
    // submitted, in the state `state` holds (PENDING until the test changes it); scancel
    // records its argument.
    Write("sbatch", "#!/bin/sh\ncp \"$2\" " + dir_ + "/submitted\necho 4711\n");
    Write("scontrol", "#!/bin/sh\n[ -e " + dir_ +
                          "/submitted ] || exit 0\necho \"JobId=4711 JobName=$(cat " + dir_ +
                          "/name) JobState=$(cat " + dir_ +
                          "/state) Reason=None "
                          "NodeList=n[1-2]\"\n");
    Write("scancel", "#!/bin/sh\necho \"$1\" >> " + dir_ + "/scancelled\n");
    std::ofstream(dir_ + "/state") << "PENDING\n";
    old_path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
    setenv("PATH", (dir_ + ":" + old_path_).c_str(), 1);
    store_ = std::move(Store::Open(dir_ + "/bench.db")).value();
    JobManagerOptions options;
    options.external_allocation = true;
    manager_ = std::make_unique<JobManager>(store_.get(), options);
    ASSERT_TRUE(manager_->Recover().ok());
    tokens_ = std::make_unique<JoinTokens>(store_.get());
  }
  void TearDown() override {
    setenv("PATH", old_path_.c_str(), 1);
    manager_.reset();
    tokens_.reset();
    store_.reset();
    SlurmBatchScriptTest::TearDown();
  }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
    chmod((dir_ + "/" + name).c_str(), 0755);
  }
  std::string SubmitJob(JobSpec spec) {
    spec.model = "resnet50";
    spec.precision = Precision::kFp32;
    spec.batch_size = 8;
    spec.iterations = 5;
    spec.warmup_iterations = 1;
    spec.image_size = 64;
    std::promise<absl::StatusOr<SubmitResult>> done;
    manager_->Submit(spec, [&done](absl::StatusOr<SubmitResult> r) { done.set_value(r); });
    absl::StatusOr<SubmitResult> result = done.get_future().get();
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? result->job_id : "";
  }

  std::string old_path_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
  std::unique_ptr<JoinTokens> tokens_;
};

TEST_F(SlurmJoinTokenTest, AnAllocationGetsATokenPerNodeRevokedWhenItEnds) {
  SlurmOptions options = Options();
  options.cpu_nodes = true;
  SlurmAllocator allocator(manager_.get(), options, tokens_.get());
  const std::string job_id = SubmitJob(Spec(4, 2, 2));
  const std::string name = "benchfleet-" + manager_->controller_id().substr(0, 8) + "-" + job_id;
  std::ofstream(dir_ + "/name") << name << "\n";
  allocator.PollOnce();

  absl::StatusOr<std::vector<JoinTokenRecord>> tokens = tokens_->List();
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 1u);
  const JoinTokenRecord token = (*tokens)[0];
  EXPECT_EQ(token.uses, 2);  // one per node
  EXPECT_EQ(token.description, SlurmJoinTokenDescription(name));
  EXPECT_FALSE(token.revoked);
  EXPECT_GE(token.expires - token.created, absl::Hours(24));
  // The batch script holds the token (its hash is the stored one) and is 0600.
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/" + job_id + ".sbatch").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::stringstream submitted;
  submitted << std::ifstream(dir_ + "/submitted").rdbuf();
  const std::string script = submitted.str();
  const size_t at = script.find("BENCH_JOIN_TOKEN='bj1.");
  ASSERT_NE(at, std::string::npos) << script;
  const std::string text = script.substr(at + 18, script.find('\'', at + 18) - at - 18);
  absl::StatusOr<JoinTokenRecord> checked = tokens_->Check(text, absl::Now());
  ASSERT_TRUE(checked.ok()) << checked.status() << " for " << text;
  EXPECT_EQ(checked->id, token.id);

  // Still pending, then running: the token stays.
  allocator.PollOnce();
  std::ofstream(dir_ + "/state") << "RUNNING\n";
  allocator.PollOnce();
  EXPECT_FALSE((*tokens_->List())[0].revoked);
  // Slurm ended it: the token is revoked, and no second token was made.
  std::ofstream(dir_ + "/state") << "TIMEOUT\n";
  allocator.PollOnce();
  tokens = tokens_->List();
  ASSERT_EQ(tokens->size(), 1u);
  EXPECT_TRUE((*tokens)[0].revoked);
  EXPECT_EQ(tokens_->Check(text, absl::Now()).status().code(), absl::StatusCode::kUnauthenticated);
}

TEST_F(SlurmJoinTokenTest, WithACertDirNoTokenIsMade) {
  SlurmOptions options = Options();
  options.cpu_nodes = true;
  options.agent_cert_dir = dir_;
  SlurmAllocator allocator(manager_.get(), options, tokens_.get());
  SubmitJob(Spec(1));
  std::ofstream(dir_ + "/name") << "x\n";
  allocator.PollOnce();
  EXPECT_TRUE(tokens_->List()->empty());
  std::stringstream submitted;
  submitted << std::ifstream(dir_ + "/submitted").rdbuf();
  EXPECT_THAT(submitted.str(), HasSubstr("BENCH_AGENT_CERT_DIR"));
}

}  // namespace
}  // namespace bench
