#include "worker/train/training_loop.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <deque>
#include <exception>
#include <optional>
#include <thread>
#include <utility>

#include "worker/train/training_step.h"

#ifdef BENCH_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>
#endif

namespace bench_train {
namespace {

using HostClock = std::chrono::steady_clock;

double HostSeconds(HostClock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

std::string ErrorText(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    return c10_error->what_without_backtrace();
  }
  return e.what();
}

std::vector<float> ToFloats(const at::Tensor& outputs) {
  const at::Tensor host = outputs.to(at::kFloat).contiguous();
  const float* begin = host.data_ptr<float>();
  return std::vector<float>(begin, begin + host.numel());
}

// ---- Runners
// -------------------------------------------------------------------

class EagerRunner : public StepRunner {
 public:
  explicit EagerRunner(StepFunction step) : step_(std::move(step)) {}
  at::Tensor Run(const DeviceBatch& batch) override { return step_(batch.images, batch.labels, batch.boxes); }
  bool settled() const override { return true; }
  bool graphed() const override { return false; }
  const std::string& fallback_reason() const override { return no_reason_; }

 private:
  StepFunction step_;
  std::string no_reason_;
};

class GraphRunner : public StepRunner {
 public:
  GraphRunner(StepFunction step, std::unique_ptr<StepCapture> capture, int64_t eager_steps)
      : step_(std::move(step)), capture_(std::move(capture)), eager_steps_left_(eager_steps) {}

  at::Tensor Run(const DeviceBatch& batch) override {
    if (eager_steps_left_ > 0) {
      --eager_steps_left_;
      return step_(batch.images, batch.labels, batch.boxes);
    }
    if (!settled_) {
      settled_ = true;
      // Both data sources hand out the same device buffers every step: they
      // become the graph's inputs, so a replay needs no extra copy.
      images_ = batch.images;
      labels_ = batch.labels;
      boxes_ = batch.boxes;
      try {
        outputs_ = capture_->Capture([this] { return step_(images_, labels_, boxes_); });
        graphed_ = true;
      } catch (const std::exception& e) {
        fallback_reason_ = "CUDA graph capture failed, running eagerly: " + ErrorText(e);
        // Orders the steps so far (on the capture's stream) before the eager steps that
        // follow (on the stream current before it): see StepCapture::Abandon.
        capture_->Abandon();
        capture_.reset();
      }
    }
    if (!graphed_) return step_(batch.images, batch.labels, batch.boxes);
    if (batch.images.data_ptr() != images_.data_ptr()) {
      images_.copy_(batch.images, /*non_blocking=*/true);
      labels_.copy_(batch.labels, /*non_blocking=*/true);
      if (boxes_.defined()) boxes_.copy_(batch.boxes, /*non_blocking=*/true);
    }
    capture_->Replay();
    return outputs_;
  }
  bool settled() const override { return settled_; }
  bool graphed() const override { return graphed_; }
  const std::string& fallback_reason() const override { return fallback_reason_; }

 private:
  StepFunction step_;
  std::unique_ptr<StepCapture> capture_;
  int64_t eager_steps_left_;
  bool settled_ = false;
  bool graphed_ = false;
  std::string fallback_reason_;
  at::Tensor images_;
  at::Tensor labels_;
  at::Tensor boxes_;
  at::Tensor outputs_;
};

// ---- Clocks
// --------------------------------------------------------------------

double Seconds(HostClock::duration d) { return std::chrono::duration<double>(d).count(); }

class HostStepClock : public StepClock {
 public:
  struct HostMarks : Marks {
    HostClock::time_point start;
    HostClock::time_point compute_start;
    HostClock::time_point end;
    HostClock::time_point last_mark;         // compute_start, then each Mark
    std::optional<StepSplit> split;          // set by the first Mark
    double measured_forward_backward_s = 0;  // before any extra compute
    std::vector<float> outputs;
  };

  explicit HostStepClock(HostNow now) : now_(std::move(now)) {}

