#include "server/results/variability_summary.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "server/results/variability.h"

namespace bench {
namespace {

struct Input {
  Job job;
  std::vector<IterationSample> samples;
  std::vector<GpuSample> gpu_samples;
};

// A fleet's worth of varied jobs: two models, two batch sizes, 1- and 2-device jobs, some
// FAILED, some without a rank summary (the median comes from the samples), some placed
// before UUIDs were recorded (the GPU samples name the GPU), readings inside and outside
// the measured window, power as instant or driver-averaged readings, repeated values.
std::vector<Input> Fleet(int jobs, uint32_t seed) {
  std::mt19937 random(seed);
  auto uniform = [&random](int n) { return static_cast<int>(random() % n); };
  std::vector<Input> fleet;
  for (int j = 0; j < jobs; ++j) {
    Input in;
    Job& job = in.job;
    job.id = absl::StrCat("job-", 1000 + j);
    job.seq = j + 1;
    job.attempt = 1 + uniform(2);
    job.state = uniform(10) == 0 ? JobState::kFailed : JobState::kSucceeded;
    job.device_kind = DeviceKind::kCuda;
    job.spec.model = uniform(2) ? "resnet50" : "resnet18";
    job.spec.precision = Precision::kAmp;
    job.spec.batch_size = uniform(2) ? 128 : 256;
    job.spec.image_size = 224;
    job.spec.devices = uniform(5) == 0 ? 2 : 1;
    const double t0 = 1'700'000'000.0 + j * 1000;
    for (int rank = 0; rank < job.spec.devices; ++rank) {
      const int gpu = uniform(12);
      const std::string uuid = absl::StrCat("GPU-", gpu);
      const bool before_uuids = uniform(8) == 0;
      job.rank_devices.push_back({rank, absl::StrCat("node-", gpu / 4),
                                  absl::StrCat("host-", gpu / 4), gpu % 4, before_uuids ? "" : uuid,
                                  "H100"});
      const double speed = 1.0 + (gpu == 7 ? 0.1 : 0.0) + uniform(100) * 1e-4;
      const int n = 3 + uniform(30);
      std::vector<double> measured;
      for (int i = 1; i <= n; ++i) {
        IterationSample s;
        s.job_id = job.id;
        s.attempt = job.attempt;
        s.rank = rank;
        s.iteration = i;
        s.warmup = i <= 2;
        s.step_time_s = (job.spec.batch_size / 1000.0) * speed * (1 + uniform(50) * 1e-3);
        s.elapsed_s = i;
        s.received_unix_ns = static_cast<int64_t>((t0 + i) * 1e9);
        if (!s.warmup) measured.push_back(s.step_time_s);
        in.samples.push_back(s);
      }
      if (uniform(4) != 0) {
        std::sort(measured.begin(), measured.end());
        RankSummary summary;
        summary.rank = rank;
        summary.measured_iterations = static_cast<int>(measured.size());
        summary.step_time_median_s = measured[measured.size() / 2];
        job.summaries[rank] = summary;
      }
      const bool averaged = uniform(3) == 0;
      for (int k = 0; k < 2 * n; ++k) {
        GpuSample g;
        g.job_id = job.id;
        g.attempt = job.attempt;
        g.rank = rank;
        g.seq = k + 1;
        g.gpu_uuid = uuid;
        g.gpu_index = gpu % 4;
        g.time_unix_ns = static_cast<int64_t>((t0 + k * 0.5) * 1e9);
        g.sm_clock_mhz = 1900 + uniform(40);
        if (uniform(5) != 0) g.temperature_c = 55 + uniform(20);
        if (averaged) {
          g.power_average_w = 600 + uniform(2000) / 1000.0;
        } else {
          g.power_w = 600 + uniform(2000) / 1000.0;
        }
        in.gpu_samples.push_back(g);
      }
    }
    fleet.push_back(std::move(in));
  }
  return fleet;
}

void ExpectSameReport(const std::vector<GpuVariability>& expected,
                      const std::vector<GpuVariability>& actual) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const GpuVariability& e = expected[i];
    const GpuVariability& a = actual[i];
    SCOPED_TRACE(e.gpu_uuid);
    EXPECT_EQ(a.gpu_uuid, e.gpu_uuid);
    EXPECT_EQ(a.gpu_name, e.gpu_name);
    EXPECT_EQ(a.agent, e.agent);
    EXPECT_EQ(a.hostname, e.hostname);
    EXPECT_EQ(a.gpu_index, e.gpu_index);
    EXPECT_EQ(a.jobs, e.jobs);
    EXPECT_EQ(a.iterations, e.iterations);
    EXPECT_EQ(a.normalized_step_time, e.normalized_step_time);  // exactly
    ASSERT_EQ(a.step_time_cv.has_value(), e.step_time_cv.has_value());
    if (e.step_time_cv) {  // merged moments against two passes: equal up to rounding
      EXPECT_NEAR(*a.step_time_cv, *e.step_time_cv, 1e-12 * std::abs(*e.step_time_cv));
    }
    for (auto [pa, pe] :
         {std::pair{&a.sm_clock_mhz, &e.sm_clock_mhz}, std::pair{&a.power_w, &e.power_w},
          std::pair{&a.temperature_c, &e.temperature_c}}) {
      EXPECT_EQ(pa->count, pe->count);
      EXPECT_EQ(pa->p5, pe->p5);
      EXPECT_EQ(pa->p50, pe->p50);
      EXPECT_EQ(pa->p95, pe->p95);
    }
    EXPECT_EQ(a.outlier, e.outlier);
  }
}

