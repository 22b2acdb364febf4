// The one timing loop of bench-train, for the CPU and CUDA alike.
//
// RunTrainingLoop runs options.iterations steps. For each it marks the step's
// start on the StepClock, takes a batch from the DataSource (the host time that
// takes is the step's data time), marks where compute begins, runs the step
// through the StepRunner and hands the step's outputs to the clock. A step is
// read (its times and outputs; on CUDA that waits for its end event) one step
// late, after the next step has been enqueued, so the host never waits on the
// step it just enqueued; its batch goes back to the data source once it is
// read. At the end of warm-up every pending step is read and the device
// synchronized: that instant opens the measured window, and the synchronize
// after the last step closes it. Only the clock and the runner differ between
// devices: HostStepClock (the CPU, where every step has completed when it
// returns) and the CUDA clock (CUDA events); eager steps, or a CUDA graph that
// is captured after a few eager steps and falls back to eager if the capture
// fails. The `start` event is written once the runner is settled (eager: before
// the first step; graphs: after the capture), and the reporter holds the iter
// events until then.
//
// The step split: the clock is the TrainingStep's StepPhaseMarker (trainer.cc sets it),
// so a step's compute interval is cut where the step marks the end of each phase; what
// follows the last mark is the optimizer. The host clock takes host times; the CUDA clock
// records an event on the current stream at each mark (nothing waits on them until the
// step is read, one step late). Inside a CUDA graph capture no mark is recorded (an event
// recorded during capture becomes a node of the graph and cannot be timed), so a replayed
// step has no split: only its whole step and compute times (docs/trainer-events.md).
//
// A step's outputs are one fp32 tensor [loss, lr] or [loss, lr, loss scale]
// (PackStepOutputs). Nothing here is thread-safe; one loop per process.
#ifndef BENCHFLEET_WORKER_TRAIN_TRAINING_LOOP_H_
#define BENCHFLEET_WORKER_TRAIN_TRAINING_LOOP_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "worker/train/data_source.h"
#include "worker/train/options.h"
#include "worker/train/status.h"
#include "worker/train/step_report.h"
#include "worker/train/training_step.h"

namespace bench_train {

// Steps are read this many steps after they were enqueued.
inline constexpr size_t kStepReadLag = 1;

// [loss, lr(, scale)] as one fp32 tensor on the step's device.
at::Tensor PackStepOutputs(const at::Tensor& loss, const at::Tensor& lr,
                           const at::Tensor& loss_scale);

// Enqueues one step on a batch (DeviceBatch's tensors; `boxes` undefined for a
// classifier) and returns its packed outputs.
using StepFunction = std::function<at::Tensor(const at::Tensor& images, const at::Tensor& labels,
                                              const at::Tensor& boxes)>;

// `step`'s Run with its loss, LR and loss scale packed.
StepFunction PackedStep(TrainingStep& step);

// Records a step once and replays it: a CUDA graph on CUDA; fakes in tests.
class StepCapture {
 public:
  virtual ~StepCapture() = default;
  // Captures `step` (without running it) and returns the tensor its replays
  // write their outputs into. Throws (c10::Error or std::exception) if the
  // capture fails; the capture is then abandoned and nothing was run.
  virtual at::Tensor Capture(const std::function<at::Tensor()>& step) = 0;
  virtual void Replay() = 0;
  // Called once after Capture threw, before the first eager step that follows: ends the
  // capture's hold on the device so that eager steps can follow in order. On CUDA the
  // steps so far ran on the capture's stream and the eager ones run on the stream that was
  // current before it; this waits for the device to finish everything queued so far, then
  // makes that stream current again. The object is destroyed after it.
  virtual void Abandon() = 0;
};

// Runs each step eagerly, or replays a captured graph.
class StepRunner {
 public:
  virtual ~StepRunner() = default;
  virtual at::Tensor Run(const DeviceBatch& batch) = 0;
  // Whether how steps run is decided (always, for eager; for a graph runner,
  // once its capture has succeeded or fallen back).
  virtual bool settled() const = 0;
  // Steps are replayed from a captured graph.
  virtual bool graphed() const = 0;
  // Why a planned capture fell back to eager steps; empty if it did not.
  virtual const std::string& fallback_reason() const = 0;
};

std::unique_ptr<StepRunner> MakeEagerRunner(StepFunction step);
// Runs `eager_steps` steps eagerly, captures the next one with `capture` and
// replays it from then on (a batch in other tensors than the captured ones is
// copied into them first). If the capture throws, the capture is abandoned
// (StepCapture::Abandon) and released, every step runs eagerly and
// fallback_reason() says why. A runner serves one run of the loop: its graph
// replays the tensors it was captured on.
std::unique_ptr<StepRunner> MakeGraphRunner(StepFunction step, std::unique_ptr<StepCapture> capture,
                                            int64_t eager_steps);
// A CUDA graph on `device`'s side stream, made current for the capture
// object's lifetime or until Abandon (a graph must be captured on a non-default
// stream). Null in a build without CUDA.
std::unique_ptr<StepCapture> MakeCudaGraphCapture(const c10::Device& device);

// One step's times and outputs, once it has completed.
struct StepReading {
  double step_time_s = 0;     // Begin to End
  double compute_time_s = 0;  // ComputeBegins to End
  double elapsed_s = 0;       // the first Begin to End
  // ComputeBegins to End cut at the step's phase marks; unset when the step made none
  // (a replayed CUDA graph, or a step without a marker).
  std::optional<StepSplit> split;
  std::vector<float> outputs;
};

// Device-specific timing: where a step's marks are taken and how they are read. Mark
// (StepPhaseMarker) applies to the step between its ComputeBegins and its End, and is
// ignored outside one.
class StepClock : public StepPhaseMarker {
 public:
  struct Marks {
    virtual ~Marks() = default;
    // Fault injection (fault_injection.h), set by the loop before the step runs: the
    // host clock stretches the step's forward and backward by this fraction at its
    // kForwardBackward mark (the CPU only; bench-train refuses it on CUDA).
    double extra_compute = 0;
  };
  virtual std::unique_ptr<Marks> Begin() = 0;    // before the step's data
  virtual void ComputeBegins(Marks& marks) = 0;  // its batch is on the device
  virtual void End(Marks& marks,
                   const at::Tensor& outputs) = 0;  // the step is enqueued
  virtual StepReading Read(Marks& marks) = 0;       // waits for the step
  // Waits for all enqueued work; returns the host's monotonic time in seconds.
  virtual double Synchronize() = 0;
  void Mark(StepPhase) override {}
};

// The host clock's time source (tests pass a fake; the default is steady_clock::now).
using HostNow = std::function<std::chrono::steady_clock::time_point()>;

// The CPU: host times; outputs are read at End (the step has completed).
std::unique_ptr<StepClock> MakeHostClock(HostNow now = nullptr);
// CUDA events on the current stream; outputs copied to pinned memory before the
// step's end event. Null in a build without CUDA.
std::unique_ptr<StepClock> MakeCudaClock(const c10::Device& device);

// Runs the loop; returns the measured window in seconds. With options.faults, each
// step's data wait is lengthened by its data stall (a sleep inside the fetch) and its
// Marks carry its extra compute. `write_start` is
// called once, with the runner, as soon as the runner is settled; it must call
// reporter.WriteStart. Stops at the first error: a batch that cannot be read,
// or the reporter's "loss diverged".
StatusOr<double> RunTrainingLoop(const TrainOptions& options, StepRunner& runner, DataSource& data,
                                 StepClock& clock, StepReporter& reporter,
                                 const std::function<void(const StepRunner&)>& write_start);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_TRAINING_LOOP_H_
