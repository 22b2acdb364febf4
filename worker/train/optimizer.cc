#include "worker/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/nn/module.h>

namespace bench_train {
namespace {

bool IsNoDecay(const std::string& name, const at::Tensor& parameter) {
  // Biases, and BatchNorm's weights (the only 1-D weights in these models).
  const bool is_bias = name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0;
  return is_bias || parameter.dim() <= 1;
}

at::Tensor ViewOf(const at::Tensor& flat, int64_t offset, const at::Tensor& like,
                  bool channels_last) {
  at::Tensor slice = flat.narrow(0, offset, like.numel());
  if (channels_last && like.dim() == 4) {
    const auto sizes = like.sizes();  // O, I, H, W stored as O, H, W, I
    return slice.as_strided(sizes, {sizes[1] * sizes[2] * sizes[3], 1, sizes[3] * sizes[1],
                                    sizes[1]});
  }
  return slice.view(like.sizes());
}

}  // namespace

FlatSgd::FlatSgd(torch::nn::Module& module, const SgdOptions& options) : options_(options) {
  at::NoGradGuard no_grad;
  std::vector<std::pair<std::string, at::Tensor>> named;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    named.emplace_back(item.key(), item.value());
  }
  std::reverse(named.begin(), named.end());  // autograd finishes the last layers first

  groups_.resize(2);
  groups_[0].weight_decay = options.weight_decay;
  groups_[1].weight_decay = options.bn_weight_decay ? options.weight_decay : 0.0;
  std::vector<int64_t> sizes(2, 0);
  for (const auto& [name, parameter] : named) {
    const size_t g = IsNoDecay(name, parameter) ? 1 : 0;
    groups_[g].slots.push_back(Slot{name, parameter, sizes[g], parameter.numel()});
    // 64-byte aligned starts (what oneDNN and vector loads prefer); the gaps are
    // zeros in every buffer and stay zero.
    sizes[g] += (parameter.numel() + 15) / 16 * 16;
  }
  const at::Device device = named.empty() ? at::Device(at::kCPU) : named[0].second.device();
  const auto fp32 = at::TensorOptions(at::kFloat).device(device);
  for (size_t g = 0; g < groups_.size(); ++g) {
    Group& group = groups_[g];
    group.params = at::zeros({sizes[g]}, fp32);
    group.grads = at::zeros({sizes[g]}, fp32);
    group.momentum = at::zeros({sizes[g]}, fp32);
    for (auto& slot : group.slots) {
      at::Tensor data = ViewOf(group.params, slot.offset, slot.parameter, options.channels_last);
      data.copy_(slot.parameter);
      slot.parameter.set_data(data);
      slot.parameter.mutable_grad() =
          ViewOf(group.grads, slot.offset, slot.parameter, options.channels_last);
    }
  }
}

void FlatSgd::ZeroGrad() {
  if (grads_as_views_) {
    for (auto& group : groups_) group.grads.zero_();
    return;
  }
  for (auto& group : groups_) {
    for (auto& slot : group.slots) slot.parameter.mutable_grad().reset();
  }
}

void FlatSgd::UseGradsAsViews(bool views) {
  grads_as_views_ = views;
  for (auto& group : groups_) {
    group.grads.zero_();
    for (auto& slot : group.slots) {
      if (views) {
        slot.parameter.mutable_grad() =
            ViewOf(group.grads, slot.offset, slot.parameter, options_.channels_last);
      } else {
        slot.parameter.mutable_grad().reset();
      }
    }
  }
}

void FlatSgd::Step(const at::Tensor& lr, const at::Tensor& skip) {
  if (!groups_.empty() && groups_[0].params.is_cpu()) {
    StepFusedCpu(lr, skip);
  } else {
    StepWithTensorOps(lr, skip);
  }
}

