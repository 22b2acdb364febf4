// From measured steps to bench-train's `iter` and `summary` events.
//
// Torch-free. Throughput is defined once (docs/trainer-events.md): the images
// of the measured iterations (those after warm-up) divided by the wall time of
// the measured window, never the mean of per-step rates; Throughput() is that
// rule.
//
// StepReporter writes one `iter` event per step, in order. It holds them back
// until the `start` event is out (WriteStart): what the start event says about
// CUDA graphs is known only once the capture after the first eager steps has
// run or fallen back. It counts non-finite losses and reports a diverged loss
// once `max_nonfinite_iters` iterations in a row had one. Not thread-safe.
#ifndef BENCHFLEET_WORKER_TRAIN_STEP_REPORT_H_
#define BENCHFLEET_WORKER_TRAIN_STEP_REPORT_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "worker/train/event_writer.h"
#include "worker/train/options.h"
#include "worker/train/status.h"

namespace bench_train {

// A step's compute time cut into its phases (docs/trainer-events.md): forward and
// backward, the wait for the other ranks beyond what overlapped with backward (0 with one
// rank), and the optimizer (with the rest of the step after that wait).
struct StepSplit {
  double forward_backward_s = 0;
  double allreduce_wait_s = 0;
  double optimizer_s = 0;
};

// One step as the loop measured it.
struct StepTiming {
  int64_t iteration = 0;  // 1-based
  double step_time_s = 0;
  double data_time_s = 0;
  double compute_time_s = 0;
  double elapsed_s = 0;  // start of iteration 1 to the end of this one
  double loss = 0;       // may be NaN or infinite
  double lr = 0;
  std::optional<double> loss_scale;
  std::optional<StepSplit> split;  // unset: the step was not split (a replayed CUDA graph)
};

// `images` / `window_s`; 0 for an empty or non-positive window.
double Throughput(int64_t images, double window_s);

// The q-quantile (0 <= q <= 1) with linear interpolation between closest ranks
// (numpy's default); 0 for no values.
double Percentile(std::vector<double> values, double q);

class StepReporter {
 public:
  // Both must outlive the reporter.
  StepReporter(const TrainOptions& options, EventWriter& events);

  // Writes `start`, then every iteration held so far. Call once.
  void WriteStart(const StartEvent& start);
  bool start_written() const { return start_written_; }

  // Writes (or holds, before WriteStart) the step's `iter` event and adds a
  // measured step to the summary. Returns kInternal "loss diverged: ..." once
  // the last options.max_nonfinite_iters iterations (> 0) all had a non-finite
  // loss; the event is written (or held) first.
  Status Iteration(const StepTiming& timing);

  // The summary for a measured window of `window_s` seconds (skipped_steps,
  // corrupt_files and peak_memory_bytes are the caller's to fill).
  SummaryEvent Summary(double window_s) const;

  int64_t nonfinite_losses() const { return nonfinite_losses_; }

 private:
  const TrainOptions& options_;
  EventWriter& events_;
  bool start_written_ = false;
  std::vector<IterEvent> held_;
  std::vector<double> step_times_;
  double data_time_total_ = 0;
  double compute_time_total_ = 0;
  StepSplit split_total_;             // measured steps
  bool every_measured_split_ = true;  // so far
  int64_t nonfinite_losses_ = 0;
  int64_t nonfinite_run_ = 0;        // consecutive, ending at the last iteration
  int64_t nonfinite_run_start_ = 0;  // first iteration of that run
};

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_STEP_REPORT_H_
