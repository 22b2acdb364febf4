// Model registry: the models of common/names.h (kModels) by name.
//
// ResNets are torchvision's exact architectures and parameter names (conv1, bn1,
// layer1.0.conv1, ..., fc), so that parameter counts and state-dict keys match
// torchvision:
//
//   resnet18   11,689,512      resnet50   25,557,032 (v1.5: stride on the 3x3 conv)
//   resnet34   21,797,672      resnet101  44,549,160
//                              resnet152  60,192,808       (at 1000 classes)
//
// ssd_resnet34 is MLPerf's SSD300 reference (v0.7-v1.0, ssd300.py and base_model.py):
// torchvision's ResNet-34 up to layer3 with layer3's first block at stride 1 (38x38 x256
// at 300x300), five extra blocks (1x1 conv + ReLU, 3x3 conv + ReLU; convolutions with
// biases, no BatchNorm, as the reference) giving 19/10/5/3/1, and 3x3 location and class
// heads on the six maps (4, 6, 6, 6, 4, 4 default boxes per cell, detection.h):
// 19,972,534 parameters at 81 classes.
//
// Init as torchvision: Kaiming normal (fan_out, relu) for the ResNet convolutions,
// BatchNorm weight 1 and bias 0, Linear with libtorch's default (= PyTorch's); with
// zero_init_residual the last BatchNorm weight of each residual block is 0
// (torchvision's zero_init_residual, NVIDIA's recipe). SSD's extra blocks and heads:
// Xavier uniform weights, PyTorch's default biases (the reference's _init_weights).
// Draws from the global torch generator: seed it (torch::manual_seed) first for
// repeatable weights. Modules are not thread-safe; use one per thread.
#ifndef BENCHFLEET_WORKER_TRAIN_MODELS_H_
#define BENCHFLEET_WORKER_TRAIN_MODELS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "worker/train/status.h"

namespace bench_train {

// What the training step trains (training_step.h): Forward runs under autocast when
// asked; Loss then makes the fp32 loss from Forward's outputs and the batch's targets,
// as the model's DataSource makes them (data_source.h, DeviceBatch): `labels` [N] int64
// class indexes for a classifier; for a detector `labels` [N, B] int64 (0: background)
// and `boxes` [N, 4, B] fp32 encoded offsets (detection.h). Nothing is read on the host.
class TrainableModel : public torch::nn::Module {
 public:
  virtual std::vector<torch::Tensor> Forward(const torch::Tensor& images) = 0;
  virtual torch::Tensor Loss(const std::vector<torch::Tensor>& outputs,
                             const torch::Tensor& labels, const torch::Tensor& boxes) = 0;
};

// Maps NCHW images to [N, num_classes] logits; its loss is label-smoothed cross-entropy.
class ImageClassifier : public TrainableModel {
 public:
  virtual torch::Tensor forward(torch::Tensor images) = 0;
  std::vector<torch::Tensor> Forward(const torch::Tensor& images) override;
  torch::Tensor Loss(const std::vector<torch::Tensor>& outputs, const torch::Tensor& labels,
                     const torch::Tensor& boxes) override;

 protected:
  double label_smoothing_ = 0;
};

struct ModelOptions {
  int64_t num_classes = 1000;       // SSD: including the background class 0
  bool zero_init_residual = false;  // ResNets only
  double label_smoothing = 0.1;     // classifiers' cross-entropy (NVIDIA's recipe)
};

using ModelFactory = std::function<std::shared_ptr<TrainableModel>(const ModelOptions&)>;

// Adds (or replaces) a model. The training loop only sees TrainableModel, so a
// new model plugs in here; its name, input size and data kind go in common/names.h.
// Not thread-safe: register before training starts.
void RegisterModel(const std::string& name, ModelFactory factory);

// Builds the model called `name` (see KnownModelNames() in options.h), or
// returns InvalidArgument for an unknown name.
StatusOr<std::shared_ptr<TrainableModel>> MakeModel(const std::string& name,
                                                    const ModelOptions& options);
StatusOr<std::shared_ptr<TrainableModel>> MakeModel(const std::string& name,
                                                    int64_t num_classes);
// MakeModel for a model that is an ImageClassifier (InvalidArgument otherwise).
StatusOr<std::shared_ptr<ImageClassifier>> MakeClassifier(const std::string& name,
                                                          int64_t num_classes);

// Number of elements over all parameters (buffers excluded), as torchvision counts.
int64_t CountParameters(const torch::nn::Module& module);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_MODELS_H_
