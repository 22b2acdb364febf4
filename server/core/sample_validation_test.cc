#include "server/core/sample_validation.h"

#include <cmath>
#include <limits>
#include <optional>

#include <gtest/gtest.h>

namespace bench {
namespace {

JobSpec Spec() {
  JobSpec spec;
  spec.batch_size = 32;
  spec.iterations = 100;
  return spec;
}

IterationSample Good() {
  IterationSample s;
  s.iteration = 10;
  s.step_time_s = 0.2;
  s.images = 32;
  s.data_time_s = 0.01;
  s.elapsed_s = 2.5;
  s.loss = std::nan("");  // a non-finite loss is data, not a reason to refuse
  return s;
}

TEST(SampleValidationTest, ARealSampleIsAccepted) {
  EXPECT_EQ(IterationSampleRejection(Good(), Spec()), std::nullopt);
  IterationSample last = Good();
  last.iteration = 100;
  last.images = 1;
  EXPECT_EQ(IterationSampleRejection(last, Spec()), std::nullopt);
}

TEST(SampleValidationTest, ImpossibleTimesAreBadTime) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {inf, -inf, -1.0, -1e300, std::nan(""), 1e300}) {
    IterationSample step = Good();
    step.step_time_s = bad;
    EXPECT_EQ(IterationSampleRejection(step, Spec()), kBadTime) << bad;
    IterationSample elapsed = Good();
    elapsed.elapsed_s = bad;
    EXPECT_EQ(IterationSampleRejection(elapsed, Spec()), kBadTime) << bad;
    IterationSample data = Good();
    data.data_time_s = bad;
    EXPECT_EQ(IterationSampleRejection(data, Spec()), kBadTime) << bad;
  }
}

// The step split (issue 26): each time, where present, is checked like the step's; absent
// is no data and accepted, and 0 (a single rank's all-reduce wait) is a time.
TEST(SampleValidationTest, StepSplitTimesAreCheckedWherePresent) {
  using Field = std::optional<double> IterationSample::*;
  const Field fields[] = {&IterationSample::compute_time_s,
                          &IterationSample::forward_backward_time_s,
                          &IterationSample::allreduce_wait_time_s,
                          &IterationSample::optimizer_time_s};
  const double inf = std::numeric_limits<double>::infinity();
  for (Field field : fields) {
    IterationSample zero = Good();
    zero.*field = 0.0;
    EXPECT_EQ(IterationSampleRejection(zero, Spec()), std::nullopt);
    IterationSample real = Good();
    real.*field = 0.15;
    EXPECT_EQ(IterationSampleRejection(real, Spec()), std::nullopt);
    for (double bad : {inf, -inf, -0.001, std::nan(""), 1e300}) {
      IterationSample sample = Good();
      sample.*field = bad;
      EXPECT_EQ(IterationSampleRejection(sample, Spec()), kBadTime) << bad;
    }
  }
}

TEST(SampleValidationTest, ImagesOutsideTheBatchAndIterationsOutsideTheJob) {
  for (int bad : {0, -1, 33, std::numeric_limits<int>::max()}) {
    IterationSample s = Good();
    s.images = bad;
    EXPECT_EQ(IterationSampleRejection(s, Spec()), kBadImages) << bad;
  }
  for (int bad : {0, -5, 101, std::numeric_limits<int>::max()}) {
    IterationSample s = Good();
    s.iteration = bad;
    EXPECT_EQ(IterationSampleRejection(s, Spec()), kBadIteration) << bad;
  }
}

