// What a bench-train run will do, decided from its options and the device
// before anything is built: the device, the precision in effect, the memory
// format, whether the step is captured in a CUDA graph, the host heap policy.
//
// MakeRunPlan fails with kInvalidArgument where the options ask for something
// the device cannot do (tf32 on the CPU, bf16 below compute capability 8.0,
// CUDA graphs with more than one rank), kUnimplemented for a CUDA device in a
// CPU build, kUnavailable for a CUDA device that is not there.
#ifndef BENCHFLEET_WORKER_TRAIN_RUN_PLAN_H_
#define BENCHFLEET_WORKER_TRAIN_RUN_PLAN_H_

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <string>

#include "worker/train/options.h"
#include "worker/train/status.h"

namespace bench_train {

// With CUDA graphs: eager steps before the capture (cuDNN picks its algorithms,
// autograd and the allocator settle), all inside the benchmark's warm-up.
inline constexpr int64_t kGraphWarmupSteps = 3;

struct PrecisionPlan {
  std::string name;  // as reported: fp32, tf32, amp_bf16, amp_fp16
  bool autocast = false;
  c10::ScalarType autocast_dtype = c10::kFloat;
  bool loss_scaling = false;
  bool tf32 = false;
};

struct RunPlan {
  c10::Device device = c10::Device(c10::kCPU);
  PrecisionPlan precision;
  bool channels_last = false;
  bool cuda_graphs = false;  // planned; the capture may still fall back to eager
  bool host_memory_cache = false;
};

// The precision in effect for `precision` on `device`. On CUDA: fp32 (TF32 off),
// tf32 and bf16 (bf16 autocast) from compute capability 8.0, amp (fp16 autocast with
// loss scaling) on any capability. On the CPU amp and bf16 are bf16 autocast and
// tf32 does not exist. `compute_capability_major` is the CUDA device's (ignored on
// the CPU). What the device cannot do, and a name that is none of the four, is
// kInvalidArgument.
StatusOr<PrecisionPlan> PlanPrecision(const std::string& precision, const c10::Device& device,
                                      int compute_capability_major);

StatusOr<RunPlan> MakeRunPlan(const TrainOptions& options);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_RUN_PLAN_H_
