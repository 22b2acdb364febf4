#include "server/results/telemetry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bench {
namespace {

using ::testing::DoubleNear;
using ::testing::HasSubstr;

TEST(Percentile, InterpolatesLinearlyBetweenRanks) {
  // numpy.percentile([1, 2, 3, 4], [5, 50, 95]) = 1.15, 2.5, 3.85
  Percentiles p = PercentilesOf({4, 1, 3, 2});
  EXPECT_EQ(p.count, 4);
  EXPECT_DOUBLE_EQ(p.p5, 1.15);
  EXPECT_DOUBLE_EQ(p.p50, 2.5);
  EXPECT_DOUBLE_EQ(p.p95, 3.85);
  EXPECT_FALSE(Percentile({}, 0.5).has_value());
  EXPECT_EQ(PercentilesOf({}).count, 0);
  EXPECT_DOUBLE_EQ(*Percentile({7}, 0.95), 7);
}

TEST(LinearSignal, MeanIsTheIntegralOverTheWindow) {
  LinearSignal s;
  s.Add(0, 0);
  s.Add(10, 100);
  s.Add(20, 100);
  EXPECT_DOUBLE_EQ(*s.At(5), 50);
  // Over [5, 15]: from 50 rising to 100 at 10 (mean 75 for 5 s), then 100 for 5 s.
  EXPECT_DOUBLE_EQ(*s.MeanOver(5, 15), 87.5);
  EXPECT_DOUBLE_EQ(*s.MeanOver(12, 12), 100);
  EXPECT_FALSE(s.MeanOver(-1, 5).has_value()) << "never extrapolated before the first point";
  EXPECT_FALSE(s.At(20.5).has_value());
}

IterationSample Iter(int rank, int iteration, double elapsed, bool warmup, int64_t received_ns) {
  IterationSample s;
  s.job_id = "job-1";
  s.attempt = 1;
  s.rank = rank;
  s.iteration = iteration;
  s.elapsed_s = elapsed;
  s.step_time_s = 1;
  s.images = 10;
  s.warmup = warmup;
  s.received_unix_ns = received_ns;
  return s;
}

GpuSample Reading(int rank, double t_s, double watts, double energy_j, double clock) {
  GpuSample g;
  g.job_id = "job-1";
  g.attempt = 1;
  g.rank = rank;
  g.gpu_index = rank;
  g.gpu_uuid = "GPU-" + std::to_string(rank);
  g.time_unix_ns = static_cast<int64_t>(t_s * 1e9);
  g.power_w = watts;
  g.energy_j = energy_j;
  g.sm_clock_mhz = clock;
  g.temperature_c = 60;
  g.throttle_reasons = t_s > 1003 ? 4 : 0;
  return g;
}

// Rank 0 starts at wall time 1000 s; iterations end at elapsed 1, 2, 3, 4 s (the
// first is warm-up); events are read 0.5 s late except the last (read on time), so
// the origin must come out as 1000, not 1000.5.
std::vector<IterationSample> FourIterations() {
  std::vector<IterationSample> samples;
  for (int i = 1; i <= 4; ++i) {
    double lag = i == 4 ? 0 : 0.5;
    samples.push_back(Iter(0, i, i, i == 1, static_cast<int64_t>((1000 + i + lag) * 1e9)));
  }
  return samples;
}

TEST(JoinTelemetry, EnergyOverTheMeasuredWindowPerImage) {
  // A steady 200 W: the energy counter grows 200 J per second; readings every 0.5 s
  // from 999.8 s to 1004.3 s; the clock rises 10 MHz per second.
  std::vector<GpuSample> gpu;
  for (double t = 999.8; t <= 1004.31; t += 0.5) {
    gpu.push_back(Reading(0, t, 200, 5000 + 200 * (t - 999.8), 1000 + 10 * (t - 1000)));
  }
  std::map<int, RankSummary> summaries = {{0, RankSummary{0, 3, 30, 3.0, 1.0}}};
  JoinedTelemetry joined =
      JoinTelemetry(FourIterations(), gpu, summaries, {{0, "node-a"}}, /*expect_gpus=*/true);
  ASSERT_EQ(joined.gpus.size(), 1u);
  const GpuTelemetry& g = joined.gpus[0];
  EXPECT_EQ(g.agent, "node-a");
  EXPECT_EQ(g.gpu_uuid, "GPU-0");
  // Measured window: [1001, 1004] = 3 s at 200 W = 600 J over 30 images.
  ASSERT_TRUE(g.energy_j.has_value());
  EXPECT_THAT(*g.energy_j, DoubleNear(600, 1e-6));
  EXPECT_THAT(*g.energy_per_image_j, DoubleNear(20, 1e-9));
  EXPECT_THAT(*g.images_per_second_per_watt, DoubleNear(0.05, 1e-12));
  // Readings inside [1001, 1004]: 1001.3, 1001.8, ..., 1003.8 (6 of them).
  EXPECT_EQ(g.samples, 6);
  EXPECT_DOUBLE_EQ(g.power_w.p50, 200);
  EXPECT_THAT(g.sm_clock_mhz.p50, DoubleNear(1025.5, 1e-6));  // clock at 1002.55
  EXPECT_EQ(g.throttle_reasons, 4u);
  EXPECT_EQ(joined.note, "");

  // Iteration 3 spans [1002, 1003]: mean clock 1025 MHz, power 200 W.
  ASSERT_EQ(joined.iterations.size(), 4u);
  EXPECT_EQ(joined.iterations[2].iteration, 3);
  EXPECT_THAT(*joined.iterations[2].sm_clock_mhz_mean, DoubleNear(1025, 1e-6));
  EXPECT_THAT(*joined.iterations[2].power_w_mean, DoubleNear(200, 1e-9));
}

TEST(JoinTelemetry, ReadingsThatStopEarlyGiveNoEnergyRatherThanAGuess) {
  std::vector<GpuSample> gpu;
  for (double t = 999.8; t <= 1002.5; t += 0.5) gpu.push_back(Reading(0, t, 200, 200 * t, 1000));
  JoinedTelemetry joined = JoinTelemetry(FourIterations(), gpu, {}, {}, true);
  ASSERT_EQ(joined.gpus.size(), 1u);
  EXPECT_FALSE(joined.gpus[0].energy_j.has_value());
  EXPECT_FALSE(joined.gpus[0].energy_per_image_j.has_value());
  EXPECT_EQ(joined.gpus[0].power_w.count, 0) << "no percentiles of part of the window";
  EXPECT_THAT(joined.note, HasSubstr("do not cover the measured window"));
}

TEST(JoinTelemetry, AnEnergyCounterThatWentBackwardsGivesNoEnergy) {
  std::vector<GpuSample> gpu;
  for (double t = 999.8; t <= 1004.31; t += 0.5) {
    gpu.push_back(Reading(0, t, 200, t < 1002 ? 1e6 + 200 * t : 200 * (t - 1002), 1000));
  }
  JoinedTelemetry joined = JoinTelemetry(FourIterations(), gpu, {}, {}, true);
  ASSERT_EQ(joined.gpus.size(), 1u);
  EXPECT_FALSE(joined.gpus[0].energy_j.has_value());
  EXPECT_EQ(joined.gpus[0].power_w.count, 6) << "the other readings still count";
  EXPECT_THAT(joined.note, HasSubstr("energy counter went backwards"));
}

TEST(JoinTelemetry, OnePowerSourcePerRank) {
  // Instantaneous power where NVML gives it; a reading without it is skipped rather
  // than mixed with the driver's average.
  std::vector<GpuSample> gpu;
  for (double t = 999.8; t <= 1004.31; t += 0.5) {
    GpuSample g = Reading(0, t, 300, 300 * t, 1000);
    g.power_average_w = 100;
    if (t > 1002 && t < 1003) g.power_w.reset();
    gpu.push_back(g);
  }
  JoinedTelemetry joined = JoinTelemetry(FourIterations(), gpu, {}, {}, true);
  ASSERT_EQ(joined.gpus.size(), 1u);
  EXPECT_DOUBLE_EQ(joined.gpus[0].power_w.p5, 300);
  EXPECT_EQ(joined.gpus[0].power_w.count, 4);
}

TEST(JoinTelemetry, RanksWithoutReadingsAreNamed) {
  JoinedTelemetry joined = JoinTelemetry(FourIterations(), {}, {}, {}, /*expect_gpus=*/true);
  EXPECT_TRUE(joined.gpus.empty());
  EXPECT_EQ(joined.note, "no GPU samples for rank 0");
  EXPECT_EQ(JoinTelemetry(FourIterations(), {}, {}, {}, false).note, "");
}

TEST(JobEnergyPerImage, NeedsEveryRank) {
  Job job;
  job.spec.devices = 2;
  job.summaries[0] = RankSummary{0, 3, 30, 3, 1};
  job.summaries[1] = RankSummary{1, 3, 10, 3, 1};
  GpuTelemetry a;
  a.rank = 0;
  a.energy_j = 600;
  job.gpu_telemetry.push_back(a);
  EXPECT_FALSE(JobEnergyPerImage(job).has_value()) << "one rank missing";
  GpuTelemetry b;
  b.rank = 1;
  b.energy_j = 200;
  job.gpu_telemetry.push_back(b);
  EXPECT_DOUBLE_EQ(*JobEnergyPerImage(job), 20);  // 800 J / 40 images
}

}  // namespace
}  // namespace bench
