#include "worker/train/models.h"

#include <cmath>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <torch/nn.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "worker/train/options.h"

namespace bench_train {
namespace {

// torchvision.models.<name>(num_classes=1000): sum(p.numel() for p in m.parameters())
TEST(ModelsTest, ParameterCountsMatchTorchvision) {
  const std::map<std::string, int64_t> expected = {
      {"resnet18", 11689512},  {"resnet34", 21797672},  {"resnet50", 25557032},
      {"resnet101", 44549160}, {"resnet152", 60192808},
  };
  for (const auto& [name, count] : expected) {
    auto model = MakeModel(name, 1000);
    ASSERT_TRUE(model.ok()) << name << ": " << model.status().message();
    EXPECT_EQ(CountParameters(**model), count) << name;
  }
}

// MLPerf's SSD reference (v0.7-v1.0 ssd300.py, label_num=81): sum(p.numel() for p in
// SSD300(81).parameters()). Its extra blocks are convolutions with biases and no
// BatchNorm; with BatchNorm and no biases (NVIDIA's variant) it would be 19,975,222.
TEST(ModelsTest, SsdResNet34HasTheReferenceParameterCount) {
  auto model = MakeModel("ssd_resnet34", 81);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(CountParameters(**model), 19972534);
  EXPECT_FALSE(MakeClassifier("ssd_resnet34", 81).ok());  // a detector, not a classifier
}

TEST(ModelsTest, SsdResNet34BackboneHasStrideOneConv4AndGivesOneOutputPerDefaultBox) {
  torch::manual_seed(0);
  auto model = MakeModel("ssd_resnet34", 81);
  ASSERT_TRUE(model.ok());
  std::map<std::string, std::vector<int64_t>> strides;
  for (const auto& item : (*model)->named_modules()) {
    if (auto* conv = item.value()->as<torch::nn::Conv2d>()) {
      strides[item.key()] = c10::IntArrayRef(conv->options.stride()).vec();
    }
  }
  const std::vector<int64_t> one = {1, 1};
  const std::vector<int64_t> two = {2, 2};
  EXPECT_EQ(strides["layer2.0.conv1"], two);
  EXPECT_EQ(strides["layer3.0.conv1"], one);
  EXPECT_EQ(strides["layer3.0.downsample.0"], one);
  EXPECT_EQ(strides.count("layer4.0.conv1"), 0u);
  EXPECT_EQ(strides["additional_blocks.0.2"], two);
  EXPECT_EQ(strides["additional_blocks.4.2"], one);

  (*model)->eval();
  torch::NoGradGuard no_grad;
  const auto outputs = (*model)->Forward(torch::randn({1, 3, 300, 300}));
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].sizes().vec(), (std::vector<int64_t>{1, 4, 8732}));
  EXPECT_EQ(outputs[1].sizes().vec(), (std::vector<int64_t>{1, 81, 8732}));
  EXPECT_TRUE(torch::isfinite(outputs[1]).all().item<bool>());
}

TEST(ModelsTest, EveryKnownNameBuilds) {
  for (const auto& name : KnownModelNames()) {
    EXPECT_TRUE(MakeModel(name, 10).ok()) << name;
  }
}

TEST(ModelsTest, UnknownNameIsAnError) {
  auto model = MakeModel("resnet51", 1000);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("resnet51"), std::string::npos);
  EXPECT_FALSE(MakeModel("resnet50", 0).ok());
}

TEST(ModelsTest, Resnet50HasTorchvisionNamesAndV15Strides) {
  auto model = MakeModel("resnet50", 1000);
  ASSERT_TRUE(model.ok());
  const auto params = (*model)->named_parameters();
  EXPECT_EQ(params.size(), 161u);  // len(list(torchvision resnet50.parameters()))
  for (const char* name : {"conv1.weight", "bn1.weight", "layer1.0.downsample.0.weight",
                           "layer1.0.downsample.1.bias", "layer3.5.conv3.weight",
                           "layer4.2.bn3.weight", "fc.weight", "fc.bias"}) {
    EXPECT_NE(params.find(name), nullptr) << name;
  }
  EXPECT_EQ((*model)->named_buffers().size(), 3u * 53u);  // mean, var, count per BN

  std::map<std::string, std::vector<int64_t>> strides;
  for (const auto& item : (*model)->named_modules()) {
    if (auto* conv = item.value()->as<torch::nn::Conv2d>()) {
      strides[item.key()] = c10::IntArrayRef(conv->options.stride()).vec();
    }
  }
  const std::vector<int64_t> one = {1, 1};
  const std::vector<int64_t> two = {2, 2};
  EXPECT_EQ(strides["conv1"], two);
  EXPECT_EQ(strides["layer1.0.conv2"], one);
  for (const char* layer : {"layer2", "layer3", "layer4"}) {
    const std::string block = std::string(layer) + ".0.";
    EXPECT_EQ(strides[block + "conv1"], one) << layer;  // v1.5: not on the 1x1
    EXPECT_EQ(strides[block + "conv2"], two) << layer;  // but on the 3x3
    EXPECT_EQ(strides[block + "downsample.0"], two) << layer;
    EXPECT_EQ(strides[std::string(layer) + ".1.conv2"], one) << layer;
  }
}

TEST(ModelsTest, InitIsKaimingFanOutAndUnitBatchNorm) {
  torch::manual_seed(0);
  auto model = MakeModel("resnet50", 1000);
  ASSERT_TRUE(model.ok());
  const auto params = (*model)->named_parameters();
  // layer4.0.conv2: 512 out channels, 3x3 -> fan_out 4608, std sqrt(2 / 4608).
  const torch::Tensor w = params["layer4.0.conv2.weight"];
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(2.0 / 4608.0), 0.02 * std::sqrt(2.0 / 4608.0));
  EXPECT_NEAR(w.mean().item<double>(), 0.0, 1e-4);
  EXPECT_TRUE(torch::all(params["layer2.1.bn2.weight"] == 1).item<bool>());
  EXPECT_TRUE(torch::all(params["layer2.1.bn2.bias"] == 0).item<bool>());
}

TEST(ModelsTest, ForwardAtSmallestImageSize) {
  for (const char* name : {"resnet18", "resnet50"}) {
    auto model = MakeClassifier(name, 7);
    ASSERT_TRUE(model.ok());
    const torch::Tensor out = (*model)->forward(torch::randn({2, 3, kMinImageSize, kMinImageSize}));
    EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{2, 7})) << name;
  }
}

}  // namespace
}  // namespace bench_train
