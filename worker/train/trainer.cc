#include "worker/train/trainer.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <torch/nn/functional/loss.h>
#include <torch/utils.h>
#include <torch/version.h>

#include "worker/train/distributed.h"
#include "worker/train/host_memory.h"
#include "worker/train/image_folder.h"
#include "worker/train/loss_scaler.h"
#include "worker/train/models.h"
#include "worker/train/optimizer.h"
#include "worker/train/training_step.h"

#ifdef BENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
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

// With CUDA graphs: eager steps before the capture (cuDNN picks its algorithms,
// autograd and the allocator settle), all inside the benchmark's warm-up.
constexpr int64_t kGraphWarmupSteps = 3;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

void Log(int rank, const std::string& message) {
  std::fprintf(stderr, "[bench-train rank %d] %s\n", rank, message.c_str());
}

struct PrecisionPlan {
  std::string name;  // as reported: fp32, tf32, amp_bf16, amp_fp16
  bool autocast = false;
  at::ScalarType autocast_dtype = at::kFloat;
  bool loss_scaling = false;
  bool tf32 = false;
};

// The precision in effect for `precision` on `device`, or a clear error where the
// device cannot do it. CPU: amp and bf16 are bf16 autocast; tf32 does not exist.
StatusOr<PrecisionPlan> PlanPrecision(const std::string& precision, const c10::Device& device) {
  if (precision == kPrecisionFp32) return PrecisionPlan{"fp32", false, at::kFloat, false, false};
  if (!device.is_cuda()) {
    if (precision == kPrecisionTf32) {
      return InvalidArgumentError(
          "--precision tf32 needs a CUDA device (TF32 is a tensor-core mode of Ampere and "
          "newer GPUs; on the CPU use fp32)");
    }
    return PrecisionPlan{"amp_bf16", true, at::kBFloat16, false, false};
  }
  int major = 0;
#ifdef BENCH_WITH_CUDA
  major = at::cuda::getDeviceProperties(device.index())->major;
#endif
  if ((precision == kPrecisionTf32 || precision == kPrecisionBf16) && major < 8) {
    return InvalidArgumentError("--precision " + precision +
                                " needs compute capability >= 8.0 (Ampere or newer); " +
                                device.str() + " has " + std::to_string(major) + ".x");
  }
  if (precision == kPrecisionTf32) return PrecisionPlan{"tf32", false, at::kFloat, false, true};
  if (precision == kPrecisionBf16) {
    return PrecisionPlan{"amp_bf16", true, at::kBFloat16, false, false};
  }
  return PrecisionPlan{"amp_fp16", true, at::kHalf, true, false};
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

}  // namespace

// ---- TrainingStep ------------------------------------------------------------

