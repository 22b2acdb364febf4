#include "worker/train/run_plan.h"

#include <torch/cuda.h>
#include <torch/version.h>

#include "common/names.h"

#ifdef BENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace bench_train {
namespace {

StatusOr<c10::Device> ResolveDevice(const TrainOptions& options) {
  if (options.device == "cpu") return c10::Device(c10::kCPU);
#ifndef BENCH_WITH_CUDA
  return UnimplementedError("--device " + options.device +
                            ": this bench-train was built without CUDA (libtorch " TORCH_VERSION
                            " CPU); use --device cpu");
#else
  int64_t index = options.rendezvous.local_rank;
  if (options.device.rfind("cuda:", 0) == 0 && !ParseInt64(options.device.substr(5), &index)) {
    return InvalidArgumentError("bad --device '" + options.device + "'");
  }
  if (!torch::cuda::is_available()) {
    return UnavailableError("--device " + options.device + ": no CUDA device is available");
  }
  const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
  if (index < 0 || index >= count) {
    return UnavailableError("--device " + options.device + ": CUDA device " +
                            std::to_string(index) + " does not exist (" + std::to_string(count) +
                            " visible)");
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
#endif
}

int ComputeCapabilityMajor(const c10::Device& device) {
#ifdef BENCH_WITH_CUDA
  if (device.is_cuda()) return at::cuda::getDeviceProperties(device.index())->major;
#endif
  (void)device;
  return 0;
}

}  // namespace

StatusOr<PrecisionPlan> PlanPrecision(const std::string& precision, const c10::Device& device,
                                      int compute_capability_major) {
  // ValidateTrainOptions refuses these first; here too, so that no unknown name falls
  // through to one of the autocast plans below.
  if (precision != kPrecisionFp32 && precision != kPrecisionTf32 && precision != kPrecisionAmp &&
      precision != kPrecisionBf16) {
    return InvalidArgumentError("unknown --precision '" + precision + "' (known: " +
                                bench::JoinNames(bench::kPrecisionNames, ", ", ", ") + ")");
  }
  if (precision == kPrecisionFp32) {
    return PrecisionPlan{bench::kInEffectFp32, false, c10::kFloat, false, false};
  }
  if (!device.is_cuda()) {
    if (precision == kPrecisionTf32) {
      return InvalidArgumentError(
          "--precision tf32 needs a CUDA device (TF32 "
          "is a tensor-core mode of Ampere and "
          "newer GPUs; on the CPU use fp32)");
    }
    return PrecisionPlan{bench::kInEffectAmpBf16, true, c10::kBFloat16, false, false};
  }
  if ((precision == kPrecisionTf32 || precision == kPrecisionBf16) &&
      compute_capability_major < 8) {
    return InvalidArgumentError(
        "--precision " + precision + " needs compute capability >= 8.0 (Ampere or newer); " +
        device.str() + " has " + std::to_string(compute_capability_major) + ".x");
  }
  if (precision == kPrecisionTf32) {
    return PrecisionPlan{bench::kInEffectTf32, false, c10::kFloat, false, true};
  }
  if (precision == kPrecisionBf16) {
    return PrecisionPlan{bench::kInEffectAmpBf16, true, c10::kBFloat16, false, false};
  }
  return PrecisionPlan{bench::kInEffectAmpFp16, true, c10::kHalf, true, false};
}

StatusOr<RunPlan> MakeRunPlan(const TrainOptions& options) {
  RunPlan plan;
  BENCH_TRAIN_ASSIGN_OR_RETURN(plan.device, ResolveDevice(options));
  const bool cuda = plan.device.is_cuda();
  BENCH_TRAIN_ASSIGN_OR_RETURN(plan.precision, PlanPrecision(options.precision, plan.device,
                                                             ComputeCapabilityMajor(plan.device)));
  plan.host_memory_cache =
      options.host_memory_cache == Toggle::kAuto ? !cuda : options.host_memory_cache == Toggle::kOn;
  plan.channels_last =
      options.channels_last == Toggle::kAuto ? cuda : options.channels_last == Toggle::kOn;
  const bool distributed = options.rendezvous.distributed();
  if (options.cuda_graphs == Toggle::kOn) {
    if (!cuda) return InvalidArgumentError("--cuda-graphs on needs a CUDA device");
    if (distributed) {
      return InvalidArgumentError(
          "--cuda-graphs on: not with more than one rank (the gradient "
          "all-reduce is not captured); use --cuda-graphs off");
    }
    plan.cuda_graphs = true;
  } else if (options.cuda_graphs == Toggle::kAuto) {
    // Where it helps (launch-bound small batches) and the capture fits in
    // warm-up.
    plan.cuda_graphs = cuda && !distributed && options.batch_size <= 128 &&
                       options.warmup_iterations > kGraphWarmupSteps;
  }
  if (options.iterations <= kGraphWarmupSteps) plan.cuda_graphs = false;  // nothing to replay
  return plan;
}

}  // namespace bench_train
