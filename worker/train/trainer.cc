#include "worker/train/trainer.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/utils.h>
#include <torch/version.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/names.h"
#include "worker/train/data_source.h"
#include "worker/train/distributed.h"
#include "worker/train/host_memory.h"
#include "worker/train/measured_runs.h"
#include "worker/train/models.h"
#include "worker/train/run_plan.h"
#include "worker/train/step_report.h"
#include "worker/train/training_loop.h"
#include "worker/train/training_step.h"

#ifdef BENCH_WITH_CUDA
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif
#ifdef BENCH_WITH_NCCL
#include <nccl.h>
#endif

namespace bench_train {
namespace {

// A human log line on stderr (common/log.h): "... bench-train: rank 0: message".
void Log(int rank, const std::string& message) { bench::Log("rank ", rank, ": ", message); }

std::string Format(const char* format, double a, double b) {
  char buffer[128];
  std::snprintf(buffer, sizeof(buffer), format, a, b);
  return buffer;
}

std::map<std::string, std::string> Versions() {
  std::map<std::string, std::string> versions = {{"torch", TORCH_VERSION},
                                                 {"bench_train", kBenchTrainVersion}};
#ifdef BENCH_TRAIN_BUILD_ID
  versions["bench_train_build"] = BENCH_TRAIN_BUILD_ID;
#endif
#ifdef BENCH_WITH_CUDA
  // The CUDA runtime this binary was compiled against (e.g. 12010 -> "12.1").
  versions["cuda"] =
      std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
  try {
    const auto& hooks = at::detail::getCUDAHooks();
    if (hooks.hasCuDNN()) {
      const long v = hooks.versionCuDNN();  // 8.x: M*1000+m*100+p; 9.x: M*10000+m*100+p
      const long major = v >= 10000 ? v / 10000 : v / 1000;
      const long minor = v >= 10000 ? v % 10000 / 100 : v % 1000 / 100;
      versions["cudnn"] =
          std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
    }
  } catch (const std::exception&) {
    // Best effort: the field is optional.
  }
#endif
#ifdef BENCH_WITH_NCCL
  versions["nccl"] = std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
                     std::to_string(NCCL_PATCH);
#endif
  return versions;
}

bool IsDetection(const TrainOptions& options) {
  const bench::ModelInfo* model = bench::FindModel(options.model);
  return model != nullptr && model->data_kind == bench::DataKind::kDetection;
}

StepOptions MakeStepOptions(const TrainOptions& options, const RunPlan& plan) {
  StepOptions step;
  step.device = plan.device;
  step.autocast = plan.precision.autocast;
  step.autocast_dtype = plan.precision.autocast_dtype;
  step.loss_scaling = plan.precision.loss_scaling;
  step.channels_last = plan.channels_last;
  step.lr = EffectiveLearningRate(options);
  step.lr_warmup = EffectiveLrWarmup(options);
  step.total_steps = options.iterations;
  step.sgd.momentum = options.momentum;
  step.sgd.weight_decay = options.weight_decay;
  step.sgd.bn_weight_decay = options.bn_weight_decay;
  step.broadcast_buffers = options.broadcast_buffers;
  return step;
}

StartEvent MakeStartEvent(const TrainOptions& options, const RunPlan& plan,
                          const std::string& backend, int64_t parameters,
                          const StepOptions& step_options, int64_t allreduce_buckets,
                          const DataSource& data, const StepRunner& runner) {
  StartEvent start;
  start.rank = options.rendezvous.rank;
  start.model = options.model;
  start.parameters = parameters;
  start.precision = plan.precision.name;
  start.device = plan.device.str();
  start.world_size = options.rendezvous.world_size;
  start.local_rank = options.rendezvous.local_rank;
  start.batch_size = options.batch_size;
  start.image_size = options.image_size;
  start.iterations = options.iterations;
  start.warmup_iterations = options.warmup_iterations;
  start.backend = backend;
  start.versions = Versions();
  start.requested_precision = options.precision;
  start.loss_scaling = plan.precision.loss_scaling;
  start.data = options.data;
  start.dataset_images = data.dataset_images();
  start.dataset_classes = data.dataset_classes();
  start.loader_threads = data.loader_threads();
  start.channels_last = plan.channels_last;
  start.cuda_graphs = runner.graphed();
  start.cuda_graphs_fallback = runner.fallback_reason();
  start.host_memory_cache = plan.host_memory_cache;
  start.broadcast_buffers = options.rendezvous.distributed() && options.broadcast_buffers;
  start.lr = step_options.lr;
  start.lr_warmup_iterations = step_options.lr_warmup;
  start.momentum = options.momentum;
  start.weight_decay = options.weight_decay;
  start.bn_weight_decay = options.bn_weight_decay;
  start.label_smoothing = IsDetection(options) ? 0 : options.label_smoothing;
  start.model_kind = bench::DataKindName(IsDetection(options) ? bench::DataKind::kDetection
                                                              : bench::DataKind::kClassification);
  start.zero_init_residual = options.zero_init_residual;
  start.allreduce_buckets = allreduce_buckets;
  return start;
}

void ConfigureDevice(const RunPlan& plan) {
#ifdef BENCH_WITH_CUDA
  if (!plan.device.is_cuda()) return;
  c10::cuda::set_device(plan.device.index());
  at::globalContext().setBenchmarkCuDNN(true);
  if (!plan.precision.autocast) {
    at::globalContext().setAllowTF32CuBLAS(plan.precision.tf32);
    at::globalContext().setAllowTF32CuDNN(plan.precision.tf32);
  }
#else
  (void)plan;
#endif
}

// TrainerTestOptions::capture_failure: `step`, then its outputs read on the host.
StepFunction ReadLossOnHost(StepFunction step) {
  return [step = std::move(step)](const at::Tensor& images, const at::Tensor& labels,
                                  const at::Tensor& boxes) {
    at::Tensor outputs = step(images, labels, boxes);
    (void)outputs[0].item<float>();  // on a capturing CUDA stream: "operation not permitted"
    return outputs;
  };
}

Status RunTrainerOrThrow(const TrainOptions& options, EventWriter& events,
                         const TrainerTestOptions& test) {
  BENCH_TRAIN_RETURN_IF_ERROR(ValidateTrainOptions(options));
  const RendezvousOptions& rendezvous = options.rendezvous;
  const int rank = rendezvous.rank;
  if (options.threads > 0) at::set_num_threads(options.threads);

  BENCH_TRAIN_ASSIGN_OR_RETURN(const RunPlan plan, MakeRunPlan(options));
  if (plan.host_memory_cache) BENCH_TRAIN_RETURN_IF_ERROR(KeepFreedHostMemory());
  ConfigureDevice(plan);
  const c10::Device device = plan.device;

  // Data first: a missing or empty folder is an error before any training.
  BENCH_TRAIN_ASSIGN_OR_RETURN(std::unique_ptr<DataSource> data, OpenDataSource(options, device));

  torch::manual_seed(options.seed);  // same weights on every rank (rank 0's are broadcast too)
  ModelOptions model_options;
  model_options.num_classes = options.num_classes;
  model_options.zero_init_residual = options.zero_init_residual;
  model_options.label_smoothing = options.label_smoothing;
  BENCH_TRAIN_ASSIGN_OR_RETURN(std::shared_ptr<TrainableModel> model,
                               MakeModel(options.model, model_options));
  model->to(device);
  model->train();
  const int64_t parameters = CountParameters(*model);

  std::unique_ptr<Communicator> communicator;
  std::string backend = "none";
  if (rendezvous.distributed()) {
    Log(rank, "joining " + std::to_string(rendezvous.world_size) + " ranks via " +
                  rendezvous.master_addr + ":" + std::to_string(rendezvous.master_port));
    BENCH_TRAIN_ASSIGN_OR_RETURN(
        communicator,
        ConnectProcessGroup(rendezvous, device.is_cuda() ? Backend::kNccl : Backend::kGloo));
    backend = communicator->backend_name();
    std::vector<at::Tensor> state = model->parameters();
    for (const auto& buffer : model->buffers()) state.push_back(buffer);
    BroadcastTensors(state, *communicator, /*root=*/0);
  }

  const StepOptions step_options = MakeStepOptions(options, plan);
  TrainingStep step(model, step_options, communicator.get());
  // Each run of the loop gets its own runner (measured_runs.h): a graph is captured on its
  // run's batch tensors.
  const RunnerFactory make_runner = [&]() -> std::unique_ptr<StepRunner> {
    StepFunction run_step = PackedStep(step);
    if (test.capture_failure) run_step = ReadLossOnHost(std::move(run_step));
    if (!plan.cuda_graphs) return MakeEagerRunner(std::move(run_step));
    return MakeGraphRunner(std::move(run_step), MakeCudaGraphCapture(device), kGraphWarmupSteps);
  };
  std::unique_ptr<StepClock> clock = device.is_cuda() ? MakeCudaClock(device) : MakeHostClock();
  step.set_phase_marker(clock.get());  // the step split (training_loop.h)

  if (device.is_cpu() && !plan.precision.autocast && at::get_num_threads() == 1 &&
      options.batch_size < 16) {
    // libtorch's heuristic: 1x1 convolutions skip oneDNN when single-threaded
    // with a batch under 16, and go through BLAS (very slow on a reference
    // BLAS).
    Log(rank,
        "note: 1 intra-op thread and batch < 16: libtorch runs 1x1 "
        "convolutions "
        "without oneDNN; consider --threads N or a larger --bs");
  }

  const int64_t allreduce_buckets =
      step.reducer() != nullptr ? static_cast<int64_t>(step.reducer()->num_buckets()) : 0;
  StepReporter reporter(options, events);
  auto write_start = [&](const StepRunner& settled) {
    const StartEvent start = MakeStartEvent(options, plan, backend, parameters, step_options,
                                            allreduce_buckets, *data, settled);
    reporter.WriteStart(start);
    Log(rank, options.model + " (" + std::to_string(parameters) + " parameters), " +
                  start.precision + " on " + start.device + ", batch " +
                  std::to_string(options.batch_size) + " at " + std::to_string(options.image_size) +
                  "px, " + std::to_string(at::get_num_threads()) + " threads, backend " + backend +
                  (start.channels_last ? ", channels_last" : "") +
                  (start.cuda_graphs ? ", CUDA graphs" : "") + ", data " + options.data);
    if (!start.cuda_graphs_fallback.empty()) Log(rank, start.cuda_graphs_fallback);
  };

#ifdef BENCH_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
#endif
  BENCH_TRAIN_ASSIGN_OR_RETURN(
      SummaryEvent summary,
      RunMeasured(
          options, make_runner, *data, *clock, reporter, write_start,
          [&](const TrainOptions& o) { return OpenDataSource(o, device); },
          [&](const TrainOptions& o, const DataSource& d, const StepRunner& r) {
            return MakeStartEvent(o, plan, backend, parameters, step_options, allreduce_buckets, d,
                                  r);
          }));
  if (step.scaler() != nullptr) {
    summary.skipped_steps = static_cast<int64_t>(step.scaler()->skipped_steps().item<double>());
  }
  summary.corrupt_files = data->corrupt_files();
#ifdef BENCH_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    summary.peak_memory_bytes = static_cast<int64_t>(stats.allocated_bytes[0].peak);  // AGGREGATE
  }
#endif
  events.Write(summary);
  // Every rank leaves the group after its last collective, so none hangs after
  // its summary (the destructor does the same on an error path).
  if (communicator) communicator->Shutdown();
  Log(rank, Format("%.2f images/s over %.3f s", summary.images_per_second, summary.window_s) +
                " (" + std::to_string(summary.measured_images) + " images)" +
                (summary.skipped_steps > 0
                     ? ", " + std::to_string(summary.skipped_steps) + " skipped fp16 steps"
                     : "") +
                (summary.nonfinite_losses > 0
                     ? ", " + std::to_string(summary.nonfinite_losses) + " non-finite losses"
                     : "") +
                (summary.corrupt_files > 0
                     ? ", " + std::to_string(summary.corrupt_files) + " unreadable images skipped"
                     : ""));
  return Status::Ok();
}

}  // namespace

Status RunTrainer(const TrainOptions& options, EventWriter& events,
                  const TrainerTestOptions& test) {
  try {
    return RunTrainerOrThrow(options, events, test);
  } catch (const c10::Error& e) {
    return InternalError(e.what_without_backtrace());
  } catch (const std::exception& e) {
    return InternalError(e.what());
  } catch (...) {
    return InternalError("unknown exception");
  }
}

}  // namespace bench_train