// The kept report (summaries made one job at a time, through their stored bytes, added
// in two rounds) answers VariabilityBuilder's numbers over the same jobs, for the whole
// fleet and for one model.
TEST(VariabilitySummaryTest, TheKeptReportEqualsTheReferenceComputation) {
  const std::vector<Input> fleet = Fleet(400, 27);
  for (const std::string model : {"", "resnet18"}) {
    SCOPED_TRACE("model " + model);
    VariabilityBuilder reference;
    VariabilityAggregate kept;
    for (size_t i = 0; i < fleet.size(); ++i) {
      const Input& in = fleet[i];
      if (model.empty() || in.job.spec.model == model) {
        reference.AddJob(in.job, in.samples, in.gpu_samples);
      }
      if (!CountsForVariability(in.job)) continue;
      absl::StatusOr<JobVariability> stored = DecodeJobVariability(
          EncodeJobVariability(VariabilityOf(in.job, in.samples, in.gpu_samples)));
      ASSERT_TRUE(stored.ok()) << stored.status();
      kept.Add(in.job, *stored);
      if (i == fleet.size() / 2) {  // midway, as a report between two jobs' ends
        ExpectSameReport(reference.Finish(5), kept.Finish(5, model));
      }
    }
    const std::vector<GpuVariability> expected = reference.Finish(5);
    ASSERT_GT(expected.size(), 10u);
    ExpectSameReport(expected, kept.Finish(5, model));
  }
}

TEST(VariabilitySummaryTest, AJobThatDoesNotCountHasAnEmptySummary) {
  std::vector<Input> fleet = Fleet(20, 1);
  for (Input& in : fleet) {
    in.job.state = JobState::kFailed;
    EXPECT_TRUE(VariabilityOf(in.job, in.samples, in.gpu_samples).ranks.empty());
  }
}

TEST(VariabilitySummaryTest, MalformedBytesAreDataLossNotACrash) {
  const std::vector<Input> fleet = Fleet(5, 3);
  const std::string bytes =
      EncodeJobVariability(VariabilityOf(fleet[0].job, fleet[0].samples, fleet[0].gpu_samples));
  for (size_t cut = 0; cut < bytes.size(); cut += 7) {
    absl::StatusOr<JobVariability> decoded = DecodeJobVariability(bytes.substr(0, cut));
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << cut;
  }
  EXPECT_EQ(DecodeJobVariability(bytes + "x").status().code(), absl::StatusCode::kDataLoss);
  std::string other_format = bytes;
  other_format[0] = 9;
  EXPECT_EQ(DecodeJobVariability(other_format).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace bench
