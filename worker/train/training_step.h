// One data-parallel training step of any TrainableModel (models.h), with everything on
// the device: flat SGD (optimizer.h), the device LR schedule, fp16 loss scaling
// (loss_scaler.h) and the overlapped gradient all-reduce (distributed.h).
//
//   Run(images, labels, boxes): zero grads; rank 0's buffers broadcast (more than one
//   rank); the model's Forward under autocast (if any); the model's Loss in fp32 on
//   the batch's targets (a classifier's label-smoothed cross-entropy, SSD's loss);
//   backward (scaled for fp16; buckets all-reduced as their gradients become ready);
//   unscale + inf check; masked SGD update; scale update. Nothing is read on the host,
//   so Run can be captured in a CUDA graph (with no communicator).
//
// The step split (docs/trainer-events.md): Run tells its StepPhaseMarker (if set) where
// each phase ends, in order: the buffer broadcast (waiting for rank 0: kRankWait), then
// forward and backward (kForwardBackward), then the wait for the gradient all-reduce that
// did not overlap with backward (kRankWait). With one rank it marks only the end of
// backward. What follows the last mark, up to the step's end, is the optimizer.
//
// `images` are float NCHW, or uint8 NHWC RGB (then converted and normalised with
// ImageNet's mean/std on the device, in the step). Not thread-safe.
#ifndef BENCHFLEET_WORKER_TRAIN_TRAINING_STEP_H_
#define BENCHFLEET_WORKER_TRAIN_TRAINING_STEP_H_

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "worker/train/distributed.h"
#include "worker/train/loss_scaler.h"
#include "worker/train/models.h"
#include "worker/train/optimizer.h"

namespace bench_train {

// What the interval since the previous mark of a step (or since its compute began) was.
enum class StepPhase {
  kForwardBackward,  // input conversion, zeroing gradients, forward, loss, backward
  kRankWait,         // blocked on a collective that waits for the other ranks
};

// Told by TrainingStep::Run where its phases end (the StepClock, training_loop.h).
class StepPhaseMarker {
 public:
  virtual ~StepPhaseMarker() = default;
  // The time since the step's previous mark (or since its compute began) was `phase`.
  virtual void Mark(StepPhase phase) = 0;
};

struct StepOptions {
  c10::Device device = c10::Device(c10::kCPU);
  bool autocast = false;
  c10::ScalarType autocast_dtype = c10::kFloat;
  bool loss_scaling = false;
  LossScalerOptions scaler;
  bool channels_last = false;
  double lr = 0.1;
  int64_t lr_warmup = 0;
  int64_t total_steps = 1;
  SgdOptions sgd;
  int64_t bucket_bytes = kDefaultBucketBytes;
  // With a communicator of more than one rank: rank 0's buffers (BatchNorm
  // running statistics) overwrite every rank's before each forward (DDP's
  // broadcast_buffers).
  bool broadcast_buffers = true;
};

class TrainingStep {
 public:
  // `model` must already be on options.device; its parameters become views of
  // the optimizer's flat buffers. `communicator` (not owned; null for one rank)
  // must outlive the step.
  TrainingStep(std::shared_ptr<TrainableModel> model, const StepOptions& options,
               Communicator* communicator);
  ~TrainingStep();

  // Enqueues one step on a batch and its targets (DeviceBatch, data_source.h; `boxes`
  // only for detection); returns the unscaled fp32 loss (0-dim, on the device).
  at::Tensor Run(const at::Tensor& images, const at::Tensor& labels,
                 const at::Tensor& boxes = at::Tensor());

  LossScaler* scaler() { return scaler_.get(); }  // null without loss scaling
  FlatSgd& optimizer() { return *optimizer_; }
  GradientReducer* reducer() { return reducer_.get(); }
  // Where Run marks the ends of its phases; null (the default): nowhere. Not owned;
  // must outlive the step or be reset.
  void set_phase_marker(StepPhaseMarker* marker) { phase_marker_ = marker; }
  // The learning rate used by the last Run (device tensor).
  const at::Tensor& last_lr() const { return last_lr_; }

 private:
  std::shared_ptr<TrainableModel> model_;
  StepOptions options_;
  std::unique_ptr<FlatSgd> optimizer_;
  std::unique_ptr<LrSchedule> schedule_;
  std::unique_ptr<LossScaler> scaler_;
  std::unique_ptr<GradientReducer> reducer_;
  void MarkPhase(StepPhase phase) {
    if (phase_marker_ != nullptr) phase_marker_->Mark(phase);
  }

  StepPhaseMarker* phase_marker_ = nullptr;
  Communicator* buffer_communicator_ = nullptr;  // set when buffers are broadcast
  std::vector<at::Tensor> buffers_;
  at::Tensor mean_;     // [1,3,1,1] x 255
  at::Tensor inv_std_;  // [1,3,1,1] / 255
  at::Tensor last_lr_;
};

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_TRAINING_STEP_H_
