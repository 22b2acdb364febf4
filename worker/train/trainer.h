// One bench-train rank, from options to summary.
//
// Torch-free header. RunTrainer validates `options`, decides the run plan
// (run_plan.h: device, precision in effect, memory format, CUDA graphs), opens
// the data (data_source.h), builds the model on the device, joins the process
// group when options.rendezvous.world_size > 1 (Gloo on the CPU, NCCL on CUDA),
// broadcasts rank 0's weights, and trains with NVIDIA's ResNet-50 v1.5 recipe
// (training_step.h) in the one timing loop (training_loop.h), writing `start`,
// one `iter` per iteration and `summary` to `events` (docs/trainer-events.md),
// then leaves the process group. Human-readable logs go to stderr.
//
// Precision: "fp32" (TF32 off), "tf32" (CUDA, compute capability >= 8), "amp" =
// fp16 autocast with on-device dynamic loss scaling on CUDA ("amp_fp16") and bf16
// autocast on the CPU ("amp_bf16"), "bf16" = bf16 autocast ("amp_bf16"). A
// precision the device cannot do is kInvalidArgument.
//
// On CUDA: cuDNN benchmark mode; channels_last unless turned off; with
// cuda_graphs (auto: one rank and batch <= 128) the whole step is captured after
// three eager steps and replayed; a capture that fails falls back to eager steps
// and the start event says why.
//
// Returns OK after the summary. On failure it returns a non-OK Status and writes
// no `error` event itself (the caller does; exactly one per process): libtorch
// and standard exceptions are caught here and become kInternal, as does a loss
// that stays non-finite ("loss diverged: ..."); bad options are
// kInvalidArgument; a missing peer or device is kUnavailable; a feature this
// build lacks (CUDA, NCCL) is kUnimplemented. Blocks the calling thread for the
// whole run; one call per process at a time (libtorch's global state).
#ifndef BENCHFLEET_WORKER_TRAIN_TRAINER_H_
#define BENCHFLEET_WORKER_TRAIN_TRAINER_H_

#include "worker/train/event_writer.h"
#include "worker/train/options.h"
#include "worker/train/status.h"

namespace bench_train {

// Test-only switches, all off in a real run; main.cc sets them from BENCH_TRAIN_TEST_*
// environment variables (docs/trainer-events.md).
struct TrainerTestOptions {
  // BENCH_TRAIN_TEST_CAPTURE_FAILURE=1: every step ends by reading its loss on the host, a
  // synchronising copy that a CUDA graph capture does not allow, so a planned capture fails
  // for real and the run goes on with eager steps (the start event says why). On the CPU,
  // or without CUDA graphs, the steps only read their loss.
  bool capture_failure = false;
};

Status RunTrainer(const TrainOptions& options, EventWriter& events,
                  const TrainerTestOptions& test = {});

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_TRAINER_H_
