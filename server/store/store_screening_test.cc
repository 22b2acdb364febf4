// Store::ReadScreeningRows, fleet screening's narrow read: rank 0's measured step times in
// iteration order and its GPU readings of the asked attempt only, unset readings kept
// unset, and the same inputs as the full-row reads (ReadSamples, ReadGpuSamples) give.
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "server/results/screening_inputs.h"
#include "server/store/store.h"
#include "server/store/store_test_fixture.h"

namespace bench {
namespace {

double StepTime(int attempt, int rank, int iteration) {
  return attempt * 10 + rank + iteration * 0.01;
}

// Rank 0's measured step times of `attempt` as Fill stores them: iterations 3..6.
std::vector<double> MeasuredOfRankZero(int attempt) {
  std::vector<double> times;
  for (int it = 3; it <= 6; ++it) times.push_back(StepTime(attempt, 0, it));
  return times;
}

GpuSample Reading(const std::string& job, int attempt, int rank, int64_t seq) {
  GpuSample g;
  g.job_id = job;
  g.attempt = attempt;
  g.rank = rank;
  g.seq = seq;
  g.gpu_uuid = "GPU-" + std::to_string(rank);
  g.gpu_index = rank;
  g.time_unix_ns = 1'700'000'000'000'000'000 + seq * 100'000'000 + attempt * 7 + rank;
  g.power_w = 600 + seq;
  g.power_limit_w = 700;
  g.sm_clock_mhz = 1900 + attempt;
  g.max_sm_clock_mhz = 1980;
  g.memory_clock_mhz = 2619;
  g.max_memory_clock_mhz = 2619;
  g.temperature_c = 60 + rank;
  g.throttle_reasons = uint64_t{0x40};
  g.pcie_gen = 4;
  g.pcie_gen_max = 5;
  g.pcie_width = 8;
  g.pcie_width_max = 16;
  g.ecc_corrected = int64_t{1} << 40;
  g.ecc_uncorrected = 0;
  g.xid_errors = 3;
  return g;
}

// The fields of diagnosis::GpuReading, for comparison.
auto Fields(const diagnosis::GpuReading& r) {
  return std::make_tuple(r.time_unix_ns, r.sm_clock_mhz, r.max_sm_clock_mhz, r.memory_clock_mhz,
                         r.max_memory_clock_mhz, r.power_w, r.power_limit_w, r.temperature_c,
                         r.throttle_reasons, r.pcie_gen, r.pcie_gen_max, r.pcie_width,
                         r.pcie_width_max, r.ecc_corrected, r.ecc_uncorrected, r.xid_errors);
}

class ScreeningRowsTest : public StoreTest {
 protected:
  // job-1: attempt 1 (rank 0 and 1) and attempt 2 (rank 0 and 1, iterations 1-2 warm-up,
  // appended out of order, a sparse reading at seq 2); job-2 placed, nothing stored.
  void Fill(Store& store) {
    ASSERT_TRUE(store.InsertJob(MakeJob(1)).ok());
    ASSERT_TRUE(store.InsertJob(MakeJob(2)).ok());
    std::vector<IterationSample> samples;
    std::vector<GpuSample> readings;
    for (int attempt = 1; attempt <= 2; ++attempt) {
      for (int rank = 0; rank < 2; ++rank) {
        for (int it : {5, 1, 3, 2, 4, 6}) {
          IterationSample s = Sample("job-1", rank, it);
          s.attempt = attempt;
          s.step_time_s = StepTime(attempt, rank, it);
          s.warmup = it <= 2;
          samples.push_back(s);
        }
        for (int64_t seq : {3, 1, 2}) {
          GpuSample g = Reading("job-1", attempt, rank, seq);
          if (attempt == 2 && rank == 0 && seq == 2) {
            g.sm_clock_mhz.reset();
            g.power_limit_w.reset();
            g.throttle_reasons.reset();
            g.pcie_width.reset();
            g.xid_errors.reset();
          }
          readings.push_back(g);
        }
      }
    }
    auto stored = store.AppendSamplesSync(samples, readings);
    ASSERT_TRUE(stored.ok()) << stored.status();
    ASSERT_EQ(stored->stored, 24);
    ASSERT_EQ(stored->gpu_stored, 12);
  }
};

TEST_F(ScreeningRowsTest, RankZeroMeasuredStepsAndReadingsOfTheAskedAttemptUnsetKeptUnset) {
  auto store = std::move(Store::Open(path_)).value();
  Fill(*store);
  auto rows = store->ReadScreeningRows({{"job-1", 2}, {"job-2", 1}, {"job-1", 0}, {"job-1", 1}});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 4u);