void FlatSgd::StepFusedCpu(const at::Tensor& lr_tensor, const at::Tensor& skip) {
  // On the CPU the 0-dim tensors are host memory: reading them costs nothing.
  const bool skipped = skip.defined() && skip.item<float>() != 0.0f;
  if (skipped) return;
  const float lr = lr_tensor.item<float>();
  const float momentum = static_cast<float>(options_.momentum);
  // One pass instead of four: d = g + wd*p; b = m*b + d; p -= lr*b.
  auto update = [momentum, lr](float* p, const float* g, float* b, float wd, int64_t n) {
    at::parallel_for(0, n, 1 << 15, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float d = g[i] + wd * p[i];
        const float v = momentum * b[i] + d;
        b[i] = v;
        p[i] -= lr * v;
      }
    });
  };
  for (auto& group : groups_) {
    const int64_t n = group.params.numel();
    if (n == 0) continue;
    float* p = group.params.data_ptr<float>();
    float* b = group.momentum.data_ptr<float>();
    const float wd = static_cast<float>(group.weight_decay);
    if (grads_as_views_) {
      update(p, group.grads.data_ptr<float>(), b, wd, n);
      continue;
    }
    // Autograd's own gradients: laid out like their parameters (its layout
    // contract), so element i of one's memory is element i of the other's.
    for (const auto& slot : group.slots) {
      at::Tensor grad = slot.parameter.grad();
      if (!grad.defined()) grad = group.grads.narrow(0, slot.offset, slot.numel);  // zeros
      TORCH_CHECK(grad.strides() == slot.parameter.strides() || grad.dim() == 1,
                  "gradient layout differs from its parameter's");
      update(p + slot.offset, grad.data_ptr<float>(), b + slot.offset, wd, slot.numel);
    }
  }
}

void FlatSgd::StepWithTensorOps(const at::Tensor& lr, const at::Tensor& skip) {
  at::NoGradGuard no_grad;
  const bool masked = skip.defined();
  const at::Tensor keep = masked ? 1.0 - skip : at::Tensor();
  const at::Tensor neg_lr = masked ? lr * keep * -1.0 : lr * -1.0;
  // On a skipped step buf *= 1 (not m) and d = 0.
  const at::Tensor momentum_factor =
      masked ? 1.0 + keep * (options_.momentum - 1.0) : at::Tensor();
  for (auto& group : groups_) {
    if (group.params.numel() == 0) continue;
    at::Tensor& d = group.grads;
    if (masked) d.nan_to_num_(0.0, 0.0, 0.0);
    if (group.weight_decay != 0) d.add_(group.params, group.weight_decay);
    if (masked) {
      d.mul_(keep);
      group.momentum.mul_(momentum_factor).add_(d);
    } else {
      group.momentum.mul_(options_.momentum).add_(d);
    }
    group.params.addcmul_(group.momentum, neg_lr);
  }
}

std::vector<at::Tensor> FlatSgd::flat_grads() const {
  std::vector<at::Tensor> grads;
  for (const auto& group : groups_) {
    if (group.grads.numel() > 0) grads.push_back(group.grads);
  }
  return grads;
}

std::vector<GradientBucket> FlatSgd::Buckets(int64_t bucket_bytes) const {
  std::vector<GradientBucket> buckets;
  for (const auto& group : groups_) {
    int64_t start = 0;
    int64_t end = 0;
    std::vector<at::Tensor> parameters;
    auto close = [&] {
      if (parameters.empty()) return;
      buckets.push_back(GradientBucket{group.grads.narrow(0, start, end - start), parameters});
      parameters.clear();
      start = end;
    };
    for (const auto& slot : group.slots) {
      if (!parameters.empty() && (end - start + slot.numel) * 4 > bucket_bytes) close();
      parameters.push_back(slot.parameter);
      end = slot.offset + slot.numel;
    }
    close();
  }
  return buckets;
}

LrSchedule::LrSchedule(double peak, int64_t warmup, int64_t total, const c10::Device& device)
    : peak_(peak),
      warmup_(warmup),
      total_(total),
      step_(at::zeros({}, at::TensorOptions(at::kFloat).device(device))) {}

at::Tensor LrSchedule::Next() {
  const double warmup = static_cast<double>(std::max<int64_t>(warmup_, 1));
  const double decay = static_cast<double>(std::max<int64_t>(total_ - warmup_, 1));
  const at::Tensor warm = (step_ + 1.0) * (peak_ / warmup);
  const at::Tensor progress = ((step_ - static_cast<double>(warmup_)) / decay).clamp(0.0, 1.0);
  const at::Tensor cosine = (at::cos(progress * M_PI) + 1.0) * (0.5 * peak_);
  at::Tensor lr = at::where(at::lt(step_, static_cast<double>(warmup_)), warm, cosine);
  step_.add_(1.0);
  return lr;
}

double LrSchedule::At(double peak, int64_t warmup, int64_t total, int64_t step) {
  if (step < warmup) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const double decay = static_cast<double>(std::max<int64_t>(total - warmup, 1));
  const double progress = std::min(1.0, static_cast<double>(step - warmup) / decay);
  return 0.5 * peak * (1.0 + std::cos(progress * M_PI));
}

}  // namespace bench_train