TEST(SampleValidationTest, GpuReadingsOnlyForCudaRanksAndWithinPhysicalBounds) {
  const Gpu held{3, "Fake GPU", "GPU-held-3", 1 << 30};
  GpuSample g;
  g.seq = 1;
  g.gpu_index = 3;
  g.gpu_uuid = "GPU-held-3";
  g.power_w = 250;
  g.temperature_c = 65;
  g.gpu_utilization_pct = 100;
  g.memory_used_bytes = 1 << 30;
  EXPECT_EQ(GpuSampleRejection(g, DeviceKind::kCuda, &held), std::nullopt);
  EXPECT_EQ(GpuSampleRejection(g, DeviceKind::kCpu, &held), kGpuOnCpuRank);
  EXPECT_EQ(GpuSampleRejection(g, DeviceKind::kNone, nullptr), kGpuOnCpuRank);

  GpuSample hot = g;
  hot.temperature_c = 1e300;
  EXPECT_EQ(GpuSampleRejection(hot, DeviceKind::kCuda, &held), kBadGpuReading);
  GpuSample busy = g;
  busy.gpu_utilization_pct = 101;
  EXPECT_EQ(GpuSampleRejection(busy, DeviceKind::kCuda, &held), kBadGpuReading);
  GpuSample power = g;
  power.power_w = std::numeric_limits<double>::infinity();
  EXPECT_EQ(GpuSampleRejection(power, DeviceKind::kCuda, &held), kBadGpuReading);
  GpuSample negative = g;
  negative.memory_used_bytes = -1;
  EXPECT_EQ(GpuSampleRejection(negative, DeviceKind::kCuda, &held), kBadGpuReading);
  GpuSample clock = g;
  clock.sm_clock_mhz = std::nan("");
  EXPECT_EQ(GpuSampleRejection(clock, DeviceKind::kCuda, &held), kBadGpuReading);

  // Only the GPU the rank holds on the sender, by UUID and index.
  GpuSample other = g;
  other.gpu_uuid = "GPU-other-3";
  EXPECT_EQ(GpuSampleRejection(other, DeviceKind::kCuda, &held), kGpuNotHeld);
  GpuSample index = g;
  index.gpu_index = 2;
  EXPECT_EQ(GpuSampleRejection(index, DeviceKind::kCuda, &held), kGpuNotHeld);
  EXPECT_EQ(GpuSampleRejection(g, DeviceKind::kCuda, nullptr), kGpuNotHeld);
  const Gpu no_uuid{3, "Fake GPU", "", 1 << 30};
  GpuSample blank = g;
  blank.gpu_uuid = "";
  EXPECT_EQ(GpuSampleRejection(blank, DeviceKind::kCuda, &no_uuid), kGpuNotHeld);
}

TEST(SampleValidationTest, ASummaryMustBeWhatSuchARankCouldHaveMeasured) {
  // 90 measured iterations of 32 images at 0.2 s: 18 s, 160 img/s.
  RankSummary real{0, 90, 2880, 18.0, 0.2};
  EXPECT_EQ(SummaryRejection(real, Spec(), 0.19), std::nullopt);
  // Measured images, but no measured sample of the rank stored: nothing backs them (an
  // agent sends the summary after the samples).
  EXPECT_EQ(SummaryRejection(real, Spec(), std::nullopt), kBadSummary);
  // A rank that measured nothing needs no sample.
  RankSummary unmeasured{0, 0, 0, 0, 0};
  EXPECT_EQ(SummaryRejection(unmeasured, Spec(), std::nullopt), std::nullopt);

  // The forged report of the issue: 32,000,000 img/s.
  RankSummary forged{0, 90, 32'000'000, 1.0, 0.2};
  EXPECT_EQ(SummaryRejection(forged, Spec(), 0.19), kBadSummary);  // more than iterations x batch
  RankSummary fast{0, 90, 2880, 0.001, 0.00001};
  EXPECT_EQ(SummaryRejection(fast, Spec(), 0.19), kBadSummary);  // 2.9M img/s vs 0.19 s steps
  RankSummary short_window{0, 90, 2880, 1.0, 0.2};
  EXPECT_EQ(SummaryRejection(short_window, Spec(), 0.19), kBadSummary);  // 90 x 0.2 s
  RankSummary infinite{0, 90, 2880, std::numeric_limits<double>::infinity(), 0.2};
  EXPECT_EQ(SummaryRejection(infinite, Spec(), 0.19), kBadSummary);
  RankSummary negative{0, -1, 0, 1.0, 0.2};
  EXPECT_EQ(SummaryRejection(negative, Spec(), 0.19), kBadSummary);
  RankSummary too_many{0, 101, 3232, 30.0, 0.2};
  EXPECT_EQ(SummaryRejection(too_many, Spec(), 0.19), kBadSummary);
  RankSummary zero_window{0, 90, 2880, 0, 0};
  EXPECT_EQ(SummaryRejection(zero_window, Spec(), 0.19), kBadSummary);
}

}  // namespace
}  // namespace bench