  const Store::ScreeningRows& current = (*rows)[0];
  // Rank 0 of attempt 2, iterations 3..6 (1 and 2 are warm-up), in iteration order.
  EXPECT_EQ(current.step_times_s, MeasuredOfRankZero(2));
  ASSERT_EQ(current.readings.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const diagnosis::GpuReading& r = current.readings[i];
    EXPECT_EQ(r.time_unix_ns, 1'700'000'000'000'000'000 + (int64_t(i) + 1) * 100'000'000 + 14);
    EXPECT_EQ(r.power_w, 601.0 + i);
    EXPECT_EQ(r.temperature_c, 60.0);  // rank 0's
    EXPECT_EQ(r.max_sm_clock_mhz, 1980.0);
    EXPECT_EQ(r.memory_clock_mhz, 2619.0);
    EXPECT_EQ(r.max_memory_clock_mhz, 2619.0);
    EXPECT_EQ(r.pcie_gen, 4);
    EXPECT_EQ(r.pcie_gen_max, 5);
    EXPECT_EQ(r.pcie_width_max, 16);
    EXPECT_EQ(r.ecc_corrected, int64_t{1} << 40);
    EXPECT_EQ(r.ecc_uncorrected, 0);  // zero is a reading, not "no data"
  }
  const diagnosis::GpuReading& full = current.readings[0];
  EXPECT_EQ(full.sm_clock_mhz, 1902.0);
  EXPECT_EQ(full.power_limit_w, 700.0);
  EXPECT_EQ(full.throttle_reasons, uint64_t{0x40});
  EXPECT_EQ(full.pcie_width, 8);
  EXPECT_EQ(full.xid_errors, 3);
  const diagnosis::GpuReading& sparse = current.readings[1];
  EXPECT_FALSE(sparse.sm_clock_mhz.has_value());
  EXPECT_FALSE(sparse.power_limit_w.has_value());
  EXPECT_FALSE(sparse.throttle_reasons.has_value());
  EXPECT_FALSE(sparse.pcie_width.has_value());
  EXPECT_FALSE(sparse.xid_errors.has_value());

  // Nothing stored; an attempt below 1 reads nothing.
  EXPECT_TRUE((*rows)[1].step_times_s.empty());
  EXPECT_TRUE((*rows)[1].readings.empty());
  EXPECT_TRUE((*rows)[2].step_times_s.empty());
  EXPECT_TRUE((*rows)[2].readings.empty());
  // The earlier attempt, asked for, is its own.
  EXPECT_EQ((*rows)[3].step_times_s, MeasuredOfRankZero(1));
  ASSERT_EQ((*rows)[3].readings.size(), 3u);
  EXPECT_EQ((*rows)[3].readings[0].sm_clock_mhz, 1901.0);
}

TEST_F(ScreeningRowsTest, GivesTheSameScreeningInputsAsTheFullRowReads) {
  auto store = std::move(Store::Open(path_)).value();
  Fill(*store);
  Job job = MakeJob(1);
  job.state = JobState::kSucceeded;
  job.attempt = 2;
  job.rank_devices.push_back(RankDevice{0, "node-a", "node-a", 0, "GPU-0", "NVIDIA H100"});
  auto samples = store->ReadSamples(job.id, job.attempt);
  ASSERT_TRUE(samples.ok()) << samples.status();
  auto gpu_samples = store->ReadGpuSamples(job.id, job.attempt);
  ASSERT_TRUE(gpu_samples.ok()) << gpu_samples.status();
  const diagnosis::ScreenedGpu wide = ScreenedGpuOf(job, *samples, *gpu_samples);

  auto rows = store->ReadScreeningRows({{job.id, job.attempt}});
  ASSERT_TRUE(rows.ok()) << rows.status();
  const diagnosis::ScreenedGpu narrow = ScreenedGpuOfMeasured(
      job, std::move((*rows)[0].step_times_s), std::move((*rows)[0].readings));
  EXPECT_EQ(narrow.job_id, wide.job_id);
  EXPECT_EQ(narrow.node, wide.node);
  EXPECT_EQ(narrow.gpu_uuid, wide.gpu_uuid);
  EXPECT_EQ(narrow.succeeded, wide.succeeded);
  EXPECT_EQ(narrow.step_times_s, wide.step_times_s);
  ASSERT_EQ(narrow.readings.size(), wide.readings.size());
  for (size_t i = 0; i < wide.readings.size(); ++i) {
    EXPECT_EQ(Fields(narrow.readings[i]), Fields(wide.readings[i])) << "reading " << i;
  }
}

}  // namespace
}  // namespace bench
