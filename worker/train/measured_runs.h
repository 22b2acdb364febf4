// A rank's measured runs: the run on its data and, with --data-vs-compute, the same steps
// again on synthetic data.
//
// RunMeasured runs the training loop (training_loop.h) on `data` with a runner from
// `make_runner`, its events going through `reporter`, and returns the run's summary. With
// options.data_vs_compute it then destroys that runner and runs the same steps again on the
// data `open_synthetic` gives for a copy of the options with data "synthetic", with a new
// runner from `make_runner`, a warm-up and a measured window of its own, its events
// discarded; the summary gets that run's images/s (synthetic_images_per_second) and the
// ratio (data_vs_compute).
//
// Each run has its own runner because a CUDA graph replays the tensors it was captured on:
// the real run's graph holds the real data's uint8 NHWC batch, the synthetic run's batch is
// float NCHW of another shape, so the second run captures its own graph. The first runner
// is destroyed before the second is made: a CUDA graph capture makes its stream current for
// its lifetime, and such guards must nest.
//
// Errors: the loop's (training_loop.h) and open_synthetic's, as they are. Nothing here is
// thread-safe; one call per process at a time.
#ifndef BENCHFLEET_WORKER_TRAIN_MEASURED_RUNS_H_
#define BENCHFLEET_WORKER_TRAIN_MEASURED_RUNS_H_

#include <functional>
#include <memory>

#include "worker/train/data_source.h"
#include "worker/train/event_writer.h"
#include "worker/train/options.h"
#include "worker/train/status.h"
#include "worker/train/step_report.h"
#include "worker/train/training_loop.h"

namespace bench_train {

// A runner for one run of the loop (eager, or a graph runner with a capture of its own).
using RunnerFactory = std::function<std::unique_ptr<StepRunner>()>;
// Opens the synthetic run's data for the options it is given.
using DataOpener = std::function<StatusOr<std::unique_ptr<DataSource>>(const TrainOptions&)>;
// The synthetic run's start event, for its options, data and settled runner.
using StartEventFactory =
    std::function<StartEvent(const TrainOptions&, const DataSource&, const StepRunner&)>;

// `write_start` is the real run's (RunTrainingLoop's); `make_synthetic_start` is used only
// for the synthetic run, whose start event is discarded with its other events.
StatusOr<SummaryEvent> RunMeasured(const TrainOptions& options, const RunnerFactory& make_runner,
                                   DataSource& data, StepClock& clock, StepReporter& reporter,
                                   const std::function<void(const StepRunner&)>& write_start,
                                   const DataOpener& open_synthetic,
                                   const StartEventFactory& make_synthetic_start);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_MEASURED_RUNS_H_
