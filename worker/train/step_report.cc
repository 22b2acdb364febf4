#include "worker/train/step_report.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace bench_train {

double Throughput(int64_t images, double window_s) {
  return window_s > 0 ? static_cast<double>(images) / window_s : 0.0;
}

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const size_t lower = static_cast<size_t>(std::floor(position));
  const size_t upper = std::min(lower + 1, values.size() - 1);
  return values[lower] + (values[upper] - values[lower]) * (position - static_cast<double>(lower));
}

StepReporter::StepReporter(const TrainOptions& options, EventWriter& events)
    : options_(options), events_(events) {}

void StepReporter::WriteStart(const StartEvent& start) {
  events_.Write(start);
  start_written_ = true;
  for (const IterEvent& event : held_) events_.Write(event);
  held_.clear();
}

Status StepReporter::Iteration(const StepTiming& timing) {
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
  if (timing.split) {
    event.forward_backward_time_s = timing.split->forward_backward_s;
    event.allreduce_wait_time_s = timing.split->allreduce_wait_s;
    event.optimizer_time_s = timing.split->optimizer_s;
  }
  if (start_written_) {
    events_.Write(event);
  } else {
    held_.push_back(event);
  }
  if (!event.warmup) {
    step_times_.push_back(timing.step_time_s);
    data_time_total_ += timing.data_time_s;
    compute_time_total_ += timing.compute_time_s;
    if (timing.split) {
      split_total_.forward_backward_s += timing.split->forward_backward_s;
      split_total_.allreduce_wait_s += timing.split->allreduce_wait_s;
      split_total_.optimizer_s += timing.split->optimizer_s;
    } else {
      every_measured_split_ = false;
    }
  }

  if (std::isfinite(timing.loss)) {
    nonfinite_run_ = 0;
    return Status::Ok();
  }
  ++nonfinite_losses_;
  if (nonfinite_run_++ == 0) nonfinite_run_start_ = timing.iteration;
  if (options_.max_nonfinite_iters > 0 && nonfinite_run_ >= options_.max_nonfinite_iters) {
    return InternalError("loss diverged: non-finite loss (" + std::to_string(timing.loss) +
                         ") in " + std::to_string(nonfinite_run_) +
                         " consecutive iterations, from iteration " +
                         std::to_string(nonfinite_run_start_) +
                         "; try a lower --lr or another precision (--max-nonfinite-iters 0 "
                         "keeps training)");
  }
  return Status::Ok();
}

SummaryEvent StepReporter::Summary(double window_s) const {
  SummaryEvent summary;
  summary.rank = options_.rendezvous.rank;
  summary.measured_iterations = options_.iterations - options_.warmup_iterations;
  summary.measured_images = summary.measured_iterations * options_.batch_size;
  summary.window_s = window_s;
  summary.images_per_second = Throughput(summary.measured_images, window_s);
  summary.step_time_median_s = Percentile(step_times_, 0.5);
  summary.step_time_p50_s = summary.step_time_median_s;
  summary.step_time_p90_s = Percentile(step_times_, 0.9);
  summary.step_time_p99_s = Percentile(step_times_, 0.99);
  summary.data_time_total_s = data_time_total_;
  summary.compute_time_total_s = compute_time_total_;
  summary.compute_images_per_second = Throughput(summary.measured_images, compute_time_total_);
  if (every_measured_split_ && !step_times_.empty()) {
    summary.forward_backward_time_total_s = split_total_.forward_backward_s;
    summary.allreduce_wait_time_total_s = split_total_.allreduce_wait_s;
    summary.optimizer_time_total_s = split_total_.optimizer_s;
  }
  summary.nonfinite_losses = nonfinite_losses_;
  struct rusage usage;
  if (::getrusage(RUSAGE_SELF, &usage) == 0) {
    summary.max_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;
  }
  return summary;
}

}  // namespace bench_train
