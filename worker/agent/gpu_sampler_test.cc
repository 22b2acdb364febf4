#include "worker/agent/gpu_sampler.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"

namespace bench::agent {
namespace {

using benchfleet::v1::GpuSample;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Power = 100 * (gpu index + 1); temperature counts the reads of that GPU.
class FakeReader : public GpuReader {
 public:
  GpuReading Read(int gpu_index) override {
    GpuReading reading;
    reading.power_w = 100.0 * (gpu_index + 1);
    reading.temperature_c = static_cast<double>(++reads_);
    return reading;
  }
  int reads() const { return reads_; }

 private:
  std::atomic<int> reads_{0};
};

class RecordingSink : public GpuSampleSink {
 public:
  uint64_t AddGpuSample(GpuSample sample) override {
    absl::MutexLock lock(&mu_);
    samples_.push_back(std::move(sample));
    return samples_.size() + 1000;
  }
  std::vector<GpuSample> samples() {
    absl::MutexLock lock(&mu_);
    return samples_;
  }
  std::vector<GpuSample> of_rank(int rank) {
    std::vector<GpuSample> out;
    for (auto& sample : samples()) {
      if (sample.rank() == rank) out.push_back(sample);
    }
    return out;
  }

 private:
  absl::Mutex mu_;
  std::vector<GpuSample> samples_;
};

GpuSamplerOptions Every(absl::Duration period) {
  GpuSamplerOptions options;
  options.period = period;
  return options;
}

TEST(GpuSamplerTest, PeriodFromHz) {
  EXPECT_EQ(GpuSamplePeriod(10), absl::Milliseconds(100));
  EXPECT_EQ(GpuSamplePeriod(0.5), absl::Seconds(2));
  EXPECT_EQ(GpuSamplePeriod(0), absl::ZeroDuration());
  EXPECT_EQ(GpuSamplePeriod(-1), absl::ZeroDuration());
}

TEST(GpuSamplerTest, SamplesARegisteredGpuAtThePeriod) {
  FakeReader reader;
  RecordingSink sink;
  GpuSampler sampler(&reader, &sink, Every(absl::Milliseconds(20)));
  absl::Time start = absl::Now();
  sampler.Register("job-1", 2, 3, 1, "GPU-b");
  absl::SleepFor(absl::Milliseconds(400));
  uint64_t ticket = sampler.Unregister("job-1", 2, 3);
  absl::Duration elapsed = absl::Now() - start;
  auto samples = sink.samples();
  // About one per 20 ms, plus the final reading (generous bounds for a loaded machine).
  int expected = static_cast<int>(elapsed / absl::Milliseconds(20)) + 1;
  EXPECT_GE(static_cast<int>(samples.size()), expected / 2);
  EXPECT_LE(static_cast<int>(samples.size()), expected + 1);
  ASSERT_FALSE(samples.empty());
  EXPECT_EQ(ticket, samples.size() + 1000) << "ticket of the final reading";
  std::vector<int64_t> times;
  for (size_t i = 0; i < samples.size(); ++i) {
    const GpuSample& sample = samples[i];
    EXPECT_EQ(sample.seq(), static_cast<int64_t>(i + 1));
    EXPECT_EQ(sample.job_id(), "job-1");
    EXPECT_EQ(sample.attempt(), 2);
    EXPECT_EQ(sample.rank(), 3);
    EXPECT_EQ(sample.gpu_index(), 1);
    EXPECT_EQ(sample.gpu_uuid(), "GPU-b");
    EXPECT_EQ(sample.power_w(), 200.0);
    EXPECT_FALSE(sample.has_energy_j());
    EXPECT_FALSE(sample.has_sm_clock_mhz());
    times.push_back(sample.time_unix_ns());
  }
  EXPECT_TRUE(std::is_sorted(times.begin(), times.end()));
  EXPECT_GE(times.front(), absl::ToUnixNanos(start));
  // Ticks keep the period (the median gap between ticks, the final reading aside).
  if (samples.size() >= 5) {
    std::vector<int64_t> gaps;
    for (size_t i = 1; i + 1 < times.size(); ++i) gaps.push_back(times[i] - times[i - 1]);
    std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
    EXPECT_NEAR(gaps[gaps.size() / 2] / 1e6, 20.0, 8.0);
  }
  // Nothing is sampled after Unregister.
  size_t count = sink.samples().size();
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_EQ(sink.samples().size(), count);
}

TEST(GpuSamplerTest, SeqIsPerRankAndEachRankHasItsGpu) {
  FakeReader reader;
  RecordingSink sink;
  GpuSampler sampler(&reader, &sink, Every(absl::Milliseconds(10)));
  sampler.Register("job-1", 1, 0, 0, "GPU-a");
  sampler.Register("job-1", 1, 1, 1, "GPU-b");
  sampler.Register("job-2", 1, 0, 2, "GPU-c");
  absl::SleepFor(absl::Milliseconds(100));
  sampler.Unregister("job-1", 1, 0);
  sampler.Unregister("job-1", 1, 1);
  sampler.Unregister("job-2", 1, 0);
  std::map<std::pair<std::string, int>, std::vector<GpuSample>> by_rank;
  for (const auto& sample : sink.samples()) {
    by_rank[{sample.job_id(), sample.rank()}].push_back(sample);
  }
  ASSERT_EQ(by_rank.size(), 3u);
  for (const auto& [key, samples] : by_rank) {
    SCOPED_TRACE(key.first + " rank " + std::to_string(key.second));
    ASSERT_GE(samples.size(), 2u);
    for (size_t i = 0; i < samples.size(); ++i) {
      EXPECT_EQ(samples[i].seq(), static_cast<int64_t>(i + 1));
    }
  }
  EXPECT_EQ((by_rank[{"job-1", 1}][0].gpu_uuid()), "GPU-b");
  EXPECT_EQ((by_rank[{"job-1", 1}][0].power_w()), 200.0);
  EXPECT_EQ((by_rank[{"job-2", 0}][0].gpu_index()), 2);
  EXPECT_EQ((by_rank[{"job-2", 0}][0].power_w()), 300.0);
}

TEST(GpuSamplerTest, UnregisterTakesAFinalReading) {
  FakeReader reader;
  RecordingSink sink;
  GpuSamplerOptions options = Every(absl::Hours(1));
  options.now = [] { return absl::FromUnixSeconds(1700000000); };
  GpuSampler sampler(&reader, &sink, options);
  sampler.Register("job-1", 1, 4, 0, "GPU-a");
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(reader.reads(), 0) << "no tick within the period";
  EXPECT_EQ(sampler.Unregister("job-1", 1, 4), 1001u);
  auto samples = sink.samples();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].seq(), 1);
  EXPECT_EQ(samples[0].rank(), 4);
  EXPECT_EQ(samples[0].time_unix_ns(), 1700000000LL * 1000000000LL);
  EXPECT_EQ(sampler.Unregister("job-1", 1, 4), 0u) << "not registered any more";
  EXPECT_EQ(sampler.Unregister("job-9", 1, 0), 0u);
}

