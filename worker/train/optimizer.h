// SGD with momentum over flat parameter buffers, and the learning-rate schedule
// of NVIDIA's ResNet-50 v1.5 recipe, both without host synchronization.
//
// FlatSgd moves every parameter of a module into one flat fp32 buffer per group
// (group 0: weights with weight decay; group 1: BatchNorm weights and all biases,
// without weight decay unless bn_weight_decay), makes each parameter and its
// .grad() views of those buffers (4-D weights with channels_last strides when
// asked), so that zeroing, unscaling, all-reducing and updating are a few
// kernels over large buffers (as apex's flat optimizers and DDP's
// gradient_as_bucket_view do). Grads stay defined between steps (ZeroGrad zeroes
// them in place), so autograd accumulates into the views.
//
// Update (PyTorch's SGD, dampening 0, no Nesterov): d = g + wd*p; buf = m*buf + d;
// p -= lr*buf. With `skip` (a 0-dim device tensor, 1 = overflow) the step leaves
// parameters and momentum unchanged: non-finite gradients are zeroed and the
// update is multiplied by (1 - skip), on the device.
//
// Neither class is thread-safe. Tensors returned stay owned by the object.
#ifndef BENCHFLEET_WORKER_TRAIN_OPTIMIZER_H_
#define BENCHFLEET_WORKER_TRAIN_OPTIMIZER_H_

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "worker/train/distributed.h"

namespace torch {
namespace nn {
class Module;
}  // namespace nn
}  // namespace torch

namespace bench_train {

struct SgdOptions {
  double momentum = 0.875;
  double weight_decay = 3.0517578125e-05;
  bool bn_weight_decay = false;  // false: BatchNorm weights and biases get none
  bool channels_last = false;    // 4-D parameters laid out NHWC
};

class FlatSgd {
 public:
  struct Slot {
    std::string name;
    at::Tensor parameter;  // the module's parameter (now a view of `params`)
    int64_t offset = 0;
    int64_t numel = 0;
  };
  struct Group {
    at::Tensor params;    // flat fp32
    at::Tensor grads;     // flat fp32
    at::Tensor momentum;  // flat fp32
    double weight_decay = 0;
    std::vector<Slot> slots;  // in reverse registration order (the order grads get ready)
  };

  FlatSgd(torch::nn::Module& module, const SgdOptions& options);

  void ZeroGrad();
  // true (the default): .grad() are views of the flat grads (needed by the loss
  // scaler and the bucketed all-reduce). false: ZeroGrad drops them and autograd
  // hands over its own gradient tensors (no zeroing, no accumulation pass); only
  // StepFusedCpu (the CPU) reads them so. Zeroes the grads either way.
  void UseGradsAsViews(bool views);
  // `lr`: 0-dim fp32 device tensor. `skip`: undefined, or 0-dim fp32 device tensor.
  // On CUDA: StepWithTensorOps. On the CPU, where reading `lr` and `skip` costs
  // nothing, StepFusedCpu (one pass over the buffers instead of four; same result).
  void Step(const at::Tensor& lr, const at::Tensor& skip);
  // The device path: masked, sync-free, capturable in a CUDA graph.
  void StepWithTensorOps(const at::Tensor& lr, const at::Tensor& skip);
  void StepFusedCpu(const at::Tensor& lr, const at::Tensor& skip);

  const std::vector<Group>& groups() const { return groups_; }
  std::vector<at::Tensor> flat_grads() const;
  // Contiguous slices of the flat grads, at most `bucket_bytes` each (one
  // parameter larger than that gets its own), in the order grads get ready.
  std::vector<GradientBucket> Buckets(int64_t bucket_bytes) const;

 private:
  SgdOptions options_;
  std::vector<Group> groups_;
  bool grads_as_views_ = true;
};

// Linear warm-up from peak/warmup to peak over `warmup` steps, then cosine
// decay to 0 at step `total`. Computed on the device from a device step
// counter, so a captured CUDA graph replays it correctly.
class LrSchedule {
 public:
  LrSchedule(double peak, int64_t warmup, int64_t total, const c10::Device& device);
  // The rate for the current step (0-dim fp32 device tensor); advances the counter.
  at::Tensor Next();
  // The same formula on the host, for reports and tests (step is 0-based).
  static double At(double peak, int64_t warmup, int64_t total, int64_t step);

 private:
  double peak_;
  int64_t warmup_;
  int64_t total_;
  at::Tensor step_;
};

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_OPTIMIZER_H_