  std::unique_ptr<Marks> Begin() override {
    auto marks = std::make_unique<HostMarks>();
    marks->start = now_();
    if (!first_) first_ = marks->start;
    return marks;
  }
  void ComputeBegins(Marks& marks) override {
    auto& host = static_cast<HostMarks&>(marks);
    host.compute_start = now_();
    host.last_mark = host.compute_start;
    open_ = &host;
  }
  void Mark(StepPhase phase) override {
    if (open_ == nullptr) return;
    HostMarks& host = *open_;
    if (!host.split) host.split.emplace();
    HostClock::time_point now = now_();
    if (phase == StepPhase::kForwardBackward) {
      host.measured_forward_backward_s += Seconds(now - host.last_mark);
      if (host.extra_compute > 0) {
        // Fault injection: forward and backward take extra_compute longer. Busy until the
        // step's forward-backward time is that much more than was measured.
        const double target = host.measured_forward_backward_s * (1 + host.extra_compute);
        while (host.split->forward_backward_s + Seconds(now - host.last_mark) < target) {
          std::this_thread::yield();
          now = now_();
        }
      }
      host.split->forward_backward_s += Seconds(now - host.last_mark);
    } else {
      host.split->allreduce_wait_s += Seconds(now - host.last_mark);
    }
    host.last_mark = now;
  }
  void End(Marks& marks, const at::Tensor& outputs) override {
    auto& host = static_cast<HostMarks&>(marks);
    host.outputs = ToFloats(outputs);
    host.end = now_();
    open_ = nullptr;
  }
  StepReading Read(Marks& marks) override {
    auto& host = static_cast<HostMarks&>(marks);
    StepReading reading;
    reading.step_time_s = Seconds(host.end - host.start);
    reading.compute_time_s = Seconds(host.end - host.compute_start);
    reading.elapsed_s = Seconds(host.end - *first_);
    if (host.split) {
      reading.split = host.split;
      reading.split->optimizer_s = Seconds(host.end - host.last_mark);
    }
    reading.outputs = std::move(host.outputs);
    return reading;
  }
  double Synchronize() override { return HostSeconds(now_()); }

 private:
  HostNow now_;
  std::optional<HostClock::time_point> first_;
  HostMarks* open_ = nullptr;  // the step between ComputeBegins and End
};

#ifdef BENCH_WITH_CUDA
class CudaGraphCapture : public StepCapture {
 public:
  explicit CudaGraphCapture(const c10::Device& device) : device_(device) {
    stream_guard_.emplace(c10::cuda::getStreamFromPool(false, device.index()));
  }

  at::Tensor Capture(const std::function<at::Tensor()>& step) override {
    // Autocast's cast cache would hold tensors made outside the graph.
    const bool cache = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    graph_ = std::make_unique<at::cuda::CUDAGraph>();
    at::Tensor outputs;
    try {
      graph_->capture_begin();
      outputs = step();
      graph_->capture_end();
    } catch (...) {
      at::autocast::set_autocast_cache_enabled(cache);
      // Leave capture mode so the stream can run eager work again.
      cudaGraph_t partial = nullptr;
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
      if (cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
          status != cudaStreamCaptureStatusNone) {
        if (cudaStreamEndCapture(stream, &partial) == cudaSuccess && partial != nullptr) {
          cudaGraphDestroy(partial);
        }
      }
      (void)cudaGetLastError();
      graph_.reset();
      throw;
    }
    at::autocast::set_autocast_cache_enabled(cache);
    return outputs;
  }
  void Replay() override { graph_->replay(); }
  void Abandon() override {
    // What orders what: the eager warm-up steps, the failed step's batch copy (the data
    // source enqueues it on the current stream) and the clock's events of that step were
    // queued on this capture stream; the eager steps from here on, and their batch copies
    // and events, go on the stream that was current before (the device's default stream).
    // Two streams are not ordered with each other: without this wait the first eager step
    // could read the weights before the last warm-up step's update of them is done, or the
    // batch before its copy has landed. Waiting here, on the host, for the whole device
    // means everything queued so far is done before anything later is enqueued.
    torch::cuda::synchronize(device_.index());
    stream_guard_.reset();  // back to the stream that was current before the capture's
  }

