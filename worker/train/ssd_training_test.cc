// ssd_resnet34 trained by the shared TrainingStep on the CPU: synthetic detection data
// (encoded once), fp32 and bf16 autocast steps, and a two-rank Gloo step.
#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "worker/train/data_source.h"
#include "worker/train/models.h"
#include "worker/train/training_step.h"
#include "worker/train/two_ranks.h"

namespace bench_train {
namespace {

TrainOptions SsdOptions(int64_t batch_size) {
  TrainOptions options;
  options.model = "ssd_resnet34";
  options.image_size = 300;
  options.num_classes = 81;
  options.batch_size = batch_size;
  return options;
}

std::shared_ptr<TrainableModel> SeededSsd() {
  torch::manual_seed(3);
  auto model = MakeModel("ssd_resnet34", 81);
  EXPECT_TRUE(model.ok());
  return *model;
}

StepOptions SsdStep(int64_t total_steps) {
  StepOptions options;
  options.lr = 0.002;
  options.total_steps = total_steps;
  return options;
}

TEST(SsdTrainingTest, SyntheticTargetsAreEncodedPerDefaultBox) {
  auto data = OpenDataSource(SsdOptions(2), c10::Device(c10::kCPU));
  ASSERT_TRUE(data.ok()) << data.status().message();
  auto first = (*data)->Next();
  auto second = (*data)->Next();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->images.sizes().vec(), (std::vector<int64_t>{2, 3, 300, 300}));
  EXPECT_EQ(first->labels.sizes().vec(), (std::vector<int64_t>{2, 8732}));
  EXPECT_EQ(first->boxes.sizes().vec(), (std::vector<int64_t>{2, 4, 8732}));
  EXPECT_EQ(first->labels.scalar_type(), torch::kLong);
  // Every image has at least one positive (each object forces its best box), classes
  // stay in 1..80, and the same targets are replayed every step.
  EXPECT_TRUE(((first->labels > 0).sum(1) >= 1).all().item<bool>());
  EXPECT_LE(first->labels.max().item<int64_t>(), 80);
  EXPECT_TRUE(torch::isfinite(first->boxes).all().item<bool>());
  EXPECT_TRUE(torch::equal(first->labels, second->labels));
  EXPECT_EQ(second->number, 1);
}

TEST(SsdTrainingTest, StepsTrainWithAFiniteLossInFp32AndBf16Autocast) {
  auto data = OpenDataSource(SsdOptions(2), c10::Device(c10::kCPU));
  ASSERT_TRUE(data.ok());
  auto batch = (*data)->Next();
  ASSERT_TRUE(batch.ok());
  auto model = SeededSsd();
  model->train();
  const torch::Tensor before = model->named_parameters()["loc.0.weight"].clone();
  {
    TrainingStep step(model, SsdStep(2), nullptr);
    std::vector<double> losses;
    for (int s = 0; s < 2; ++s) {
      losses.push_back(step.Run(batch->images, batch->labels, batch->boxes).item<double>());
    }
    for (double loss : losses) {
      EXPECT_TRUE(std::isfinite(loss)) << loss;
      EXPECT_GT(loss, 0);
    }
  }
  EXPECT_FALSE(torch::equal(before, model->named_parameters()["loc.0.weight"]));

  StepOptions bf16 = SsdStep(1);
  bf16.autocast = true;
  bf16.autocast_dtype = c10::kBFloat16;
  TrainingStep step(model, bf16, nullptr);
  const double loss = step.Run(batch->images, batch->labels, batch->boxes).item<double>();
  EXPECT_TRUE(std::isfinite(loss)) << loss;
}

// Two ranks, one image each: after a step with the gradient all-reduce both hold the
// same weights (they started from rank 0's).
TEST(SsdTrainingTest, TwoRanksOverGlooEndWithTheSameWeights) {
  std::vector<std::shared_ptr<TrainableModel>> models = {SeededSsd(), SeededSsd()};
  std::vector<double> losses(2, 0);
  const std::vector<Status> statuses = RunTwoRanks([&](int rank, Communicator& communicator) {
    TrainOptions options = SsdOptions(1);
    options.rendezvous.rank = rank;
    options.rendezvous.world_size = 2;
    auto data = OpenDataSource(options, c10::Device(c10::kCPU));
    ASSERT_TRUE(data.ok());
    auto batch = (*data)->Next();
    ASSERT_TRUE(batch.ok());
    models[rank]->train();
    TrainingStep step(models[rank], SsdStep(1), &communicator);
    losses[rank] = step.Run(batch->images, batch->labels, batch->boxes).item<double>();
  });
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << statuses[rank].message();
    EXPECT_TRUE(std::isfinite(losses[rank])) << rank;
  }
  EXPECT_NE(losses[0], losses[1]);  // different images and targets per rank
  auto p0 = models[0]->named_parameters();
  auto p1 = models[1]->named_parameters();
  for (const char* name : {"conv1.weight", "layer3.0.conv1.weight", "conf.5.bias"}) {
    EXPECT_TRUE(torch::allclose(p0[name], p1[name], 1e-5, 1e-6)) << name;
  }
}

}  // namespace
}  // namespace bench_train
