#include "worker/train/options.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

namespace bench_train {
namespace {

std::function<const char*(const char*)> Env(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(ValidateTrainOptionsTest, DefaultsAreValid) {
  EXPECT_TRUE(ValidateTrainOptions(TrainOptions()).ok());
}

TEST(ValidateTrainOptionsTest, ADetectionModelTrainsOnACocoFolder) {
  TrainOptions options;
  options.model = "ssd_resnet34";
  options.image_size = 300;
  options.num_classes = 81;
  options.data = bench::kDataCoco;
  options.data_dir = "/data/coco";
  const Status status = ValidateTrainOptions(options);
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST(ValidateTrainOptionsTest, RejectsBadValuesNamingTheFlag) {
  struct Case {
    std::function<void(TrainOptions&)> mutate;
    std::string flag;
  };
  const std::vector<Case> cases = {
      {[](TrainOptions& o) { o.batch_size = 0; }, "--bs"},
      {[](TrainOptions& o) { o.iterations = 0; }, "--iters"},
      {[](TrainOptions& o) { o.warmup_iterations = -1; }, "--warmup"},
      {[](TrainOptions& o) { o.warmup_iterations = o.iterations; }, "--warmup"},
      {[](TrainOptions& o) { o.image_size = 31; }, "--image-size"},
      {[](TrainOptions& o) { o.model = "vgg16"; }, "--model"},
      {[](TrainOptions& o) { o.precision = "fp16"; }, "--precision"},
      {[](TrainOptions& o) { o.data = "imagenet"; }, "--data"},
      {[](TrainOptions& o) {
         o.data = bench::kDataCoco;
         o.data_dir = "/data/coco";
       },
       "--data coco is detection data"},
      {[](TrainOptions& o) {
         o.model = "ssd_resnet34";
         o.image_size = 300;
         o.num_classes = 81;
         o.data = bench::kDataCoco;
       },
       "--data coco needs a folder"},
      {[](TrainOptions& o) { o.device = "tpu"; }, "--device"},
      {[](TrainOptions& o) { o.device = "cuda:x"; }, "--device"},
      {[](TrainOptions& o) {
         o.device = "cuda:0";
         o.fault_scenario = "faults.txt";
       },
       "--fault-scenario: fault injection runs on the CPU only"},
      // A detection model: 300x300 only (its default boxes), synthetic data only so far.
      {[](TrainOptions& o) { o.model = "ssd_resnet34"; o.num_classes = 81; }, "--image-size"},
      {[](TrainOptions& o) {
         o.model = "ssd_resnet34";
         o.image_size = 300;
         o.data = kDataImageFolder;
         o.data_dir = "/data";
       },
       "--data"},
      {[](TrainOptions& o) {
         o.model = "ssd_resnet34";
         o.image_size = 300;
         o.num_classes = 1;
       },
       "--num-classes"},
  };
  for (const auto& c : cases) {
    TrainOptions options;
    c.mutate(options);
    const Status status = ValidateTrainOptions(options);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.flag;
    EXPECT_NE(status.message().find(c.flag), std::string::npos) << status.message();
  }
}

TEST(ValidateTrainOptionsTest, AcceptsEdgeValues) {
  TrainOptions options;
  options.image_size = kMinImageSize;
  options.warmup_iterations = 0;
  options.iterations = 1;
  options.device = "cuda:3";  // whether it exists is the trainer's business
  options.precision = kPrecisionAmp;
  EXPECT_TRUE(ValidateTrainOptions(options).ok());
}

TEST(ValidateTrainOptionsTest, AcceptsSsdAtItsDefaults) {
  TrainOptions options;
  options.model = "ssd_resnet34";
  options.image_size = 300;
  options.num_classes = 81;
  EXPECT_TRUE(ValidateTrainOptions(options).ok()) << ValidateTrainOptions(options).message();
}

TEST(RendezvousFromEnvTest, NoVariablesMeansSingleProcess) {
  auto rdv = RendezvousFromEnv(Env({}), 60);
  ASSERT_TRUE(rdv.ok());
  EXPECT_EQ(rdv->world_size, 1);
  EXPECT_EQ(rdv->rank, 0);
  EXPECT_FALSE(rdv->distributed());
}

TEST(RendezvousFromEnvTest, ReadsTorchrunVariables) {
  auto rdv = RendezvousFromEnv(Env({{"RANK", "3"},
                                    {"WORLD_SIZE", "4"},
                                    {"LOCAL_RANK", "1"},
                                    {"MASTER_ADDR", "10.0.0.1"},
                                    {"MASTER_PORT", "29501"},
                                    {"GLOO_SOCKET_IFNAME", "eth1"}}),
                               7);
  ASSERT_TRUE(rdv.ok()) << rdv.status().message();
  EXPECT_EQ(rdv->rank, 3);
  EXPECT_EQ(rdv->world_size, 4);
  EXPECT_EQ(rdv->local_rank, 1);
  EXPECT_EQ(rdv->master_addr, "10.0.0.1");
  EXPECT_EQ(rdv->master_port, 29501);
  EXPECT_EQ(rdv->gloo_interface, "eth1");
  EXPECT_EQ(rdv->timeout_s, 7);
  EXPECT_TRUE(rdv->distributed());
}

TEST(RendezvousFromEnvTest, LocalRankDefaultsToRank) {
  auto rdv = RendezvousFromEnv(
      Env({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}), 60);
  ASSERT_TRUE(rdv.ok());
  EXPECT_EQ(rdv->local_rank, 1);
}

TEST(RendezvousFromEnvTest, RejectsIncompleteOrBadVariables) {
  const std::vector<std::map<std::string, std::string>> bad = {
      {{"RANK", "0"}},
      {{"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}},
      {{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}},
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}},
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}},
      {{"RANK", "0"}, {"WORLD_SIZE", "two"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}},
      {{"RANK", "1"}, {"WORLD_SIZE", "1"}},
  };
  for (const auto& vars : bad) {
    auto rdv = RendezvousFromEnv(Env(vars), 60);
    ASSERT_FALSE(rdv.ok());
    EXPECT_EQ(rdv.status().code(), StatusCode::kInvalidArgument) << rdv.status().message();
  }
}

TEST(ParseInt64Test, IsStrict) {
  int64_t v = 0;
  EXPECT_TRUE(ParseInt64("42", &v));
  EXPECT_EQ(v, 42);
  EXPECT_TRUE(ParseInt64("-1", &v));
  EXPECT_EQ(v, -1);
  EXPECT_FALSE(ParseInt64("", &v));
  EXPECT_FALSE(ParseInt64("4x", &v));
  EXPECT_FALSE(ParseInt64(" 4", &v));
  EXPECT_FALSE(ParseInt64("99999999999999999999", &v));
}

}  // namespace
}  // namespace bench_train
