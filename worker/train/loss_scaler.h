// Dynamic loss scaling for fp16 training, entirely on the device.
//
// Semantics of torch.cuda.amp.GradScaler (initial scale 2^16, x0.5 and skip the
// step when a gradient is inf/NaN, x2 after `growth_interval` clean steps in a
// row), but nothing is read on the host: found_inf, the scale, the growth
// tracker and the count of skipped steps are device tensors, and the optimizer
// masks its update with found_inf (FlatSgd::Step). Built from plain tensor ops,
// so the very same code runs on the CPU (unit tests) and on CUDA, inside a CUDA
// graph too. Not thread-safe; one per training step.
#ifndef BENCHFLEET_WORKER_TRAIN_LOSS_SCALER_H_
#define BENCHFLEET_WORKER_TRAIN_LOSS_SCALER_H_

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace bench_train {

struct LossScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  LossScaler(const c10::Device& device, const LossScalerOptions& options = {});

  // loss x scale (a new tensor; `loss` is not modified).
  at::Tensor Scale(const at::Tensor& loss) const;

  // Divides the (fp32) gradients in place by the scale and sets found_inf to 1
  // if any of them holds an inf or NaN, else 0. A sum that overflows fp32 after
  // unscaling also counts as inf (a skipped step, never a wrong one).
  void UnscaleAndCheck(const std::vector<at::Tensor>& grads);

  // After the optimizer step: backs off or grows the scale, and adds found_inf
  // to the skipped-step count.
  void Update();

  // 0-dim fp32 device tensors; valid until the scaler is destroyed. Reading them
  // on the host synchronizes with the device: do it late.
  const at::Tensor& scale() const { return scale_; }
  const at::Tensor& found_inf() const { return found_inf_; }
  const at::Tensor& skipped_steps() const { return skipped_; }

 private:
  LossScalerOptions options_;
  at::Tensor scale_;
  at::Tensor growth_tracker_;  // clean steps in a row (fp32, exact below 2^24)
  at::Tensor found_inf_;
  at::Tensor skipped_;
};

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_LOSS_SCALER_H_
