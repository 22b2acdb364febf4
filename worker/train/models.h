// Model registry: image classifiers by name, with torchvision's exact
// architectures and parameter names (conv1, bn1, layer1.0.conv1, ..., fc), so that
// parameter counts and state-dict keys match torchvision.
//
//   resnet18   11,689,512      resnet50   25,557,032 (v1.5: stride on the 3x3 conv)
//   resnet34   21,797,672      resnet101  44,549,160
//                              resnet152  60,192,808       (at 1000 classes)
//
// Init as torchvision: Kaiming normal (fan_out, relu) for convolutions, BatchNorm
// weight 1 and bias 0, Linear with libtorch's default (= PyTorch's); with
// zero_init_residual the last BatchNorm weight of each residual block is 0
// (torchvision's zero_init_residual, NVIDIA's recipe). Draws from
// the global torch generator: seed it (torch::manual_seed) first for repeatable
// weights. Modules are not thread-safe; use one per thread.
#ifndef BENCHFLEET_WORKER_TRAIN_MODELS_H_
#define BENCHFLEET_WORKER_TRAIN_MODELS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <torch/nn/module.h>

#include "worker/train/status.h"

namespace bench_train {

// Maps NCHW images to [N, num_classes] logits.
class ImageClassifier : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor images) = 0;
};

struct ModelOptions {
  int64_t num_classes = 1000;
  bool zero_init_residual = false;
};

using ModelFactory = std::function<std::shared_ptr<ImageClassifier>(const ModelOptions&)>;

// Adds (or replaces) a model. The training loop only sees ImageClassifier, so a
// new model plugs in here; --model validation also lists names in options.cc.
// Not thread-safe: register before training starts.
void RegisterModel(const std::string& name, ModelFactory factory);

// Builds the model called `name` (see KnownModelNames() in options.h), or
// returns InvalidArgument for an unknown name.
StatusOr<std::shared_ptr<ImageClassifier>> MakeModel(const std::string& name,
                                                     const ModelOptions& options);
StatusOr<std::shared_ptr<ImageClassifier>> MakeModel(const std::string& name,
                                                     int64_t num_classes);

// Number of elements over all parameters (buffers excluded), as torchvision counts.
int64_t CountParameters(const torch::nn::Module& module);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_MODELS_H_
