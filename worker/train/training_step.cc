#include "worker/train/training_step.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

// libtorch 2.4 made the autocast API device-generic and deprecated the
// per-device names that 1.13 has.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define BENCH_TRAIN_DEVICE_GENERIC_AUTOCAST 1
#endif

namespace bench_train {
namespace {

// Enables autocast for one device type for the scope's lifetime, like Python's
// torch.autocast: restores the previous state and clears the cast cache on
// exit.
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType type, at::ScalarType dtype) : type_(type) {
    previous_enabled_ = IsEnabled();
    previous_dtype_ = Dtype();
    Set(true, dtype);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    Set(previous_enabled_, previous_dtype_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
#ifdef BENCH_TRAIN_DEVICE_GENERIC_AUTOCAST
  bool IsEnabled() const { return at::autocast::is_autocast_enabled(type_); }
  at::ScalarType Dtype() const { return at::autocast::get_autocast_dtype(type_); }
  void Set(bool enabled, at::ScalarType dtype) {
    at::autocast::set_autocast_dtype(type_, dtype);
    at::autocast::set_autocast_enabled(type_, enabled);
  }
#else
  bool IsEnabled() const {
    return type_ == c10::kCPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
  }
  at::ScalarType Dtype() const {
    return type_ == c10::kCPU ? at::autocast::get_autocast_cpu_dtype()
                              : at::autocast::get_autocast_gpu_dtype();
  }
  void Set(bool enabled, at::ScalarType dtype) {
    if (type_ == c10::kCPU) {
      at::autocast::set_autocast_cpu_dtype(dtype);
      at::autocast::set_cpu_enabled(enabled);
    } else {
      at::autocast::set_autocast_gpu_dtype(dtype);
      at::autocast::set_enabled(enabled);
    }
  }
#endif

  c10::DeviceType type_;
  bool previous_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kFloat;
};

}  // namespace

TrainingStep::TrainingStep(std::shared_ptr<TrainableModel> model, const StepOptions& options,
                           Communicator* communicator)
    : model_(std::move(model)), options_(options) {
  SgdOptions sgd = options.sgd;
  sgd.channels_last = options.channels_last;
  optimizer_ = std::make_unique<FlatSgd>(*model_, sgd);
  schedule_ = std::make_unique<LrSchedule>(options.lr, options.lr_warmup, options.total_steps,
                                           options.device);
  if (options.loss_scaling) scaler_ = std::make_unique<LossScaler>(options.device, options.scaler);
  if (communicator != nullptr && communicator->world_size() > 1) {
    reducer_ =
        std::make_unique<GradientReducer>(optimizer_->Buckets(options.bucket_bytes), *communicator);
    if (options.broadcast_buffers) {
      buffers_ = model_->buffers();
      if (!buffers_.empty()) buffer_communicator_ = communicator;
    }
  }
  // One CPU process needs no flat gradients: let autograd hand its own over.
  if (options.device.is_cpu() && !reducer_ && !scaler_) optimizer_->UseGradsAsViews(false);
  const auto fp32 = at::TensorOptions(at::kFloat).device(options.device);
  mean_ = at::tensor({0.485 * 255, 0.456 * 255, 0.406 * 255}, fp32).view({1, 3, 1, 1});
  inv_std_ = at::tensor({1 / (0.229 * 255), 1 / (0.224 * 255), 1 / (0.225 * 255)}, fp32)
                 .view({1, 3, 1, 1});
}

TrainingStep::~TrainingStep() = default;

at::Tensor TrainingStep::Run(const at::Tensor& raw_images, const at::Tensor& labels,
                             const at::Tensor& boxes) {
  optimizer_->ZeroGrad();
  if (buffer_communicator_ != nullptr) {
    MarkPhase(StepPhase::kForwardBackward);  // zeroing the gradients
    BroadcastTensors(buffers_, *buffer_communicator_, 0);
    MarkPhase(StepPhase::kRankWait);
  }
  if (reducer_) reducer_->Prepare();
  at::Tensor images = raw_images;
  if (images.scalar_type() == at::kByte) {  // NHWC RGB -> normalised float NCHW
    images = images.permute({0, 3, 1, 2}).to(at::kFloat).sub_(mean_).mul_(inv_std_);
  }
  images = images.contiguous(options_.channels_last ? at::MemoryFormat::ChannelsLast
                                                    : at::MemoryFormat::Contiguous);
  std::vector<at::Tensor> outputs;
  if (options_.autocast) {
    AutocastScope autocast(options_.device.type(), options_.autocast_dtype);
    outputs = model_->Forward(images);
  } else {
    outputs = model_->Forward(images);
  }
  at::Tensor loss = model_->Loss(outputs, labels, boxes);
  if (scaler_) {
    scaler_->Scale(loss).backward();
  } else {
    loss.backward();
  }
  MarkPhase(StepPhase::kForwardBackward);
  if (reducer_) {
    reducer_->Finish();
    MarkPhase(StepPhase::kRankWait);
  }
  last_lr_ = schedule_->Next();
  if (scaler_) {
    scaler_->UnscaleAndCheck(optimizer_->flat_grads());
    optimizer_->Step(last_lr_, scaler_->found_inf());
    scaler_->Update();
  } else {
    optimizer_->Step(last_lr_, at::Tensor());
  }
  return loss.detach();
}

}  // namespace bench_train
