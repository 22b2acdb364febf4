// The training loop of one bench-train rank.
//
// Torch-free header. RunTrainer validates `options`, builds the model on the
// device, joins the process group when options.rendezvous.world_size > 1 (Gloo on
// the CPU, NCCL on CUDA), broadcasts rank 0's weights, and trains on synthetic
// data made once on the device (SGD, momentum 0.9, cross-entropy), writing
// `start`, one `iter` per iteration and `summary` to `events`
// (docs/trainer-events.md). Human-readable logs go to stderr.
//
// Precision: "fp32", or "amp" = autocast to bf16 on the CPU ("amp_bf16") and to
// fp16 with dynamic loss scaling on CUDA ("amp_fp16").
//
// Returns OK after the summary. On failure it returns a non-OK Status and writes
// no `error` event itself (the caller does; exactly one per process): libtorch
// and standard exceptions are caught here and become kInternal; bad options are
// kInvalidArgument; a missing peer or device is kUnavailable; a feature this
// build lacks (CUDA, NCCL) is kUnimplemented. Blocks the calling thread for the
// whole run; one call per process at a time (libtorch's global state).
#ifndef BENCHFLEET_WORKER_TRAIN_TRAINER_H_
#define BENCHFLEET_WORKER_TRAIN_TRAINER_H_

#include "worker/train/event_writer.h"
#include "worker/train/options.h"
#include "worker/train/status.h"

namespace bench_train {

Status RunTrainer(const TrainOptions& options, EventWriter& events);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_TRAINER_H_
