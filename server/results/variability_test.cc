#include "server/results/variability.h"

#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "server/results/results.h"

namespace bench {
namespace {

struct Input {
  Job job;
  std::vector<IterationSample> samples;
  std::vector<GpuSample> gpu_samples;
};

// A SUCCEEDED cuda job whose rank r runs on gpus[r] with the given measured step times
// (plus one warm-up iteration), from wall time `t0` s: iteration i ends at t0 + i.
// Each rank's GPU reads `clocks` (MHz) at t0 + 2, t0 + 3, ... inside the measured window
// [t0 + 1, t0 + 1 + steps], and 99999 MHz before and after it.
Input MakeJob(const std::string& id, int64_t seq, double t0, const std::vector<std::string>& gpus,
              const std::vector<std::vector<double>>& steps,
              const std::vector<std::vector<double>>& clocks, int batch_size = 256) {
  Input in;
  Job& job = in.job;
  job.id = id;
  job.seq = seq;
  job.attempt = 1;
  job.state = JobState::kSucceeded;
  job.device_kind = DeviceKind::kCuda;
  job.spec.model = "resnet50";
  job.spec.precision = Precision::kAmp;
  job.spec.batch_size = batch_size;
  job.spec.image_size = 224;
  job.spec.devices = static_cast<int>(gpus.size());
  for (size_t r = 0; r < gpus.size(); ++r) {
    int rank = static_cast<int>(r);
    job.rank_devices.push_back({rank, "node-" + gpus[r], "host-" + gpus[r], 0, gpus[r], "H100"});
    std::vector<double> sorted = steps[r];
    std::sort(sorted.begin(), sorted.end());
    RankSummary summary;
    summary.rank = rank;
    summary.measured_iterations = static_cast<int>(steps[r].size());
    summary.step_time_median_s =
        sorted.size() % 2 ? sorted[sorted.size() / 2]
                          : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
    job.summaries[rank] = summary;
    int n = static_cast<int>(steps[r].size()) + 1;
    for (int i = 1; i <= n; ++i) {
      IterationSample s;
      s.job_id = id;
      s.attempt = 1;
      s.rank = rank;
      s.iteration = i;
      s.warmup = i == 1;
      s.step_time_s = i == 1 ? 5.0 : steps[r][i - 2];
      s.elapsed_s = i;
      s.received_unix_ns = static_cast<int64_t>((t0 + i) * 1e9);
      in.samples.push_back(s);
    }
    auto reading = [&](double t, double clock) {
      GpuSample g;
      g.job_id = id;
      g.attempt = 1;
      g.rank = rank;
      g.seq = static_cast<int64_t>(in.gpu_samples.size()) + 1;
      g.gpu_uuid = gpus[r];
      g.time_unix_ns = static_cast<int64_t>(t * 1e9);
      g.sm_clock_mhz = clock;
      g.power_w = 300;
      g.temperature_c = 60;
      in.gpu_samples.push_back(g);
    };
    reading(t0 + 0.5, 99999);
    for (size_t k = 0; k < clocks[r].size(); ++k) reading(t0 + 2 + k, clocks[r][k]);
    reading(t0 + n + 0.5, 99999);
  }
  return in;
}

const GpuVariability& Find(const std::vector<GpuVariability>& gpus, const std::string& uuid) {
  for (const GpuVariability& g : gpus) {
    if (g.gpu_uuid == uuid) return g;
  }
  static GpuVariability none;
  ADD_FAILURE() << "no " << uuid;
  return none;
}

TEST(VariabilityTest, ASlowGpuIsFlaggedAndTheOthersAreNot) {
  std::vector<double> normal = {0.1, 0.1, 0.1, 0.1};
  std::vector<double> slow = {0.14, 0.16, 0.14, 0.16};  // median 0.15: 1.5× the fleet
  std::vector<double> c = {1500, 1500, 1500};
  // Eight single-GPU jobs: each GPU runs two.
  std::vector<Input> jobs = {
      MakeJob("j1", 1, 1000, {"GPU-A"}, {normal}, {c}),
      MakeJob("j2", 2, 1100, {"GPU-B"}, {normal}, {c}),
      MakeJob("j3", 3, 2000, {"GPU-C"}, {normal}, {c}),
      MakeJob("j4", 4, 2100, {"GPU-SLOW"}, {slow}, {{1400, 1500, 1600}}),
      MakeJob("j5", 5, 3000, {"GPU-A"}, {normal}, {c}),
      MakeJob("j6", 6, 3100, {"GPU-SLOW"}, {slow}, {{1300, 1350, 1450}}),
      MakeJob("j7", 7, 4000, {"GPU-B"}, {normal}, {c}),
      MakeJob("j8", 8, 4100, {"GPU-C"}, {normal}, {c}),
  };
  Input failed = MakeJob("j9", 9, 5000, {"GPU-A"}, {slow}, {c});
  failed.job.state = JobState::kFailed;  // ignored
  jobs.push_back(failed);
  // A data-parallel job's ranks share its step time: it says nothing about one GPU.
  jobs.push_back(MakeJob("j10", 10, 6000, {"GPU-A", "GPU-B"}, {slow, slow}, {c, c}));
  VariabilityBuilder builder;
  for (const Input& in : jobs) builder.AddJob(in.job, in.samples, in.gpu_samples);
  std::vector<GpuVariability> gpus = builder.Finish(5);
  ASSERT_EQ(gpus.size(), 4u);
  // Fleet median over the 8 jobs (six of 0.1 s, two of 0.15 s) is 0.1 s.
  EXPECT_EQ(gpus[0].gpu_uuid, "GPU-SLOW") << "slowest first";
  EXPECT_NEAR(gpus[0].normalized_step_time, 1.5, 1e-12);
  EXPECT_TRUE(gpus[0].outlier);
  EXPECT_EQ(gpus[0].jobs, 2);
  EXPECT_EQ(gpus[0].iterations, 8);
  EXPECT_EQ(gpus[0].hostname, "host-GPU-SLOW");
  // Step times 0.14, 0.16 (four each), / 0.1: mean 1.5, sample stddev 0.1·sqrt(8/7).
  ASSERT_TRUE(gpus[0].step_time_cv.has_value());
  EXPECT_NEAR(*gpus[0].step_time_cv, 0.1 * std::sqrt(8.0 / 7.0) / 1.5, 1e-9);
  // Exact percentiles over the six in-window readings 1300 1350 1400 1450 1500 1600;
  // the 99999 readings outside the windows are not counted.
  EXPECT_EQ(gpus[0].sm_clock_mhz.count, 6);
  EXPECT_DOUBLE_EQ(gpus[0].sm_clock_mhz.p50, 1425);
  EXPECT_DOUBLE_EQ(gpus[0].sm_clock_mhz.p5, 1312.5);
  EXPECT_DOUBLE_EQ(gpus[0].sm_clock_mhz.p95, 1575);
  EXPECT_DOUBLE_EQ(gpus[0].power_w.p50, 300);
  for (const char* uuid : {"GPU-A", "GPU-B", "GPU-C"}) {
    const GpuVariability& gpu = Find(gpus, uuid);
    EXPECT_DOUBLE_EQ(gpu.normalized_step_time, 1.0) << uuid;
    EXPECT_FALSE(gpu.outlier) << uuid;
    EXPECT_EQ(gpu.jobs, 2) << uuid;
    EXPECT_DOUBLE_EQ(*gpu.step_time_cv, 0) << uuid;
  }
  // A higher threshold lets the slow GPU pass.
  EXPECT_FALSE(builder.Finish(60)[0].outlier);
}

TEST(VariabilityTest, GpusAreOnlyComparedWithTheirOwnModel) {
  VariabilityBuilder builder;
  Input h100 = MakeJob("j1", 1, 1000, {"GPU-H"}, {{0.1, 0.1}}, {{1500}});
  Input a100 = MakeJob("j2", 2, 2000, {"GPU-A"}, {{0.3, 0.3}}, {{1500}});
  a100.job.rank_devices[0].gpu_name = "A100";
  for (const Input* in : {&h100, &a100}) builder.AddJob(in->job, in->samples, in->gpu_samples);
  for (const GpuVariability& gpu : builder.Finish(5)) {
    EXPECT_DOUBLE_EQ(gpu.normalized_step_time, 1.0) << gpu.gpu_uuid;
    EXPECT_FALSE(gpu.outlier) << gpu.gpu_uuid << ": an A100 is not a slow H100";
  }
}

TEST(VariabilityTest, AConfigurationRunByOneGpuIsOneByConstruction) {
  VariabilityBuilder builder;
  Input only = MakeJob("j1", 1, 1000, {"GPU-A"}, {{0.3, 0.3}}, {{1500}}, /*batch_size=*/64);
  builder.AddJob(only.job, only.samples, only.gpu_samples);
  Input cpu = MakeJob("j2", 2, 2000, {"GPU-B"}, {{0.9, 0.9}}, {{1500}});
  cpu.job.device_kind = DeviceKind::kCpu;  // CPU jobs are not GPU variability
  builder.AddJob(cpu.job, cpu.samples, cpu.gpu_samples);
  std::vector<GpuVariability> gpus = builder.Finish(5);
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_DOUBLE_EQ(gpus[0].normalized_step_time, 1.0);
  EXPECT_FALSE(gpus[0].outlier);
}

// A GPU is compared with another exactly when the results grid puts their jobs into one
// cell: both group by the same key (ConfigurationOf), so the two can never disagree.
TEST(VariabilityTest, GroupsJobsAsTheResultsGridDoes) {
  struct Variant {
    std::string what;  // the one difference of the second job
    std::function<void(Job&)> change;
  };
  const std::vector<Variant> variants = {
      {"nothing", [](Job&) {}},
      {"model", [](Job& job) { job.spec.model = "resnet18"; }},
      {"precision", [](Job& job) { job.spec.precision = Precision::kFp32; }},
      {"batch size", [](Job& job) { job.spec.batch_size = 128; }},
      {"image size", [](Job& job) { job.spec.image_size = 160; }},
      {"GPU model", [](Job& job) { job.rank_devices[0].gpu_name = "A100"; }},
  };
  for (const Variant& variant : variants) {
    Input a = MakeJob("j1", 1, 1000, {"GPU-A"}, {{0.1, 0.1}}, {{1500}});
    Input b = MakeJob("j2", 2, 2000, {"GPU-B"}, {{0.3, 0.3}}, {{1500}});
    variant.change(b.job);
    const size_t cells = BuildResultCells({a.job, b.job}, ResultsFilter{}).size();
    EXPECT_EQ(cells, variant.what == "nothing" ? 1u : 2u) << variant.what;
    VariabilityBuilder builder;
    for (const Input* in : {&a, &b}) builder.AddJob(in->job, in->samples, in->gpu_samples);
    // Compared: against the fleet median of 0.1 s and 0.3 s; apart: 1 by construction.
    const double expected = cells == 1 ? 0.5 : 1.0;
    EXPECT_NEAR(Find(builder.Finish(5), "GPU-A").normalized_step_time, expected, 1e-12)
        << variant.what;
  }
}

TEST(VariabilityTest, AJobPlacedBeforeUuidsWereRecordedUsesItsGpuSamples) {
  Input old = MakeJob("j1", 1, 1000, {"GPU-A"}, {{0.2, 0.2}}, {{1500}});
  old.job.rank_devices.clear();
  VariabilityBuilder builder;
  builder.AddJob(old.job, old.samples, old.gpu_samples);
  std::vector<GpuVariability> gpus = builder.Finish(5);
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].gpu_uuid, "GPU-A");
  EXPECT_EQ(gpus[0].iterations, 2);
}

}  // namespace
}  // namespace bench
