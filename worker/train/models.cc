#include "worker/train/models.h"

#include <array>
#include <functional>
#include <map>
#include <vector>

#include <torch/nn.h>
#include <torch/types.h>

namespace bench_train {
namespace {

namespace nn = torch::nn;

nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
  return nn::Conv2d(
      nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(false));
}
nn::Conv2d Conv3x3(int64_t in, int64_t out, int64_t stride) { return Conv(in, out, 3, stride, 1); }
nn::Conv2d Conv1x1(int64_t in, int64_t out, int64_t stride) { return Conv(in, out, 1, stride, 0); }

class ResidualBlock : public nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  // The BatchNorm just before the residual addition (zeroed by zero_init_residual).
  virtual nn::BatchNorm2d& LastNorm() = 0;

 protected:
  void MaybeAddDownsample(int64_t in, int64_t out, int64_t stride) {
    if (stride != 1 || in != out) {
      downsample_ = register_module(
          "downsample", nn::Sequential(Conv1x1(in, out, stride), nn::BatchNorm2d(out)));
    }
  }
  torch::Tensor Shortcut(const torch::Tensor& x) {
    return downsample_.is_empty() ? x : downsample_->forward(x);
  }

 private:
  nn::Sequential downsample_{nullptr};
};

// torchvision's BasicBlock (resnet18/34): two 3x3 convolutions.
class BasicBlock : public ResidualBlock {
 public:
  static constexpr int64_t kExpansion = 1;

  BasicBlock(int64_t in, int64_t planes, int64_t stride)
      : conv1_(register_module("conv1", Conv3x3(in, planes, stride))),
        bn1_(register_module("bn1", nn::BatchNorm2d(planes))),
        conv2_(register_module("conv2", Conv3x3(planes, planes, 1))),
        bn2_(register_module("bn2", nn::BatchNorm2d(planes))) {
    MaybeAddDownsample(in, planes * kExpansion, stride);
  }

  torch::Tensor forward(torch::Tensor x) override {
    torch::Tensor out = bn1_->forward(conv1_->forward(x)).relu_();
    out = bn2_->forward(conv2_->forward(out));
    out += Shortcut(x);
    return out.relu_();
  }
  nn::BatchNorm2d& LastNorm() override { return bn2_; }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  nn::Conv2d conv2_;
  nn::BatchNorm2d bn2_;
};

// torchvision's Bottleneck, ResNet v1.5: the stride sits on the 3x3 convolution.
class Bottleneck : public ResidualBlock {
 public:
  static constexpr int64_t kExpansion = 4;

  Bottleneck(int64_t in, int64_t planes, int64_t stride)
      : conv1_(register_module("conv1", Conv1x1(in, planes, 1))),
        bn1_(register_module("bn1", nn::BatchNorm2d(planes))),
        conv2_(register_module("conv2", Conv3x3(planes, planes, stride))),
        bn2_(register_module("bn2", nn::BatchNorm2d(planes))),
        conv3_(register_module("conv3", Conv1x1(planes, planes * kExpansion, 1))),
        bn3_(register_module("bn3", nn::BatchNorm2d(planes * kExpansion))) {
    MaybeAddDownsample(in, planes * kExpansion, stride);
  }

  torch::Tensor forward(torch::Tensor x) override {
    torch::Tensor out = bn1_->forward(conv1_->forward(x)).relu_();
    out = bn2_->forward(conv2_->forward(out)).relu_();
    out = bn3_->forward(conv3_->forward(out));
    out += Shortcut(x);
    return out.relu_();
  }
  nn::BatchNorm2d& LastNorm() override { return bn3_; }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  nn::Conv2d conv2_;
  nn::BatchNorm2d bn2_;
  nn::Conv2d conv3_;
  nn::BatchNorm2d bn3_;
};