 private:
  c10::Device device_;
  std::optional<c10::cuda::CUDAStreamGuard> stream_guard_;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
};

// Events are read one step late; the outputs are copied to pinned memory before
// the end event, so reading them waits only for that event.
//
// The step split: an event at each phase mark, on the same stream as the step's other
// events, so the time between two of them is the stream's time in that phase; a wait for
// the all-reduce (NCCL's work ordered before the current stream) shows as the time from
// the end of backward to the mark after the wait. Marks made while the current stream is
// capturing a CUDA graph are dropped (an event recorded in a capture is a graph node, not
// a timestamp): captured and replayed steps have no split.
class CudaStepClock : public StepClock {
 public:
  struct CudaMarks : Marks {
    at::cuda::CUDAEvent start{cudaEventDefault};
    at::cuda::CUDAEvent compute_start{cudaEventDefault};
    at::cuda::CUDAEvent end{cudaEventDefault};
    // The phase marks in order: what the interval before each one was, and its event.
    std::vector<std::pair<StepPhase, std::unique_ptr<at::cuda::CUDAEvent>>> phases;
    at::Tensor host_outputs;
  };

  explicit CudaStepClock(const c10::Device& device) : device_(device) {}

  std::unique_ptr<Marks> Begin() override {
    auto marks = std::make_unique<CudaMarks>();
    if (!first_recorded_) {
      first_.record();
      first_recorded_ = true;
    }
    marks->start.record();
    return marks;
  }
  void ComputeBegins(Marks& marks) override {
    auto& cuda = static_cast<CudaMarks&>(marks);
    cuda.compute_start.record();
    open_ = &cuda;
  }
  void Mark(StepPhase phase) override {
    if (open_ == nullptr) return;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device_.index()).stream();
    if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
        capture != cudaStreamCaptureStatusNone) {
      return;
    }
    auto event = std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault);
    event->record();
    open_->phases.emplace_back(phase, std::move(event));
  }
  void End(Marks& marks, const at::Tensor& outputs) override {
    auto& cuda = static_cast<CudaMarks&>(marks);
    cuda.host_outputs =
        at::empty(outputs.sizes(), outputs.options().device(at::kCPU).pinned_memory(true));
    cuda.host_outputs.copy_(outputs, /*non_blocking=*/true);
    cuda.end.record();
    open_ = nullptr;
  }
  StepReading Read(Marks& marks) override {
    auto& cuda = static_cast<CudaMarks&>(marks);
    cuda.end.synchronize();
    StepReading reading;
    reading.step_time_s = cuda.start.elapsed_time(cuda.end) / 1000.0;
    reading.compute_time_s = cuda.compute_start.elapsed_time(cuda.end) / 1000.0;
    reading.elapsed_s = first_.elapsed_time(cuda.end) / 1000.0;
    if (!cuda.phases.empty()) {
      StepSplit split;
      const at::cuda::CUDAEvent* previous = &cuda.compute_start;
      for (const auto& [phase, event] : cuda.phases) {
        const double seconds = previous->elapsed_time(*event) / 1000.0;
        if (phase == StepPhase::kForwardBackward) {
          split.forward_backward_s += seconds;
        } else {
          split.allreduce_wait_s += seconds;
        }
        previous = event.get();
      }
      split.optimizer_s = previous->elapsed_time(cuda.end) / 1000.0;
      reading.split = split;
    }
    reading.outputs = ToFloats(cuda.host_outputs);
    return reading;
  }
  double Synchronize() override {
    torch::cuda::synchronize(device_.index());
    return HostSeconds(HostClock::now());
  }

 private:
  c10::Device device_;
  at::cuda::CUDAEvent first_{cudaEventDefault};
  bool first_recorded_ = false;
  CudaMarks* open_ = nullptr;  // the step between ComputeBegins and End
};
#endif

}  // namespace

at::Tensor PackStepOutputs(const at::Tensor& loss, const at::Tensor& lr,
                           const at::Tensor& loss_scale) {
  std::vector<at::Tensor> parts = {loss.to(at::kFloat).reshape({1}),
                                   lr.to(at::kFloat).reshape({1})};
  if (loss_scale.defined()) parts.push_back(loss_scale.to(at::kFloat).reshape({1}));
  return at::cat(parts);
}

StepFunction PackedStep(TrainingStep& step) {
  return [&step](const at::Tensor& images, const at::Tensor& labels, const at::Tensor& boxes) {
    const at::Tensor loss = step.Run(images, labels, boxes);
    return PackStepOutputs(loss, step.last_lr(),
                           step.scaler() != nullptr ? step.scaler()->scale() : at::Tensor());
  };
}

