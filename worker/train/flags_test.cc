// bench-train's side of the agent↔trainer contract (common/trainer_contract.h): every
// flag the agent may pass is one the trainer parses, into the option it names; and the
// parser's refusals name the flag.
#include "worker/train/flags.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/trainer_contract.h"

namespace bench_train {
namespace {

namespace contract = bench::trainer_contract;

// A valid value for each flag of kLaunchFlags that takes one.
const std::map<std::string, std::string>& SampleValues() {
  static const auto* values = new std::map<std::string, std::string>{
      {contract::kFlagModel, "resnet18"},     {contract::kFlagPrecision, "amp"},
      {contract::kFlagBatchSize, "8"},        {contract::kFlagIterations, "7"},
      {contract::kFlagWarmup, "2"},           {contract::kFlagImageSize, "64"},
      {contract::kFlagDataDir, "/data/imgs"}, {contract::kFlagData, "imagefolder"},
      {contract::kFlagLoaderThreads, "3"},    {contract::kFlagDevice, "cuda:1"},
      {contract::kFlagThreads, "2"},
  };
  return *values;
}

bool IsSwitch(const std::string& flag) {
  for (const char* name : contract::kLaunchSwitches) {
    if (flag == name) return true;
  }
  return false;
}

TEST(TrainFlagsTest, EveryLaunchFlagOfTheContractIsParsed) {
  for (const char* flag : contract::kLaunchFlags) {
    std::vector<std::string> args = {flag};
    if (!IsSwitch(flag)) {
      auto value = SampleValues().find(flag);
      ASSERT_NE(value, SampleValues().end()) << "no sample value in this test for " << flag;
      args.push_back(value->second);
    }
    ParsedFlags parsed;
    const Status status = ParseTrainFlags(args, &parsed);
    EXPECT_TRUE(status.ok()) << flag << ": " << status.message();
  }
}

// The whole launch, in the agent's order, lands in the options it names.
TEST(TrainFlagsTest, AnAgentsLaunchFillsTheOptions) {
  std::vector<std::string> args;
  for (const char* flag : contract::kLaunchFlags) {
    args.push_back(flag);
    if (!IsSwitch(flag)) args.push_back(SampleValues().at(flag));
  }
  ParsedFlags parsed;
  const Status status = ParseTrainFlags(args, &parsed);
  ASSERT_TRUE(status.ok()) << status.message();
  const TrainOptions& o = parsed.options;
  EXPECT_EQ(o.model, "resnet18");
  EXPECT_EQ(o.precision, "amp");
  EXPECT_EQ(o.batch_size, 8);
  EXPECT_EQ(o.iterations, 7);
  EXPECT_EQ(o.warmup_iterations, 2);
  EXPECT_EQ(o.image_size, 64);
  EXPECT_EQ(o.data, kDataImageFolder);
  EXPECT_EQ(o.data_dir, "/data/imgs");
  EXPECT_EQ(o.loader_threads, 3);
  EXPECT_TRUE(o.data_vs_compute);
  EXPECT_EQ(o.device, "cuda:1");
  EXPECT_EQ(o.threads, 2);
  EXPECT_TRUE(ValidateTrainOptions(o).ok()) << ValidateTrainOptions(o).message();
}

TEST(TrainFlagsTest, RefusalsNameTheFlag) {
  ParsedFlags parsed;
  Status status = ParseTrainFlags({"--bogus", "1"}, &parsed);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("--bogus"), std::string::npos) << status.message();
  status = ParseTrainFlags({contract::kFlagBatchSize}, &parsed);
  EXPECT_NE(status.message().find("--bs needs a value"), std::string::npos) << status.message();
  status = ParseTrainFlags({"--iters=ten"}, &parsed);
  EXPECT_NE(status.message().find("--iters expects an integer"), std::string::npos)
      << status.message();
  status = ParseTrainFlags({contract::kFlagLoaderThreads, "5000"}, &parsed);
  EXPECT_NE(status.message().find("--loader-threads out of range"), std::string::npos)
      << status.message();
}

// Fault injection is off unless asked for; the flag takes the scenario file.
TEST(TrainFlagsTest, FaultScenarioIsOffByDefaultAndTakesAFile) {
  ParsedFlags plain;
  ASSERT_TRUE(ParseTrainFlags({}, &plain).ok());
  EXPECT_TRUE(plain.options.fault_scenario.empty());
  EXPECT_TRUE(plain.options.faults.empty());
  ParsedFlags parsed;
  ASSERT_TRUE(ParseTrainFlags({contract::kFlagFaultScenario, "/tmp/s.txt"}, &parsed).ok());
  EXPECT_EQ(parsed.options.fault_scenario, "/tmp/s.txt");
  const Status status = ParseTrainFlags({std::string(contract::kFlagFaultScenario) + "="}, &parsed);
  EXPECT_NE(status.message().find("--fault-scenario needs a file"), std::string::npos)
      << status.message();
}

TEST(TrainFlagsTest, ModelDefaultsFillWhatTheFlagsLeaveOut) {
  ParsedFlags parsed;
  ASSERT_TRUE(ParseTrainFlags({"--model=ssd_resnet34"}, &parsed).ok());
  EXPECT_EQ(parsed.options.image_size, 300);
  EXPECT_EQ(parsed.options.num_classes, 81);
  ParsedFlags help;
  ASSERT_TRUE(ParseTrainFlags({"--help", "--bogus"}, &help).ok());
  EXPECT_TRUE(help.help);
}

}  // namespace
}  // namespace bench_train