TrainingStep::TrainingStep(std::shared_ptr<ImageClassifier> model, const StepOptions& options,
                           Communicator* communicator)
    : model_(std::move(model)), options_(options) {
  SgdOptions sgd = options.sgd;
  sgd.channels_last = options.channels_last;
  optimizer_ = std::make_unique<FlatSgd>(*model_, sgd);
  schedule_ = std::make_unique<LrSchedule>(options.lr, options.lr_warmup, options.total_steps,
                                           options.device);
  if (options.loss_scaling) scaler_ = std::make_unique<LossScaler>(options.device, options.scaler);
  if (communicator != nullptr && communicator->world_size() > 1) {
    reducer_ = std::make_unique<GradientReducer>(optimizer_->Buckets(options.bucket_bytes),
                                                 *communicator);
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

at::Tensor TrainingStep::Run(const at::Tensor& raw_images, const at::Tensor& labels) {
  at::Tensor images = raw_images;
  if (images.scalar_type() == at::kByte) {  // NHWC RGB -> normalised float NCHW
    images = images.permute({0, 3, 1, 2}).to(at::kFloat).sub_(mean_).mul_(inv_std_);
  }
  images = images.contiguous(options_.channels_last ? at::MemoryFormat::ChannelsLast
                                                    : at::MemoryFormat::Contiguous);
  optimizer_->ZeroGrad();
  if (buffer_communicator_ != nullptr) BroadcastTensors(buffers_, *buffer_communicator_, 0);
  if (reducer_) reducer_->Prepare();
  at::Tensor logits;
  if (options_.autocast) {
    AutocastScope autocast(options_.device.type(), options_.autocast_dtype);
    logits = model_->forward(images);
  } else {
    logits = model_->forward(images);
  }
  at::Tensor loss = torch::nn::functional::cross_entropy(
      logits.to(at::kFloat), labels,
      torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(options_.label_smoothing));
  if (scaler_) {
    scaler_->Scale(loss).backward();
  } else {
    loss.backward();
  }
  if (reducer_) reducer_->Finish();
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

namespace {

// ---- Data ----------------------------------------------------------------------

struct DeviceBatch {
  int64_t number = 0;
  at::Tensor images;  // float NCHW or uint8 NHWC, on the device
  at::Tensor labels;
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  // The next batch, on the device (for CUDA: the copy is enqueued on the current
  // stream). The host time spent here is the step's data time.
  virtual StatusOr<DeviceBatch> Next() = 0;
  // The step that used batch `number` has completed on the device.
  virtual void Done(int64_t number) { (void)number; }
  virtual int64_t corrupt_files() const { return 0; }
};

// One batch, made once on the device: measures compute alone.
class SyntheticData : public DataSource {
 public:
  SyntheticData(const TrainOptions& options, const c10::Device& device, int rank) {
    torch::manual_seed(options.seed + 1 + static_cast<uint64_t>(rank));
    const auto on_device = at::TensorOptions().device(device);
    images_ = at::randn({options.batch_size, 3, options.image_size, options.image_size},
                        on_device.dtype(at::kFloat));
    labels_ = at::randint(0, options.num_classes, {options.batch_size}, on_device.dtype(at::kLong));
  }
  StatusOr<DeviceBatch> Next() override { return DeviceBatch{next_++, images_, labels_}; }

 private:
  int64_t next_ = 0;
  at::Tensor images_;
  at::Tensor labels_;
};

// JPEGs decoded on loader threads into (pinned, on CUDA) host slots; on CUDA the
// batch is copied asynchronously into one device buffer and the slot goes back
// to the loader once the step has completed.
class ImageFolderData : public DataSource {
 public:
  static StatusOr<std::unique_ptr<ImageFolderData>> Open(const TrainOptions& options,
                                                         const c10::Device& device) {
    std::unique_ptr<ImageFolderData> data(new ImageFolderData());
    data->device_ = device;
    data->batch_size_ = options.batch_size;
    data->image_size_ = options.image_size;
    ImageFolderOptions loader;
    loader.root = options.data_dir;
    loader.batch_size = options.batch_size;
    loader.image_size = options.image_size;
    loader.threads = LoaderThreads(options);
    loader.num_slots = 4;
    loader.seed = options.seed;
    loader.rank = options.rendezvous.rank;
    loader.world_size = options.rendezvous.world_size;
    ImageFolderData* raw = data.get();
    auto opened = ImageFolderLoader::Open(loader, [raw, device](size_t bytes) -> void* {
      at::Tensor slot = at::empty({static_cast<int64_t>(bytes)},
                                  at::TensorOptions(at::kByte).pinned_memory(device.is_cuda()));
      raw->slot_memory_.push_back(slot);
      return slot.data_ptr();
    });
    if (!opened.ok()) return opened.status();
    data->loader_ = std::move(opened).value();
    if (device.is_cuda()) {
      const auto on_device = at::TensorOptions().device(device);
      data->device_images_ = at::empty({options.batch_size, options.image_size,
                                        options.image_size, 3}, on_device.dtype(at::kByte));
      data->device_labels_ = at::empty({options.batch_size}, on_device.dtype(at::kLong));
    }
    return data;
  }

  static int LoaderThreads(const TrainOptions& options) {
    if (options.loader_threads > 0) return options.loader_threads;
    return std::max(1u, std::thread::hardware_concurrency());
  }

  StatusOr<DeviceBatch> Next() override {
    auto next = loader_->Next();
    if (!next.ok()) return next.status();
    const LoadedBatch batch = next.value();
    in_flight_[batch.number] = batch;
    const at::Tensor images = at::from_blob(
        batch.images, {batch_size_, image_size_, image_size_, 3}, at::TensorOptions(at::kByte));
    const at::Tensor labels =
        at::from_blob(batch.labels, {batch_size_}, at::TensorOptions(at::kLong));
    if (!device_.is_cuda()) return DeviceBatch{batch.number, images, labels};
    device_images_.copy_(images, /*non_blocking=*/true);
    device_labels_.copy_(labels, /*non_blocking=*/true);
    return DeviceBatch{batch.number, device_images_, device_labels_};
  }

  void Done(int64_t number) override {
    auto it = in_flight_.find(number);
    if (it == in_flight_.end()) return;
    loader_->Release(it->second);
    in_flight_.erase(it);
  }

  int64_t corrupt_files() const override { return loader_->corrupt_files(); }
  const ImageFolderLoader& loader() const { return *loader_; }

 private:
  ImageFolderData() = default;
  c10::Device device_ = c10::Device(c10::kCPU);
  int64_t batch_size_ = 0;
  int64_t image_size_ = 0;
  std::vector<at::Tensor> slot_memory_;  // declared before loader_: outlives it
  std::unique_ptr<ImageFolderLoader> loader_;
  std::map<int64_t, LoadedBatch> in_flight_;
  at::Tensor device_images_;
  at::Tensor device_labels_;
};

// ---- Reporting -----------------------------------------------------------------

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  // Linear interpolation between closest ranks (numpy's default).
  const double position = q * static_cast<double>(values.size() - 1);
  const size_t lower = static_cast<size_t>(std::floor(position));
  const size_t upper = std::min(lower + 1, values.size() - 1);
  return values[lower] + (values[upper] - values[lower]) * (position - static_cast<double>(lower));
}

struct StepTiming {
  int64_t iteration = 0;
  double step_time_s = 0;
  double data_time_s = 0;
  double compute_time_s = 0;
  double elapsed_s = 0;
  double loss = 0;
  double lr = 0;
  std::optional<double> loss_scale;
};

// Writes iter events and accumulates the measured steps for the summary.
class Reporter {
 public:
  Reporter(const TrainOptions& options, EventWriter& events)
      : options_(options), events_(events) {}

  void Iteration(const StepTiming& timing) {
    IterEvent event;
    event.rank = options_.rendezvous.rank;
    event.iteration = timing.iteration;
    event.step_time_s = timing.step_time_s;
    event.images = options_.batch_size;
    event.loss = timing.loss;
    event.data_time_s = timing.data_time_s;
    event.elapsed_s = timing.elapsed_s;
    event.warmup = timing.iteration <= options_.warmup_iterations;
    event.compute_time_s = timing.compute_time_s;
    event.lr = timing.lr;
    event.loss_scale = timing.loss_scale;
    events_.Write(event);
    if (!event.warmup) {
      step_times_.push_back(timing.step_time_s);
      data_time_total_ += timing.data_time_s;
      compute_time_total_ += timing.compute_time_s;
    }
  }

  SummaryEvent Summary(double window_s) const {
    SummaryEvent summary;
    summary.rank = options_.rendezvous.rank;
    summary.measured_iterations = options_.iterations - options_.warmup_iterations;
    summary.measured_images = summary.measured_iterations * options_.batch_size;
    summary.window_s = window_s;
    summary.images_per_second =
        window_s > 0 ? static_cast<double>(summary.measured_images) / window_s : 0.0;
    summary.step_time_median_s = Percentile(step_times_, 0.5);
    summary.step_time_p50_s = summary.step_time_median_s;
    summary.step_time_p90_s = Percentile(step_times_, 0.9);
    summary.step_time_p99_s = Percentile(step_times_, 0.99);
    summary.data_time_total_s = data_time_total_;
    summary.compute_time_total_s = compute_time_total_;
    summary.compute_images_per_second =
        compute_time_total_ > 0 ? static_cast<double>(summary.measured_images) / compute_time_total_
                                : 0.0;
    struct rusage usage;
    if (::getrusage(RUSAGE_SELF, &usage) == 0) {
      summary.max_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;
    }
    return summary;
  }

 private:
  const TrainOptions& options_;
  EventWriter& events_;
  std::vector<double> step_times_;
  double data_time_total_ = 0;
  double compute_time_total_ = 0;
};

// CPU: the host clock is the device clock; every step completes before it returns.
StatusOr<double> RunHostLoop(const TrainOptions& options, TrainingStep& step, DataSource& data,
                             Reporter& reporter) {
  Clock::time_point first_start;
  Clock::time_point window_start;
  Clock::time_point last_end;
  for (int64_t i = 1; i <= options.iterations; ++i) {
    const Clock::time_point start = Clock::now();
    if (i == 1) first_start = window_start = start;
    auto batch = data.Next();
    if (!batch.ok()) return batch.status();
    const Clock::time_point fetched = Clock::now();
    const at::Tensor loss = step.Run(batch->images, batch->labels);
    if (options.test_step_sleep_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(options.test_step_sleep_ms));
    }
    StepTiming timing;
    timing.iteration = i;
    timing.loss = loss.item<double>();
    timing.lr = step.last_lr().item<double>();
    if (step.scaler() != nullptr) timing.loss_scale = step.scaler()->scale().item<double>();
    last_end = Clock::now();
    data.Done(batch->number);
    timing.step_time_s = Seconds(last_end - start);
    timing.data_time_s = Seconds(fetched - start);
    timing.compute_time_s = Seconds(last_end - fetched);
    timing.elapsed_s = Seconds(last_end - first_start);
    reporter.Iteration(timing);
    if (i == options.warmup_iterations) window_start = last_end;
  }
  return Seconds(last_end - window_start);
}

#ifdef BENCH_WITH_CUDA
// CUDA: step times from CUDA events, read one step late (after the next step is
// enqueued), so the host never waits on the step it just enqueued. The loss (and
// the loss scale and LR) are copied to pinned host memory before the step's end
// event, so reading them late waits only for that event. The window's edges are
// host times taken after a device synchronize (end of warm-up, end).
//
// With CUDA graphs, the first kGraphWarmupSteps steps run eagerly on a side
// stream (cuDNN picks its algorithms, autograd and the allocator settle), the
// next is captured whole (forward, backward, loss scaling, optimizer, LR) and
// every later step is one replay; batches are copied into the captured inputs.
struct InFlightStep {
  int64_t iteration = 0;
  int64_t batch = 0;
  at::cuda::CUDAEvent start{cudaEventDefault};
  at::cuda::CUDAEvent compute_start{cudaEventDefault};
  at::cuda::CUDAEvent end{cudaEventDefault};
  at::Tensor host;  // pinned [loss, lr(, scale)]; valid once `end` has completed
  double data_time_s = 0;
};

StatusOr<double> RunCudaLoop(const TrainOptions& options, const c10::Device& device,
                             TrainingStep& step, DataSource& data, bool use_graphs,
                             Reporter& reporter) {
  torch::cuda::synchronize(device.index());
  // A graph must be captured on a non-default stream; the whole loop runs there.
  std::optional<c10::cuda::CUDAStreamGuard> stream_guard;
  if (use_graphs) stream_guard.emplace(c10::cuda::getStreamFromPool(false, device.index()));
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  at::Tensor static_images;
  at::Tensor static_labels;
  at::Tensor static_packed;

  at::cuda::CUDAEvent first_start(cudaEventDefault);
  std::unique_ptr<InFlightStep> pending;
  auto report = [&](InFlightStep& s) {
    s.end.synchronize();
    StepTiming timing;
    timing.iteration = s.iteration;
    timing.step_time_s = s.start.elapsed_time(s.end) / 1000.0;
    timing.compute_time_s = s.compute_start.elapsed_time(s.end) / 1000.0;
    timing.data_time_s = s.data_time_s;
    timing.elapsed_s = first_start.elapsed_time(s.end) / 1000.0;
    const float* values = s.host.data_ptr<float>();
    timing.loss = values[0];
    timing.lr = values[1];
    if (s.host.numel() > 2) timing.loss_scale = values[2];
    reporter.Iteration(timing);
    data.Done(s.batch);
  };
  auto pack = [&](const at::Tensor& loss) {
    std::vector<at::Tensor> parts = {loss.to(at::kFloat).reshape({1}),
                                     step.last_lr().to(at::kFloat).reshape({1})};
    if (step.scaler() != nullptr) parts.push_back(step.scaler()->scale().reshape({1}));
    return at::cat(parts);
  };

  Clock::time_point window_start = Clock::now();
  for (int64_t i = 1; i <= options.iterations; ++i) {
    auto current = std::make_unique<InFlightStep>();
    current->iteration = i;
    if (i == 1) first_start.record();
    current->start.record();
    const Clock::time_point fetch_start = Clock::now();
    auto batch = data.Next();
    if (!batch.ok()) return batch.status();
    current->batch = batch->number;
    current->data_time_s = Seconds(Clock::now() - fetch_start);
    current->compute_start.record();
    at::Tensor packed;
    if (!use_graphs || i <= kGraphWarmupSteps) {
      packed = pack(step.Run(batch->images, batch->labels));
    } else {
      if (!graph) {
        // Both data sources hand out the same device buffers every step: they
        // are the graph's inputs, so a replay needs no extra copy.
        static_images = batch->images;
        static_labels = batch->labels;
        const bool cache = at::autocast::is_autocast_cache_enabled();
        at::autocast::set_autocast_cache_enabled(false);
        graph = std::make_unique<at::cuda::CUDAGraph>();
        graph->capture_begin();
        static_packed = pack(step.Run(static_images, static_labels));
        graph->capture_end();
        at::autocast::set_autocast_cache_enabled(cache);
      } else {
        if (batch->images.data_ptr() != static_images.data_ptr()) {
          static_images.copy_(batch->images, /*non_blocking=*/true);
          static_labels.copy_(batch->labels, /*non_blocking=*/true);
        }
      }
      graph->replay();
      packed = static_packed;
    }
    current->host = at::empty(packed.sizes(), packed.options().device(at::kCPU).pinned_memory(true));
    current->host.copy_(packed, /*non_blocking=*/true);
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

std::optional<int64_t> PeakDeviceMemory(const c10::Device& device) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  return static_cast<int64_t>(stats.allocated_bytes[0].peak);  // [0]: StatType::AGGREGATE
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
  const bool host_memory_cache = options.host_memory_cache == Toggle::kAuto
                                     ? device.is_cpu()
                                     : options.host_memory_cache == Toggle::kOn;
  if (host_memory_cache) BENCH_TRAIN_RETURN_IF_ERROR(KeepFreedHostMemory());
#ifdef BENCH_WITH_CUDA
  if (device.is_cuda()) c10::cuda::set_device(device.index());
#endif
  BENCH_TRAIN_ASSIGN_OR_RETURN(const PrecisionPlan plan, PlanPrecision(options.precision, device));
  const bool channels_last = options.channels_last == Toggle::kAuto
                                 ? device.is_cuda()
                                 : options.channels_last == Toggle::kOn;
  bool use_graphs = false;
  if (options.cuda_graphs == Toggle::kOn) {
    if (!device.is_cuda()) {
      return InvalidArgumentError("--cuda-graphs on needs a CUDA device");
    }
    if (rendezvous.distributed()) {
      return InvalidArgumentError("--cuda-graphs on: not with more than one rank (the gradient "
                                  "all-reduce is not captured); use --cuda-graphs off");
    }
    use_graphs = true;
  } else if (options.cuda_graphs == Toggle::kAuto) {
    // Where it helps (launch-bound small batches) and the capture fits in warm-up.
    use_graphs = device.is_cuda() && !rendezvous.distributed() && options.batch_size <= 128 &&
                 options.warmup_iterations > kGraphWarmupSteps;
  }
  if (use_graphs && options.iterations <= kGraphWarmupSteps) use_graphs = false;  // no replay
#ifdef BENCH_WITH_CUDA
  if (device.is_cuda()) {
    at::globalContext().setBenchmarkCuDNN(true);
    if (plan.name == "fp32" || plan.name == "tf32") {
      at::globalContext().setAllowTF32CuBLAS(plan.tf32);
      at::globalContext().setAllowTF32CuDNN(plan.tf32);
    }
  }
#endif

  // Data first: a missing or empty folder is an error before any training.
  std::unique_ptr<DataSource> data;
  int64_t dataset_images = 0;
  int64_t dataset_classes = 0;
  int loader_threads = 0;
  if (options.data == kDataImageFolder) {
    BENCH_TRAIN_ASSIGN_OR_RETURN(std::unique_ptr<ImageFolderData> folder,
                                 ImageFolderData::Open(options, device));
    dataset_images = folder->loader().num_files();
    dataset_classes = folder->loader().num_classes();
    loader_threads = ImageFolderData::LoaderThreads(options);
    if (dataset_classes != options.num_classes) {
      Log(rank, "note: " + std::to_string(dataset_classes) + " class folders, " +
                    std::to_string(options.num_classes) + " classifier outputs (--num-classes)");
    }
    if (dataset_classes > options.num_classes) {
      return InvalidArgumentError("--data imagefolder: " + std::to_string(dataset_classes) +
                                  " classes under '" + options.data_dir +
                                  "' but --num-classes is " + std::to_string(options.num_classes));
    }
    data = std::move(folder);
  }

  torch::manual_seed(options.seed);  // same weights on every rank (rank 0's are broadcast too)
  ModelOptions model_options;
  model_options.num_classes = options.num_classes;
  model_options.zero_init_residual = options.zero_init_residual;
  BENCH_TRAIN_ASSIGN_OR_RETURN(std::shared_ptr<ImageClassifier> model,
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

  StepOptions step_options;
  step_options.device = device;
  step_options.autocast = plan.autocast;
  step_options.autocast_dtype = plan.autocast_dtype;
  step_options.loss_scaling = plan.loss_scaling;
  step_options.channels_last = channels_last;
  step_options.lr = EffectiveLearningRate(options);
  step_options.lr_warmup = EffectiveLrWarmup(options);
  step_options.total_steps = options.iterations;
  step_options.sgd.momentum = options.momentum;
  step_options.sgd.weight_decay = options.weight_decay;
  step_options.sgd.bn_weight_decay = options.bn_weight_decay;
  step_options.label_smoothing = options.label_smoothing;
  step_options.broadcast_buffers = options.broadcast_buffers;
  TrainingStep step(model, step_options, communicator.get());

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
  start.requested_precision = options.precision;
  start.loss_scaling = plan.loss_scaling;
  start.data = options.data;
  start.dataset_images = dataset_images;
  start.dataset_classes = dataset_classes;
  start.loader_threads = loader_threads;
  start.channels_last = channels_last;
  start.cuda_graphs = use_graphs;
  start.host_memory_cache = host_memory_cache;
  start.broadcast_buffers = rendezvous.distributed() && options.broadcast_buffers;
  start.lr = step_options.lr;
  start.lr_warmup_iterations = step_options.lr_warmup;
  start.momentum = options.momentum;
  start.weight_decay = options.weight_decay;
  start.bn_weight_decay = options.bn_weight_decay;
  start.label_smoothing = options.label_smoothing;
  start.zero_init_residual = options.zero_init_residual;
  start.allreduce_buckets =
      step.reducer() != nullptr ? static_cast<int64_t>(step.reducer()->num_buckets()) : 0;
  events.Write(start);
  Log(rank, options.model + " (" + std::to_string(parameters) + " parameters), " + plan.name +
                " on " + start.device + ", batch " + std::to_string(options.batch_size) + " at " +
                std::to_string(options.image_size) + "px, " + std::to_string(at::get_num_threads()) +
                " threads, backend " + backend + (channels_last ? ", channels_last" : "") +
                (use_graphs ? ", CUDA graphs" : "") + ", data " + options.data);

  if (device.is_cpu() && !plan.autocast && at::get_num_threads() == 1 && options.batch_size < 16) {
    // libtorch's heuristic: 1x1 convolutions skip oneDNN when single-threaded
    // with a batch under 16, and go through BLAS (very slow on a reference BLAS).
    Log(rank, "note: 1 intra-op thread and batch < 16: libtorch runs 1x1 convolutions "
              "without oneDNN; consider --threads N or a larger --bs");
  }

  if (!data) data = std::make_unique<SyntheticData>(options, device, rank);
  Reporter reporter(options, events);
  double window_s = 0;
  std::optional<int64_t> peak_memory;
  if (device.is_cuda()) {
#ifdef BENCH_WITH_CUDA
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
    BENCH_TRAIN_ASSIGN_OR_RETURN(window_s,
                                 RunCudaLoop(options, device, step, *data, use_graphs, reporter));
    peak_memory = PeakDeviceMemory(device);
#endif
  } else {
    BENCH_TRAIN_ASSIGN_OR_RETURN(window_s, RunHostLoop(options, step, *data, reporter));
  }

  SummaryEvent summary = reporter.Summary(window_s);
  if (step.scaler() != nullptr) {
    summary.skipped_steps = static_cast<int64_t>(step.scaler()->skipped_steps().item<double>());
  }
  summary.corrupt_files = data->corrupt_files();
  summary.peak_memory_bytes = peak_memory;
  events.Write(summary);
  Log(rank, Format("%.2f images/s over %.3f s", summary.images_per_second, summary.window_s) +
                " (" + std::to_string(summary.measured_images) + " images)" +
                (summary.skipped_steps > 0
                     ? ", " + std::to_string(summary.skipped_steps) + " skipped fp16 steps"
                     : "") +
                (summary.corrupt_files > 0
                     ? ", " + std::to_string(summary.corrupt_files) + " unreadable images skipped"
                     : ""));
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
