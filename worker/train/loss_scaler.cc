#include "worker/train/loss_scaler.h"

#include <ATen/ATen.h>

namespace bench_train {

LossScaler::LossScaler(const c10::Device& device, const LossScalerOptions& options)
    : options_(options) {
  const auto fp32 = at::TensorOptions(at::kFloat).device(device);
  scale_ = at::full({}, options.init_scale, fp32);
  growth_tracker_ = at::zeros({}, fp32);
  found_inf_ = at::zeros({}, fp32);
  skipped_ = at::zeros({}, fp32);
}

at::Tensor LossScaler::Scale(const at::Tensor& loss) const { return loss * scale_; }

void LossScaler::UnscaleAndCheck(const std::vector<at::Tensor>& grads) {
  const at::Tensor inv_scale = scale_.reciprocal();
  at::Tensor total = at::zeros({}, scale_.options());
  for (const auto& grad : grads) {
    grad.mul_(inv_scale);
    total.add_(grad.sum());
  }
  found_inf_.copy_(at::logical_not(at::isfinite(total)));
}

void LossScaler::Update() {
  const at::Tensor clean = 1.0 - found_inf_;
  growth_tracker_.add_(1.0).mul_(clean);  // 0 after an overflow
  const at::Tensor grow = at::ge(growth_tracker_, static_cast<double>(options_.growth_interval))
                              .to(at::kFloat);
  // factor = backoff on overflow, growth after growth_interval clean steps, else 1.
  const at::Tensor factor = 1.0 + found_inf_ * (options_.backoff_factor - 1.0) +
                            grow * (options_.growth_factor - 1.0);
  scale_.mul_(factor);
  growth_tracker_.mul_(1.0 - grow);
  skipped_.add_(found_inf_);
}

}  // namespace bench_train
