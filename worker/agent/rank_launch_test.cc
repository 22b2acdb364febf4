// The agent's side of the agent↔trainer contract (common/trainer_contract.h): a launch
// built from a spec with every field the trainer sees set passes only the contract's
// flags, each once, and all of them; its environment is the contract's. --fault-scenario
// (tests and demonstrations only) is passed only when the agent's own is set.
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "common/trainer_contract.h"
#include "worker/agent/rank_supervisor.h"

namespace bench::agent {
namespace {

namespace contract = bench::trainer_contract;
using benchfleet::v1::Assignment;

// Every spec field that reaches bench-train set to a value other than its default.
Assignment EverySpecField(const char* device_kind) {
  Assignment assignment;
  assignment.set_job_id("job-1");
  auto* spec = assignment.mutable_spec();
  spec->set_model("resnet18");
  spec->set_precision(benchfleet::v1::PRECISION_AMP);
  spec->set_batch_size(48);
  spec->set_iterations(30);
  spec->set_warmup_iterations(4);
  spec->set_image_size(96);
  spec->set_data(benchfleet::v1::DATA_SOURCE_IMAGEFOLDER);
  spec->set_data_path("/data/imagenet");
  spec->set_loader_threads(6);
  spec->set_data_vs_compute(true);
  assignment.add_ranks(2);
  assignment.add_device_indices(1);
  assignment.set_device_kind(device_kind);
  assignment.set_world_size(4);
  return assignment;
}

bool IsSwitch(const std::string& flag) {
  for (const char* name : contract::kLaunchSwitches) {
    if (flag == name) return true;
  }
  return false;
}

// The launch's flags and their values (a switch's is ""); fails on a flag outside the
// contract or given twice.
std::map<std::string, std::string> ContractFlags(const RankLaunch& launch) {
  std::set<std::string> known(std::begin(contract::kLaunchFlags), std::end(contract::kLaunchFlags));
  known.insert(contract::kFlagFaultScenario);  // only with the agent's --fault-scenario
  std::map<std::string, std::string> flags;
  for (size_t i = 1; i < launch.argv.size(); ++i) {
    const std::string& flag = launch.argv[i];
    EXPECT_EQ(flag.rfind("--", 0), 0u) << "argument " << i << " '" << flag << "' is no flag";
    EXPECT_EQ(known.count(flag), 1u) << flag << " is not in trainer_contract.h's kLaunchFlags";
    std::string value;
    if (!IsSwitch(flag)) {
      EXPECT_LT(i + 1, launch.argv.size()) << flag << " has no value";
      if (i + 1 < launch.argv.size()) value = launch.argv[++i];
    }
    EXPECT_TRUE(flags.emplace(flag, value).second) << flag << " given twice";
  }
  return flags;
}

// The value of `flag` in `flags`, "(absent)" when it is not there.
std::string ValueOf(const std::map<std::string, std::string>& flags, const char* flag) {
  auto it = flags.find(flag);
  return it == flags.end() ? "(absent)" : it->second;
}

TEST(RankLaunchContractTest, EverySpecFieldBecomesAContractFlag) {
  RankSupervisorOptions options;
  options.bench_train = "/opt/bench-train";
  options.cpu_threads = 3;
  const std::map<std::string, std::string> flags =
      ContractFlags(BuildRankLaunch(EverySpecField("cpu"), 0, "node-a", 29500, options));
  // All of the contract's flags: none is listed that the agent never passes.
  for (const char* flag : contract::kLaunchFlags) {
    EXPECT_EQ(flags.count(flag), 1u) << flag << " is in the contract but not in the launch";
  }
  EXPECT_EQ(ValueOf(flags, contract::kFlagModel), "resnet18");
  EXPECT_EQ(ValueOf(flags, contract::kFlagPrecision), "amp");
  EXPECT_EQ(ValueOf(flags, contract::kFlagBatchSize), "48");
  EXPECT_EQ(ValueOf(flags, contract::kFlagIterations), "30");
  EXPECT_EQ(ValueOf(flags, contract::kFlagWarmup), "4");
  EXPECT_EQ(ValueOf(flags, contract::kFlagImageSize), "96");
  EXPECT_EQ(ValueOf(flags, contract::kFlagData), "imagefolder");
  EXPECT_EQ(ValueOf(flags, contract::kFlagDataDir), "/data/imagenet");
  EXPECT_EQ(ValueOf(flags, contract::kFlagLoaderThreads), "6");
  EXPECT_EQ(ValueOf(flags, contract::kFlagDevice), contract::kDeviceCpu);
  EXPECT_EQ(ValueOf(flags, contract::kFlagThreads), "3");
  // Fault injection is off by default: never passed.
  EXPECT_EQ(flags.count(contract::kFlagFaultScenario), 0u);
}

TEST(RankLaunchContractTest, TheAgentsFaultScenarioReachesEveryRank) {
  RankSupervisorOptions options;
  options.fault_scenario = "/etc/benchfleet/demo-scenario.txt";
  for (size_t index : {0, 1}) {
    Assignment assignment = EverySpecField("cpu");
    assignment.add_ranks(3);
    const std::map<std::string, std::string> flags =
        ContractFlags(BuildRankLaunch(assignment, index, "node-a", 29500, options));
    EXPECT_EQ(ValueOf(flags, contract::kFlagFaultScenario), "/etc/benchfleet/demo-scenario.txt")
        << "rank index " << index;
  }
}

TEST(RankLaunchContractTest, ACudaLaunchAndItsEnvironmentKeepToTheContract) {
  RankSupervisorOptions options;
  options.bench_train = "/opt/bench-train";
  options.host_cores = 8;
  options.node_name = "gpu-node-7";
  RankLaunch launch = BuildRankLaunch(EverySpecField("cuda"), 0, "node-a", 29511, options);
  const std::map<std::string, std::string> flags = ContractFlags(launch);
  EXPECT_EQ(ValueOf(flags, contract::kFlagDevice), std::string(contract::kDeviceCudaPrefix) + "1");
  EXPECT_EQ(flags.count(contract::kFlagThreads), 0u);
  std::map<std::string, std::string> env(launch.env.begin(), launch.env.end());
  EXPECT_EQ(env[contract::kEnvRank], "2");
  EXPECT_EQ(env[contract::kEnvWorldSize], "4");
  EXPECT_EQ(env[contract::kEnvLocalRank], "0");
  EXPECT_EQ(env[contract::kEnvLocalWorldSize], "1");
  EXPECT_EQ(env[contract::kEnvMasterAddr], "node-a");
  EXPECT_EQ(env[contract::kEnvMasterPort], "29511");
  EXPECT_EQ(env[contract::kEnvNodeName], "gpu-node-7");  // the agent's name, always
}

}  // namespace
}  // namespace bench::agent
