#include "worker/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>
#include <torch/version.h>

#include "worker/train/distributed.h"
#include "worker/train/models.h"

#ifdef BENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif
#ifdef BENCH_WITH_NCCL
#include <nccl.h>
#endif

// libtorch 2.4 made the autocast API device-generic and deprecated the per-device
// names that 1.13 has.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define BENCH_TRAIN_DEVICE_GENERIC_AUTOCAST 1
#endif

namespace bench_train {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

void Log(int rank, const std::string& message) {
  std::fprintf(stderr, "[bench-train rank %d] %s\n", rank, message.c_str());
}

struct PrecisionPlan {
  std::string name;  // as reported: fp32, amp_bf16, amp_fp16
  bool autocast = false;
  at::ScalarType autocast_dtype = at::kFloat;
  bool loss_scaling = false;
};

PrecisionPlan PlanPrecision(const std::string& precision, const c10::Device& device) {
  if (precision == kPrecisionFp32) return {"fp32", false, at::kFloat, false};
  if (device.is_cuda()) return {"amp_fp16", true, at::kHalf, true};
  return {"amp_bf16", true, at::kBFloat16, false};
}

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

std::map<std::string, std::string> Versions() {
  std::map<std::string, std::string> versions = {{"torch", TORCH_VERSION},
                                                 {"bench_train", kBenchTrainVersion}};
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

// Enables autocast for one device type for the scope's lifetime, like Python's
// torch.autocast: restores the previous state and clears the cast cache on exit.
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

// Dynamic loss scaling for fp16, as torch.cuda.amp.GradScaler (init 2^16, x2
// after 2000 clean steps, x0.5 and skip on inf/NaN). The scale stays on the
// device; only the skip decision reads found_inf on the host.
class LossScaler {
 public:
  explicit LossScaler(const c10::Device& device)
      : scale_(at::full({1}, 65536.0, at::TensorOptions(at::kFloat).device(device))),
        growth_tracker_(at::zeros({1}, at::TensorOptions(at::kInt).device(device))),
        found_inf_(at::zeros({1}, at::TensorOptions(at::kFloat).device(device))) {}

  at::Tensor Scale(const at::Tensor& loss) const { return loss * scale_; }

  // Unscales the gradients in place; false when one is inf/NaN (skip the step).
  bool UnscaleAndCheck(const std::vector<at::Tensor>& parameters) {
    std::vector<at::Tensor> grads;
    grads.reserve(parameters.size());
    for (const auto& parameter : parameters) {
      if (parameter.grad().defined()) grads.push_back(parameter.grad());
    }
    found_inf_.zero_();
    const at::Tensor inv_scale = scale_.to(at::kDouble).reciprocal().to(at::kFloat);
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, inv_scale);
    return found_inf_.item<float>() == 0.0f;
  }

  void Update() {
    at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, /*scale_growth_factor=*/2.0,
                           /*scale_backoff_factor=*/0.5, /*growth_interval=*/2000);
  }

 private:
  at::Tensor scale_;
  at::Tensor growth_tracker_;
  at::Tensor found_inf_;
};

// Everything one step touches. Synthetic data: one batch, made once on the device.
class StepRunner {
 public:
  StepRunner(std::shared_ptr<ImageClassifier> model, const PrecisionPlan& plan,
             const c10::Device& device, Communicator* communicator, at::Tensor images,
             at::Tensor labels)
      : model_(std::move(model)),
        parameters_(model_->parameters()),
        optimizer_(parameters_,
                   torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-4)),
        plan_(plan),
        device_(device),
        communicator_(communicator),
        images_(std::move(images)),
        labels_(std::move(labels)) {
    if (plan_.loss_scaling) scaler_ = std::make_unique<LossScaler>(device_);
  }

  // The batch for the next step (a no-op for synthetic data; timed as data time).
  void FetchBatch() {}

  // Enqueues one training step; returns the (detached, fp32) loss on the device.
  at::Tensor Step() {
    optimizer_.zero_grad();
    at::Tensor logits;
    if (plan_.autocast) {
      AutocastScope autocast(device_.type(), plan_.autocast_dtype);
      logits = model_->forward(images_);
    } else {
      logits = model_->forward(images_);
    }
    at::Tensor loss = torch::nn::functional::cross_entropy(logits.to(at::kFloat), labels_);
    if (scaler_) {
      scaler_->Scale(loss).backward();
    } else {
      loss.backward();
    }
    if (communicator_ != nullptr) AverageGradients(parameters_, *communicator_);
    if (scaler_) {
      if (scaler_->UnscaleAndCheck(parameters_)) optimizer_.step();
      scaler_->Update();
    } else {
      optimizer_.step();
    }
    return loss.detach();
  }

 private:
  std::shared_ptr<ImageClassifier> model_;
  std::vector<at::Tensor> parameters_;
  torch::optim::SGD optimizer_;
  PrecisionPlan plan_;
  c10::Device device_;
  Communicator* communicator_;
  at::Tensor images_;
  at::Tensor labels_;
  std::unique_ptr<LossScaler> scaler_;
};