TEST(GpuSamplerTest, IdleWithoutRegistrationsAndSilentAfterShutdown) {
  FakeReader reader;
  RecordingSink sink;
  GpuSampler sampler(&reader, &sink, Every(absl::Milliseconds(5)));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(reader.reads(), 0);
  sampler.Register("job-1", 1, 0, 0, "GPU-a");
  sampler.Shutdown();
  int reads = reader.reads();
  absl::SleepFor(absl::Milliseconds(30));
  EXPECT_EQ(reader.reads(), reads);
  EXPECT_EQ(sampler.Unregister("job-1", 1, 0), 0u);
  EXPECT_EQ(reader.reads(), reads);
}

TEST(GpuSamplerTest, FillCopiesOnlyTheReadingsThatAreSet) {
  GpuReading reading;
  reading.energy_j = 12.5;
  reading.memory_used_bytes = 1 << 20;
  reading.throttle_reasons = 4;
  reading.pcie_gen = 3;
  reading.pcie_width_max = 16;
  reading.max_memory_clock_mhz = 2619;
  reading.power_limit_w = 700;
  reading.ecc_uncorrected = 2;
  reading.xid_errors = 0;  // set, and zero: no XID since the session began
  GpuSample sample;
  FillGpuSample(reading, &sample);
  EXPECT_TRUE(sample.has_energy_j());
  EXPECT_EQ(sample.energy_j(), 12.5);
  EXPECT_EQ(sample.memory_used_bytes(), 1 << 20);
  EXPECT_EQ(sample.throttle_reasons(), 4u);
  EXPECT_EQ(sample.pcie_gen(), 3);
  EXPECT_EQ(sample.pcie_width_max(), 16);
  EXPECT_EQ(sample.max_memory_clock_mhz(), 2619);
  EXPECT_EQ(sample.power_limit_w(), 700);
  EXPECT_EQ(sample.ecc_uncorrected(), 2);
  EXPECT_TRUE(sample.has_xid_errors());
  EXPECT_EQ(sample.xid_errors(), 0);
  EXPECT_FALSE(sample.has_power_w());
  EXPECT_FALSE(sample.has_power_average_w());
  EXPECT_FALSE(sample.has_temperature_c());
  EXPECT_FALSE(sample.has_gpu_utilization_pct());
  EXPECT_FALSE(sample.has_pcie_gen_max());
  EXPECT_FALSE(sample.has_pcie_width());
  EXPECT_FALSE(sample.has_max_sm_clock_mhz());
  EXPECT_FALSE(sample.has_ecc_corrected());
}

