#include "worker/sim/sim_flags.h"

#include <string>
#include <vector>

#include "common/trainer_contract.h"
#include "gtest/gtest.h"

namespace bench::sim {
namespace {

namespace contract = bench::trainer_contract;

// A valid value for each flag the agent may pass.
std::string ValueFor(const std::string& flag) {
  if (flag == contract::kFlagModel) return "resnet18";
  if (flag == contract::kFlagPrecision) return "amp";
  if (flag == contract::kFlagData) return "imagefolder";
  if (flag == contract::kFlagDataDir) return "/data";
  if (flag == contract::kFlagDevice) return "cuda:3";
  if (flag == contract::kFlagWarmup) return "2";
  return "16";
}

TEST(SimFlagsTest, AcceptsEveryFlagTheAgentPasses) {
  std::vector<std::string> args;
  for (const char* flag : contract::kLaunchFlags) {
    args.push_back(flag);
    bool is_switch = false;
    for (const char* s : contract::kLaunchSwitches) is_switch |= std::string(s) == flag;
    if (!is_switch) args.push_back(ValueFor(flag));
  }
  args.insert(args.end(), {contract::kFlagFaultScenario, "/tmp/s.txt", "--sim-step-s=0.2",
                           "--sim-noise", "3%"});
  std::string error;
  auto options = ParseSimFlags(args, &error);
  ASSERT_TRUE(options.has_value()) << error;
  EXPECT_EQ(options->model, "resnet18");
  EXPECT_EQ(options->precision, "amp");
  EXPECT_EQ(options->iterations, 16);
  EXPECT_EQ(options->warmup, 2);
  EXPECT_EQ(options->device, "cuda:3");
  EXPECT_TRUE(options->data_vs_compute);
  EXPECT_EQ(options->fault_scenario, "/tmp/s.txt");
  EXPECT_DOUBLE_EQ(options->step_s, 0.2);
  EXPECT_DOUBLE_EQ(options->noise_fraction, 0.03);
  EXPECT_EQ(CudaIndex(options->device), 3);
  EXPECT_EQ(CudaIndex("cpu"), std::nullopt);
}

TEST(SimFlagsTest, DefaultsAreOnePercentNoiseAndFiftyMilliseconds) {
  std::string error;
  auto options = ParseSimFlags({}, &error);
  ASSERT_TRUE(options.has_value()) << error;
  EXPECT_DOUBLE_EQ(options->step_s, 0.05);
  EXPECT_DOUBLE_EQ(options->noise_fraction, 0.01);
  EXPECT_TRUE(options->fault_scenario.empty());
  EXPECT_DOUBLE_EQ(options->rendezvous_timeout_s, 60);
}

TEST(SimFlagsTest, BadInputNamesTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--model", "vgg"}, "--model vgg: not a model"},
      {{"--precision", "fp8"}, "--precision fp8: not a precision"},
      {{"--device", "tpu"}, "--device tpu: not cpu or cuda:N"},
      {{"--sim-step-s", "0"}, "--sim-step-s 0: not a positive number"},
      {{"--sim-noise", "abc"}, "--sim-noise abc: not a percentage"},
      {{"--iters"}, "--iters needs a value"},
      {{"--bogus", "1"}, "unknown flag --bogus"},
      {{"--iters", "5", "--warmup", "5"}, "--warmup 5 must be below --iters 5"},
  };
  for (const auto& [args, expected] : cases) {
    std::string error;
    EXPECT_FALSE(ParseSimFlags(args, &error).has_value()) << expected;
    EXPECT_NE(error.find(expected), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace bench::sim