std::unique_ptr<StepRunner> MakeEagerRunner(StepFunction step) {
  return std::make_unique<EagerRunner>(std::move(step));
}

std::unique_ptr<StepRunner> MakeGraphRunner(StepFunction step, std::unique_ptr<StepCapture> capture,
                                            int64_t eager_steps) {
  return std::make_unique<GraphRunner>(std::move(step), std::move(capture), eager_steps);
}

std::unique_ptr<StepCapture> MakeCudaGraphCapture(const c10::Device& device) {
#ifdef BENCH_WITH_CUDA
  return std::make_unique<CudaGraphCapture>(device);
#else
  (void)device;
  return nullptr;
#endif
}

std::unique_ptr<StepClock> MakeHostClock(HostNow now) {
  if (!now) now = [] { return HostClock::now(); };
  return std::make_unique<HostStepClock>(std::move(now));
}

std::unique_ptr<StepClock> MakeCudaClock(const c10::Device& device) {
#ifdef BENCH_WITH_CUDA
  return std::make_unique<CudaStepClock>(device);
#else
  (void)device;
  return nullptr;
#endif
}

StatusOr<double> RunTrainingLoop(const TrainOptions& options, StepRunner& runner, DataSource& data,
                                 StepClock& clock, StepReporter& reporter,
                                 const std::function<void(const StepRunner&)>& write_start) {
  struct Pending {
    int64_t iteration = 0;
    int64_t batch = 0;
    double data_time_s = 0;
    std::unique_ptr<StepClock::Marks> marks;
  };
  std::deque<Pending> pending;
  auto read_oldest = [&]() -> Status {
    Pending step = std::move(pending.front());
    pending.pop_front();
    const StepReading reading = clock.Read(*step.marks);
    data.Done(step.batch);
    StepTiming timing;
    timing.iteration = step.iteration;
    timing.step_time_s = reading.step_time_s;
    timing.compute_time_s = reading.compute_time_s;
    timing.data_time_s = step.data_time_s;
    timing.elapsed_s = reading.elapsed_s;
    timing.split = reading.split;
    if (reading.outputs.size() >= 2) {
      timing.loss = reading.outputs[0];
      timing.lr = reading.outputs[1];
    }
    if (reading.outputs.size() >= 3) timing.loss_scale = reading.outputs[2];
    return reporter.Iteration(timing);
  };
  auto read_all = [&]() -> Status {
    while (!pending.empty()) BENCH_TRAIN_RETURN_IF_ERROR(read_oldest());
    return Status::Ok();
  };
  bool announced = false;
  auto announce_when_settled = [&] {
    if (announced || !runner.settled()) return;
    announced = true;
    write_start(runner);
  };

  auto run = [&]() -> StatusOr<double> {
    announce_when_settled();
    double window_start = clock.Synchronize();
    for (int64_t i = 1; i <= options.iterations; ++i) {
      Pending step;
      step.iteration = i;
      step.marks = clock.Begin();
      step.marks->extra_compute = options.faults.ExtraCompute(i);
      const HostClock::time_point fetch_start = HostClock::now();
      auto batch = data.Next();
      if (!batch.ok()) return batch.status();
      const double stall_s = options.faults.DataStallSeconds(i);
      if (stall_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(stall_s));
      step.batch = batch->number;
      step.data_time_s = std::chrono::duration<double>(HostClock::now() - fetch_start).count();
      clock.ComputeBegins(*step.marks);
      const at::Tensor outputs = runner.Run(*batch);
      if (options.test_step_sleep_ms > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(options.test_step_sleep_ms));
      }
      clock.End(*step.marks, outputs);
      pending.push_back(std::move(step));
      announce_when_settled();
      while (pending.size() > kStepReadLag) BENCH_TRAIN_RETURN_IF_ERROR(read_oldest());
      if (i == options.warmup_iterations) {
        BENCH_TRAIN_RETURN_IF_ERROR(read_all());
        window_start = clock.Synchronize();
      }
    }
    BENCH_TRAIN_RETURN_IF_ERROR(read_all());
    return clock.Synchronize() - window_start;
  };
  StatusOr<double> window = run();
  // A run that ended before the runner settled: its held iterations still go
  // out.
  if (!announced) write_start(runner);
  return window;
}

}  // namespace bench_train