template <typename Block>
class ResNet : public ImageClassifier {
 public:
  ResNet(const std::array<int, 4>& blocks, const ModelOptions& options)
      : conv1_(register_module("conv1", Conv(3, 64, 7, 2, 3))),
        bn1_(register_module("bn1", nn::BatchNorm2d(64))) {
    static constexpr std::array<int64_t, 4> kPlanes = {64, 128, 256, 512};
    int64_t in = 64;
    for (size_t i = 0; i < blocks.size(); ++i) {
      auto list = register_module("layer" + std::to_string(i + 1), nn::ModuleList());
      for (int b = 0; b < blocks[i]; ++b) {
        const int64_t stride = (i > 0 && b == 0) ? 2 : 1;
        auto block = std::make_shared<Block>(in, kPlanes[i], stride);
        list->push_back(block);
        layers_[i].push_back(block);
        in = kPlanes[i] * Block::kExpansion;
      }
    }
    fc_ = register_module("fc", nn::Linear(in, options.num_classes));

    for (const auto& module : modules(/*include_self=*/false)) {
      if (auto* conv = dynamic_cast<nn::Conv2dImpl*>(module.get())) {
        nn::init::kaiming_normal_(conv->weight, /*a=*/0, torch::kFanOut, torch::kReLU);
      } else if (auto* bn = dynamic_cast<nn::BatchNorm2dImpl*>(module.get())) {
        nn::init::ones_(bn->weight);
        nn::init::zeros_(bn->bias);
      }
    }
    if (options.zero_init_residual) {
      torch::NoGradGuard no_grad;
      for (auto& layer : layers_) {
        for (auto& block : layer) nn::init::zeros_(block->LastNorm()->weight);
      }
    }
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = bn1_->forward(conv1_->forward(x)).relu_();
    x = torch::max_pool2d(x, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
    for (auto& layer : layers_) {
      for (auto& block : layer) x = block->forward(x);
    }
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc_->forward(x);
  }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  std::array<std::vector<std::shared_ptr<Block>>, 4> layers_;
  nn::Linear fc_{nullptr};
};

template <typename Block>
ModelFactory ResNetFactory(std::array<int, 4> blocks) {
  return [blocks](const ModelOptions& options) {
    return std::make_shared<ResNet<Block>>(blocks, options);
  };
}

std::map<std::string, ModelFactory>& Registry() {
  static auto* kRegistry = new std::map<std::string, ModelFactory>{
      {"resnet18", ResNetFactory<BasicBlock>({2, 2, 2, 2})},
      {"resnet34", ResNetFactory<BasicBlock>({3, 4, 6, 3})},
      {"resnet50", ResNetFactory<Bottleneck>({3, 4, 6, 3})},
      {"resnet101", ResNetFactory<Bottleneck>({3, 4, 23, 3})},
      {"resnet152", ResNetFactory<Bottleneck>({3, 8, 36, 3})},
  };
  return *kRegistry;
}

}  // namespace

void RegisterModel(const std::string& name, ModelFactory factory) {
  Registry()[name] = std::move(factory);
}

StatusOr<std::shared_ptr<ImageClassifier>> MakeModel(const std::string& name,
                                                     int64_t num_classes) {
  ModelOptions options;
  options.num_classes = num_classes;
  return MakeModel(name, options);
}

StatusOr<std::shared_ptr<ImageClassifier>> MakeModel(const std::string& name,
                                                     const ModelOptions& options) {
  const auto& registry = Registry();
  auto it = registry.find(name);
  if (it == registry.end()) {
    std::string known;
    for (const auto& [known_name, factory] : registry) {
      known += (known.empty() ? "" : ", ") + known_name;
    }
    return InvalidArgumentError("unknown model '" + name + "' (known: " + known + ")");
  }
  if (options.num_classes <= 0) return InvalidArgumentError("num_classes must be > 0");
  return it->second(options);
}

int64_t CountParameters(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const auto& parameter : module.parameters(/*recurse=*/true)) count += parameter.numel();
  return count;
}

}  // namespace bench_train
