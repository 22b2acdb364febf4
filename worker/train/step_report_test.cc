// The throughput rule and the step reporter: events held until the start
// event, non-finite losses counted, a persistent one ends the run.
#include "worker/train/step_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "worker/train/captured_events.h"

namespace bench_train {
namespace {

TrainOptions Options(int64_t iterations, int64_t warmup, int64_t batch) {
  TrainOptions options;
  options.iterations = iterations;
  options.warmup_iterations = warmup;
  options.batch_size = batch;
  return options;
}

StepTiming Step(int64_t iteration, double step_time_s, double loss = 2.0) {
  StepTiming timing;
  timing.iteration = iteration;
  timing.step_time_s = step_time_s;
  timing.compute_time_s = step_time_s;
  timing.loss = loss;
  return timing;
}

TEST(ThroughputTest, ImagesOverTheWindowNotTheMeanOfStepRates) {
  // 3 measured steps of 8 images taking 0.5, 1.0 and 1.5 s in a 3 s window:
  // 24 / 3 = 8 img/s, where the mean of per-step rates would say ~9.8.
  const TrainOptions options = Options(/*iterations=*/5, /*warmup=*/2, /*batch=*/8);
  CapturedEvents events;
  StepReporter reporter(options, events.writer());
  reporter.WriteStart(StartEvent{});
  const double times[] = {9.0, 9.0, 0.5, 1.0, 1.5};  // warm-up steps are slow: not counted
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(reporter.Iteration(Step(i + 1, times[i])).ok());
  const SummaryEvent summary = reporter.Summary(/*window_s=*/3.0);
  EXPECT_EQ(summary.measured_iterations, 3);
  EXPECT_EQ(summary.measured_images, 24);
  EXPECT_DOUBLE_EQ(summary.images_per_second, 8.0);
  EXPECT_DOUBLE_EQ(summary.step_time_median_s, 1.0);
  EXPECT_DOUBLE_EQ(summary.compute_time_total_s, 3.0);
  EXPECT_DOUBLE_EQ(summary.compute_images_per_second, 8.0);
  EXPECT_DOUBLE_EQ(Throughput(24, 3.0), 8.0);
  EXPECT_EQ(Throughput(24, 0.0), 0.0);
  EXPECT_EQ(Throughput(24, -1.0), 0.0);
}

TEST(StepReporterTest, TheStepSplitGoesIntoTheIterEventAndItsTotalsIntoTheSummary) {
  const TrainOptions options = Options(/*iterations=*/3, /*warmup=*/1, /*batch=*/8);
  CapturedEvents events;
  StepReporter reporter(options, events.writer());
  reporter.WriteStart(StartEvent{});
  for (int i = 1; i <= 3; ++i) {
    StepTiming timing = Step(i, 1.0);
    timing.split = StepSplit{0.5 * i, 0.25, 0.125};
    ASSERT_TRUE(reporter.Iteration(timing).ok());
  }
  const std::vector<std::string> lines = events.Lines();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[3].find(R"("forward_backward_time_s":1.5,"allreduce_wait_time_s":0.25,)"
                          R"("optimizer_time_s":0.125)"),
            std::string::npos)
      << lines[3];
  const SummaryEvent summary = reporter.Summary(/*window_s=*/2.0);
  ASSERT_TRUE(summary.forward_backward_time_total_s.has_value());
  EXPECT_DOUBLE_EQ(*summary.forward_backward_time_total_s, 1.0 + 1.5);  // measured only
  EXPECT_DOUBLE_EQ(*summary.allreduce_wait_time_total_s, 0.5);
  EXPECT_DOUBLE_EQ(*summary.optimizer_time_total_s, 0.25);
}

// A measured step without the split (a replayed CUDA graph): no totals, "no data".
TEST(StepReporterTest, NoSplitTotalsWhenAMeasuredStepHasNoSplit) {
  const TrainOptions options = Options(/*iterations=*/3, /*warmup=*/1, /*batch=*/8);
  CapturedEvents events;
  StepReporter reporter(options, events.writer());
  reporter.WriteStart(StartEvent{});
  for (int i = 1; i <= 3; ++i) {
    StepTiming timing = Step(i, 1.0);
    if (i != 3) timing.split = StepSplit{0.5, 0.25, 0.125};
    ASSERT_TRUE(reporter.Iteration(timing).ok());
  }
  EXPECT_EQ(events.Lines().back().find("forward_backward"), std::string::npos);
  const SummaryEvent summary = reporter.Summary(/*window_s=*/2.0);
  EXPECT_FALSE(summary.forward_backward_time_total_s.has_value());
  EXPECT_FALSE(summary.allreduce_wait_time_total_s.has_value());
  EXPECT_FALSE(summary.optimizer_time_total_s.has_value());
}

TEST(PercentileTest, InterpolatesLikeNumpy) {
  EXPECT_EQ(Percentile({}, 0.5), 0.0);
  EXPECT_DOUBLE_EQ(Percentile({3, 1, 2, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.9), 9.1);
  EXPECT_DOUBLE_EQ(Percentile({5}, 0.99), 5.0);
}

TEST(StepReporterTest, HoldsIterationsUntilTheStartEventIsWritten) {
  const TrainOptions options = Options(4, 1, 2);
  CapturedEvents events;
  StepReporter reporter(options, events.writer());
  ASSERT_TRUE(reporter.Iteration(Step(1, 0.1)).ok());
  ASSERT_TRUE(reporter.Iteration(Step(2, 0.1)).ok());
  EXPECT_TRUE(events.Lines().empty());
  EXPECT_FALSE(reporter.start_written());
  reporter.WriteStart(StartEvent{});
  ASSERT_TRUE(reporter.Iteration(Step(3, 0.1)).ok());
  const std::vector<std::string> lines = events.Lines();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_TRUE(StartsWith(lines[0], R"({"event":"start")")) << lines[0];
  EXPECT_TRUE(StartsWith(lines[1], R"({"event":"iter","rank":0,"iteration":1,)")) << lines[1];
  EXPECT_TRUE(StartsWith(lines[2], R"({"event":"iter","rank":0,"iteration":2,)")) << lines[2];
  EXPECT_TRUE(StartsWith(lines[3], R"({"event":"iter","rank":0,"iteration":3,)")) << lines[3];
}

TEST(StepReporterTest, CountsNonFiniteLossesAndKeepsEveryIteration) {
  TrainOptions options = Options(6, 0, 2);
  options.max_nonfinite_iters = 3;
  CapturedEvents events;
  StepReporter reporter(options, events.writer());
  reporter.WriteStart(StartEvent{});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // Two in a row, a finite one resets the run, then two more: never 3 in a row.
  const double losses[] = {nan, inf, 1.0, -inf, nan, 1.0};
  for (int i = 0; i < 6; ++i) {
    EXPECT_TRUE(reporter.Iteration(Step(i + 1, 0.1, losses[i])).ok()) << "iteration " << i + 1;
  }
  EXPECT_EQ(reporter.nonfinite_losses(), 4);
  EXPECT_EQ(reporter.Summary(1.0).nonfinite_losses, 4);
  EXPECT_EQ(events.Lines().size(),
            7u);  // start + every iteration, non-finite ones too
}

TEST(StepReporterTest, APersistentNonFiniteLossIsADivergedRun) {
  TrainOptions options = Options(10, 0, 2);
  options.max_nonfinite_iters = 3;
  CapturedEvents events;
  StepReporter reporter(options, events.writer());
  reporter.WriteStart(StartEvent{});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ASSERT_TRUE(reporter.Iteration(Step(1, 0.1, 2.0)).ok());
  ASSERT_TRUE(reporter.Iteration(Step(2, 0.1, nan)).ok());
  ASSERT_TRUE(reporter.Iteration(Step(3, 0.1, nan)).ok());
  const Status diverged = reporter.Iteration(Step(4, 0.1, nan));
  ASSERT_FALSE(diverged.ok());
  EXPECT_EQ(diverged.code(), StatusCode::kInternal);
  EXPECT_TRUE(StartsWith(diverged.message(), "loss diverged: ")) << diverged.message();
  EXPECT_NE(diverged.message().find("3 consecutive iterations, from iteration 2"),
            std::string::npos)
      << diverged.message();
  EXPECT_EQ(events.Lines().size(),
            5u);  // the diverging iterations are written too

  options.max_nonfinite_iters = 0;  // never stop
  StepReporter patient(options, events.writer());
  patient.WriteStart(StartEvent{});
  for (int i = 1; i <= 10; ++i) EXPECT_TRUE(patient.Iteration(Step(i, 0.1, nan)).ok());
  EXPECT_EQ(patient.nonfinite_losses(), 10);
}

}  // namespace
}  // namespace bench_train