TEST(GpuTelemetryTest, MissingLibraryGivesANote) {
  RecordingSink sink;
  GpuTelemetrySession session =
      StartGpuTelemetry("/nonexistent/libnvidia-ml.so.1", 10, &sink);
  EXPECT_EQ(session.sampler, nullptr);
  EXPECT_EQ(session.nvml, nullptr);
  EXPECT_THAT(session.note,
              StartsWith("no GPU telemetry: cannot load /nonexistent/libnvidia-ml.so.1: "));
}

TEST(GpuTelemetryTest, ZeroHzGivesANote) {
  RecordingSink sink;
  GpuTelemetrySession session = StartGpuTelemetry(FAKE_NVML_LIBRARY, 0, &sink);
  EXPECT_EQ(session.sampler, nullptr);
  EXPECT_THAT(session.note, HasSubstr("--gpu-sample-hz 0"));
}

TEST(GpuTelemetryTest, FakeNvmlFeedsTheSink) {
  RecordingSink sink;
  GpuTelemetrySession session = StartGpuTelemetry(FAKE_NVML_LIBRARY, 50, &sink);
  ASSERT_NE(session.sampler, nullptr);
  EXPECT_EQ(session.note, "");
  EXPECT_EQ(session.sampler->period(), absl::Milliseconds(20));
  session.sampler->Register("job-1", 1, 0, 1, "GPU-fake-1");
  absl::SleepFor(absl::Milliseconds(100));
  session.sampler->Unregister("job-1", 1, 0);
  auto samples = sink.samples();
  ASSERT_GE(samples.size(), 2u);
  const GpuSample& last = samples.back();
  EXPECT_EQ(last.power_w(), 250.0);
  EXPECT_EQ(last.power_average_w(), 250.0);
  EXPECT_EQ(last.sm_clock_mhz(), 1755.0);
  EXPECT_EQ(last.temperature_c(), 70.0);
  EXPECT_TRUE(last.has_energy_j());
  EXPECT_GT(last.energy_j(), samples.front().energy_j());
  EXPECT_EQ(last.pcie_gen(), 4);
  EXPECT_EQ(last.pcie_width_max(), 16);
  EXPECT_EQ(last.max_sm_clock_mhz(), 1755.0);
  EXPECT_EQ(last.power_limit_w(), 400.0);
  EXPECT_TRUE(last.has_ecc_corrected());
  EXPECT_TRUE(last.has_xid_errors());
  EXPECT_EQ(last.xid_errors(), 0);
}

}  // namespace
}  // namespace bench::agent
