#include "worker/train/models.h"

#include <array>
#include <functional>
#include <map>
#include <vector>

#include <torch/nn.h>
#include <torch/types.h>

#include "worker/train/detection.h"

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

// Appends `blocks` residual blocks of width `planes` to `list` (the first at `stride`)
// and returns them; `in` becomes their output width.
template <typename Block>
std::vector<std::shared_ptr<Block>> AddResidualLayer(nn::ModuleListImpl& list, int64_t& in,
                                                     int64_t planes, int blocks,
                                                     int64_t stride) {
  std::vector<std::shared_ptr<Block>> layer;
  for (int b = 0; b < blocks; ++b) {
    auto block = std::make_shared<Block>(in, planes, b == 0 ? stride : 1);
    list.push_back(block);
    layer.push_back(block);
    in = planes * Block::kExpansion;
  }
  return layer;
}

// torchvision's init of every convolution and BatchNorm under `module`.
void InitLikeTorchvision(nn::Module& module) {
  for (const auto& child : module.modules(/*include_self=*/false)) {
    if (auto* conv = dynamic_cast<nn::Conv2dImpl*>(child.get())) {
      nn::init::kaiming_normal_(conv->weight, /*a=*/0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = dynamic_cast<nn::BatchNorm2dImpl*>(child.get())) {
      nn::init::ones_(bn->weight);
      nn::init::zeros_(bn->bias);
    }
  }
}

// torchvision's stem: 7x7 convolution at stride 2, BatchNorm, ReLU, 3x3 max-pool at stride 2.
torch::Tensor Stem(nn::Conv2d& conv1, nn::BatchNorm2d& bn1, torch::Tensor x) {
  x = bn1->forward(conv1->forward(x)).relu_();
  return torch::max_pool2d(x, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
}

template <typename Block>
class ResNet : public ImageClassifier {
 public:
  ResNet(const std::array<int, 4>& blocks, const ModelOptions& options)
      : conv1_(register_module("conv1", Conv(3, 64, 7, 2, 3))),
        bn1_(register_module("bn1", nn::BatchNorm2d(64))) {
    label_smoothing_ = options.label_smoothing;
    static constexpr std::array<int64_t, 4> kPlanes = {64, 128, 256, 512};
    int64_t in = 64;
    for (size_t i = 0; i < blocks.size(); ++i) {
      auto list = register_module("layer" + std::to_string(i + 1), nn::ModuleList());
      layers_[i] = AddResidualLayer<Block>(*list, in, kPlanes[i], blocks[i], i > 0 ? 2 : 1);
    }
    fc_ = register_module("fc", nn::Linear(in, options.num_classes));

    InitLikeTorchvision(*this);
    if (options.zero_init_residual) {
      torch::NoGradGuard no_grad;
      for (auto& layer : layers_) {
        for (auto& block : layer) nn::init::zeros_(block->LastNorm()->weight);
      }
    }
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = Stem(conv1_, bn1_, x);
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

// MLPerf's SSD300 with its ResNet-34 backbone (models.h). Forward gives
// {locations [N, 4, B], scores [N, C, B]}; Loss is SsdLoss (detection.h).
class SsdResNet34 : public TrainableModel {
 public:
  explicit SsdResNet34(const ModelOptions& options)
      : num_classes_(options.num_classes),
        conv1_(register_module("conv1", Conv(3, 64, 7, 2, 3))),
        bn1_(register_module("bn1", nn::BatchNorm2d(64))) {
    // torchvision's resnet34 layers 1-3; layer3's first block at stride 1 (conv1 and
    // the downsample's 1x1), so that 300x300 images give 38x38 maps.
    static constexpr std::array<int, 3> kBlocks = {3, 4, 6};
    static constexpr std::array<int64_t, 3> kPlanes = {64, 128, 256};
    static constexpr std::array<int64_t, 3> kStrides = {1, 2, 1};
    int64_t in = 64;
    for (size_t i = 0; i < kBlocks.size(); ++i) {
      auto list = register_module("layer" + std::to_string(i + 1), nn::ModuleList());
      for (auto& block : AddResidualLayer<BasicBlock>(*list, in, kPlanes[i], kBlocks[i],
                                                      kStrides[i])) {
        backbone_.push_back(block);
      }
    }
    InitLikeTorchvision(*this);

    // The extra blocks: {in, middle, out, stride, padding of the 3x3}.
    struct Extra {
      int64_t in, middle, out, stride, padding;
    };
    static constexpr std::array<Extra, 5> kExtras = {{{256, 256, 512, 2, 1},
                                                      {512, 256, 512, 2, 1},
                                                      {512, 128, 256, 2, 1},
                                                      {256, 128, 256, 1, 0},
                                                      {256, 128, 256, 1, 0}}};
    extras_ = register_module("additional_blocks", nn::ModuleList());
    for (const Extra& e : kExtras) {
      extras_->push_back(nn::Sequential(
          nn::Conv2d(nn::Conv2dOptions(e.in, e.middle, 1)), nn::ReLU(nn::ReLUOptions(true)),
          nn::Conv2d(nn::Conv2dOptions(e.middle, e.out, 3).stride(e.stride).padding(e.padding)),
          nn::ReLU(nn::ReLUOptions(true))));
    }
    static constexpr std::array<int64_t, 6> kMapChannels = {256, 512, 512, 256, 256, 256};
    const std::vector<int64_t> per_cell = BoxesPerCell();
    locations_ = register_module("loc", nn::ModuleList());
    scores_ = register_module("conf", nn::ModuleList());
    for (size_t k = 0; k < kMapChannels.size(); ++k) {
      locations_->push_back(
          nn::Conv2d(nn::Conv2dOptions(kMapChannels[k], per_cell[k] * 4, 3).padding(1)));
      scores_->push_back(nn::Conv2d(
          nn::Conv2dOptions(kMapChannels[k], per_cell[k] * num_classes_, 3).padding(1)));
    }
    for (auto* list : {&extras_, &locations_, &scores_}) {
      for (auto& parameter : (*list)->parameters()) {
        if (parameter.dim() > 1) nn::init::xavier_uniform_(parameter);
      }
    }
  }

  std::vector<torch::Tensor> Forward(const torch::Tensor& images) override {
    torch::Tensor x = Stem(conv1_, bn1_, images);
    for (auto& block : backbone_) x = block->forward(x);
    std::vector<torch::Tensor> maps = {x};
    for (const auto& extra : *extras_) {
      x = extra->as<nn::Sequential>()->forward(x);
      maps.push_back(x);
    }
    const int64_t n = images.size(0);
    std::vector<torch::Tensor> locations, scores;
    for (size_t k = 0; k < maps.size(); ++k) {
      locations.push_back(
          locations_[k]->as<nn::Conv2d>()->forward(maps[k]).reshape({n, 4, -1}));
      scores.push_back(
          scores_[k]->as<nn::Conv2d>()->forward(maps[k]).reshape({n, num_classes_, -1}));
    }
    return {torch::cat(locations, 2).contiguous(), torch::cat(scores, 2).contiguous()};
  }

  torch::Tensor Loss(const std::vector<torch::Tensor>& outputs, const torch::Tensor& labels,
                     const torch::Tensor& boxes) override {
    return SsdLoss(outputs.at(0), outputs.at(1), boxes, labels);
  }

 private:
  int64_t num_classes_;
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  std::vector<std::shared_ptr<BasicBlock>> backbone_;
  nn::ModuleList extras_{nullptr};
  nn::ModuleList locations_{nullptr};
  nn::ModuleList scores_{nullptr};
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
      {"ssd_resnet34",
       [](const ModelOptions& options) { return std::make_shared<SsdResNet34>(options); }},
  };
  return *kRegistry;
}

}  // namespace

std::vector<torch::Tensor> ImageClassifier::Forward(const torch::Tensor& images) {
  return {forward(images)};
}

torch::Tensor ImageClassifier::Loss(const std::vector<torch::Tensor>& outputs,
                                    const torch::Tensor& labels, const torch::Tensor& boxes) {
  (void)boxes;
  return torch::nn::functional::cross_entropy(
      outputs.at(0).to(torch::kFloat), labels,
      torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(label_smoothing_));
}

void RegisterModel(const std::string& name, ModelFactory factory) {
  Registry()[name] = std::move(factory);
}

StatusOr<std::shared_ptr<TrainableModel>> MakeModel(const std::string& name,
                                                    int64_t num_classes) {
  ModelOptions options;
  options.num_classes = num_classes;
  return MakeModel(name, options);
}

StatusOr<std::shared_ptr<TrainableModel>> MakeModel(const std::string& name,
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

StatusOr<std::shared_ptr<ImageClassifier>> MakeClassifier(const std::string& name,
                                                          int64_t num_classes) {
  BENCH_TRAIN_ASSIGN_OR_RETURN(std::shared_ptr<TrainableModel> model,
                               MakeModel(name, num_classes));
  auto classifier = std::dynamic_pointer_cast<ImageClassifier>(model);
  if (!classifier) return InvalidArgumentError("model '" + name + "' is not a classifier");
  return classifier;
}

int64_t CountParameters(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const auto& parameter : module.parameters(/*recurse=*/true)) count += parameter.numel();
  return count;
}

}  // namespace bench_train
