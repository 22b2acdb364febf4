#include "worker/train/measured_runs.h"

#include <cstdio>
#include <memory>
#include <utility>

namespace bench_train {
namespace {

// The synthetic run: the same steps on synthetic data, with `runner` (its own), a warm-up
// and a measured window of its own, its events written to /dev/null. Returns its images/s
// by the same definition as the real run's.
StatusOr<double> SyntheticThroughput(const TrainOptions& options, StepRunner& runner,
                                     StepClock& clock, const DataOpener& open_synthetic,
                                     const StartEventFactory& make_start) {
  TrainOptions synthetic = options;
  synthetic.data = kDataSynthetic;
  synthetic.data_dir.clear();
  BENCH_TRAIN_ASSIGN_OR_RETURN(std::unique_ptr<DataSource> data, open_synthetic(synthetic));
  // Closed on every way out, an exception from a step included.
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> discard(std::fopen("/dev/null", "w"),
                                                                &std::fclose);
  if (discard == nullptr) return InternalError("--data-vs-compute: cannot open /dev/null");
  StatusOr<double> window = InternalError("not run");
  {
    EventWriter silent(discard.get());
    StepReporter reporter(synthetic, silent);
    window =
        RunTrainingLoop(synthetic, runner, *data, clock, reporter, [&](const StepRunner& settled) {
          reporter.WriteStart(make_start(synthetic, *data, settled));
        });
    if (window.ok()) window = reporter.Summary(*window).images_per_second;
  }
  return window;
}

}  // namespace

StatusOr<SummaryEvent> RunMeasured(const TrainOptions& options, const RunnerFactory& make_runner,
                                   DataSource& data, StepClock& clock, StepReporter& reporter,
                                   const std::function<void(const StepRunner&)>& write_start,
                                   const DataOpener& open_synthetic,
                                   const StartEventFactory& make_synthetic_start) {
  std::unique_ptr<StepRunner> runner = make_runner();
  BENCH_TRAIN_ASSIGN_OR_RETURN(
      const double window_s, RunTrainingLoop(options, *runner, data, clock, reporter, write_start));
  SummaryEvent summary = reporter.Summary(window_s);
  if (!options.data_vs_compute) return summary;

  // The real run's graph replays the real batch's tensors only: the synthetic run gets a
  // runner (and a capture) of its own. The loop ended with a synchronize, so nothing of
  // the first runner is still running; it goes first (its capture's stream guard with it).
  runner.reset();
  runner = make_runner();
  BENCH_TRAIN_ASSIGN_OR_RETURN(
      const double synthetic,
      SyntheticThroughput(options, *runner, clock, open_synthetic, make_synthetic_start));
  summary.synthetic_images_per_second = synthetic;
  if (synthetic > 0) summary.data_vs_compute = summary.images_per_second / synthetic;
  return summary;
}

}  // namespace bench_train