// Writes iter events and accumulates the measured steps for the summary.
class Reporter {
 public:
  Reporter(const TrainOptions& options, EventWriter& events)
      : options_(options), events_(events) {}

  void Iteration(int64_t iteration, double step_time_s, double loss, double data_time_s,
                 double elapsed_s) {
    IterEvent event;
    event.rank = options_.rendezvous.rank;
    event.iteration = iteration;
    event.step_time_s = step_time_s;
    event.images = options_.batch_size;
    event.loss = loss;
    event.data_time_s = data_time_s;
    event.elapsed_s = elapsed_s;
    event.warmup = iteration <= options_.warmup_iterations;
    events_.Write(event);
    if (!event.warmup) measured_step_times_.push_back(step_time_s);
  }

  SummaryEvent Summary(double window_s) const {
    SummaryEvent summary;
    summary.rank = options_.rendezvous.rank;
    summary.measured_iterations = options_.iterations - options_.warmup_iterations;
    summary.measured_images = summary.measured_iterations * options_.batch_size;
    summary.window_s = window_s;
    summary.images_per_second =
        window_s > 0 ? static_cast<double>(summary.measured_images) / window_s : 0.0;
    summary.step_time_median_s = Median(measured_step_times_);
    return summary;
  }

 private:
  static double Median(std::vector<double> values) {
    if (values.empty()) return 0.0;
    const size_t mid = values.size() / 2;
    std::nth_element(values.begin(), values.begin() + mid, values.end());
    const double upper = values[mid];
    if (values.size() % 2 == 1) return upper;
    return (*std::max_element(values.begin(), values.begin() + mid) + upper) / 2.0;
  }

  const TrainOptions& options_;
  EventWriter& events_;
  std::vector<double> measured_step_times_;
};

// CPU: the host clock is the device clock; every step completes before it returns.
double RunHostLoop(const TrainOptions& options, StepRunner& runner, Reporter& reporter) {
  Clock::time_point first_start;
  Clock::time_point window_start;
  Clock::time_point last_end;
  for (int64_t i = 1; i <= options.iterations; ++i) {
    const Clock::time_point start = Clock::now();
    if (i == 1) first_start = window_start = start;
    runner.FetchBatch();
    const Clock::time_point fetched = Clock::now();
    const double loss = runner.Step().item<double>();
    last_end = Clock::now();
    reporter.Iteration(i, Seconds(last_end - start), loss, Seconds(fetched - start),
                       Seconds(last_end - first_start));
    if (i == options.warmup_iterations) window_start = last_end;
  }
  return Seconds(last_end - window_start);
}

#ifdef BENCH_WITH_CUDA
// CUDA: step times from CUDA events, read one step late (after the next step is
// enqueued), so the host never waits on the step it just enqueued. The loss is
// copied to pinned host memory before the step's end event, so reading it late
// waits only for that event, not for the stream (which already holds the next
// step). The window's edges are host times taken after a device synchronize (once
// at the end of warm-up, once at the end).
struct InFlightStep {
  int64_t iteration = 0;
  at::cuda::CUDAEvent start{cudaEventDefault};
  at::cuda::CUDAEvent end{cudaEventDefault};
  at::Tensor loss_host;  // pinned; valid once `end` has completed
  double data_time_s = 0;
};

double RunCudaLoop(const TrainOptions& options, const c10::Device& device, StepRunner& runner,
                   Reporter& reporter) {
  at::cuda::CUDAEvent first_start(cudaEventDefault);
  std::unique_ptr<InFlightStep> pending;
  auto report = [&](InFlightStep& step) {
    step.end.synchronize();
    const double step_s = step.start.elapsed_time(step.end) / 1000.0;
    const double elapsed_s = first_start.elapsed_time(step.end) / 1000.0;
    reporter.Iteration(step.iteration, step_s, step.loss_host.item<double>(), step.data_time_s,
                       elapsed_s);
  };

  torch::cuda::synchronize(device.index());
  Clock::time_point window_start = Clock::now();
  for (int64_t i = 1; i <= options.iterations; ++i) {
    auto current = std::make_unique<InFlightStep>();
    current->iteration = i;
    if (i == 1) first_start.record();
    current->start.record();
    const Clock::time_point fetch_start = Clock::now();
    runner.FetchBatch();
    current->data_time_s = Seconds(Clock::now() - fetch_start);
    at::Tensor loss = runner.Step();
    current->loss_host = at::empty({}, loss.options().device(at::kCPU).pinned_memory(true));
    current->loss_host.copy_(loss, /*non_blocking=*/true);
    current->end.record();
    if (pending) report(*pending);
    pending = std::move(current);
    if (i == options.warmup_iterations) {
      report(*pending);
      pending.reset();
      torch::cuda::synchronize(device.index());
      window_start = Clock::now();
    }
  }
  if (pending) report(*pending);
  torch::cuda::synchronize(device.index());
  return Seconds(Clock::now() - window_start);
}
#endif

std::string Format(const char* format, double a, double b) {
  char buffer[128];
  std::snprintf(buffer, sizeof(buffer), format, a, b);
  return buffer;
}

Status RunTrainerOrThrow(const TrainOptions& options, EventWriter& events) {
  BENCH_TRAIN_RETURN_IF_ERROR(ValidateTrainOptions(options));
  const RendezvousOptions& rendezvous = options.rendezvous;
  const int rank = rendezvous.rank;
  if (options.threads > 0) at::set_num_threads(options.threads);

  BENCH_TRAIN_ASSIGN_OR_RETURN(const c10::Device device, ResolveDevice(options));
  const PrecisionPlan plan = PlanPrecision(options.precision, device);
#ifdef BENCH_WITH_CUDA
  if (device.is_cuda()) {
    c10::cuda::set_device(device.index());
    at::globalContext().setBenchmarkCuDNN(true);
  }
#endif

  torch::manual_seed(options.seed);  // same weights on every rank (rank 0's are broadcast too)
  BENCH_TRAIN_ASSIGN_OR_RETURN(std::shared_ptr<ImageClassifier> model,
                               MakeModel(options.model, options.num_classes));
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

  StartEvent start;
  start.rank = rank;
  start.model = options.model;
  start.parameters = parameters;
  start.precision = plan.name;
  start.device = device.str();
  start.world_size = rendezvous.world_size;
  start.local_rank = rendezvous.local_rank;
  start.batch_size = options.batch_size;
  start.image_size = options.image_size;
  start.iterations = options.iterations;
  start.warmup_iterations = options.warmup_iterations;
  start.backend = backend;
  start.versions = Versions();
  events.Write(start);
  Log(rank, options.model + " (" + std::to_string(parameters) + " parameters), " + plan.name +
                " on " + start.device + ", batch " + std::to_string(options.batch_size) + " at " +
                std::to_string(options.image_size) + "px, " + std::to_string(at::get_num_threads()) +
                " threads, backend " + backend);

  if (device.is_cpu() && !plan.autocast && at::get_num_threads() == 1 && options.batch_size < 16) {
    // libtorch's heuristic: 1x1 convolutions skip oneDNN when single-threaded
    // with a batch under 16, and go through BLAS (very slow on a reference BLAS).
    Log(rank, "note: 1 intra-op thread and batch < 16: libtorch runs 1x1 convolutions "
              "without oneDNN; consider --threads N or a larger --bs");
  }

  // Different data on each rank, made once, on the device.
  torch::manual_seed(options.seed + 1 + static_cast<uint64_t>(rank));
  const auto on_device = at::TensorOptions().device(device);
  at::Tensor images = at::randn(
      {options.batch_size, 3, options.image_size, options.image_size}, on_device.dtype(at::kFloat));
  at::Tensor labels =
      at::randint(0, options.num_classes, {options.batch_size}, on_device.dtype(at::kLong));

  StepRunner runner(model, plan, device, communicator.get(), std::move(images), std::move(labels));
  Reporter reporter(options, events);
  double window_s = 0;
  if (device.is_cuda()) {
#ifdef BENCH_WITH_CUDA
    window_s = RunCudaLoop(options, device, runner, reporter);
#endif
  } else {
    window_s = RunHostLoop(options, runner, reporter);
  }

  const SummaryEvent summary = reporter.Summary(window_s);
  events.Write(summary);
  Log(rank, Format("%.2f images/s over %.3f s", summary.images_per_second, summary.window_s) +
                " (" + std::to_string(summary.measured_images) + " images)");
  return Status::Ok();
}

}  // namespace

Status RunTrainer(const TrainOptions& options, EventWriter& events) {
  try {
    return RunTrainerOrThrow(options, events);
  } catch (const c10::Error& e) {
    return InternalError(e.what_without_backtrace());
  } catch (const std::exception& e) {
    return InternalError(e.what());
  } catch (...) {
    return InternalError("unknown exception");
  }
}

}  // namespace bench_train
