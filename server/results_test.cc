#include "server/results.h"

#include <gtest/gtest.h>

namespace bench {
namespace {

RankSummary Summary(int rank, int64_t images, double window) {
  RankSummary s;
  s.rank = rank;
  s.measured_images = images;
  s.window_s = window;
  s.measured_iterations = 1;
  return s;
}

Job Finished(const std::string& id, int devices, int bs, Precision precision,
             std::vector<RankSummary> summaries) {
  Job job;
  job.id = id;
  job.spec.model = "resnet50";
  job.spec.devices = devices;
  job.spec.batch_size = bs;
  job.spec.precision = precision;
  job.state = JobState::kSucceeded;
  job.device_kind = DeviceKind::kCpu;
  for (const RankSummary& s : summaries) job.summaries[s.rank] = s;
  return job;
}

TEST(ResultsTest, ThroughputIsAllImagesOverTheLongestWindow) {
  // 2 ranks: 100 images in 2.0 s and 100 images in 2.5 s → 200 / 2.5 = 80 img/s,
  // not the mean of per-rank rates (50 and 40 → 90).
  auto t = JobThroughput({{0, Summary(0, 100, 2.0)}, {1, Summary(1, 100, 2.5)}}, 2);
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(*t, 80.0);
}

TEST(ResultsTest, NoThroughputWithoutEveryRank) {
  EXPECT_FALSE(JobThroughput({{0, Summary(0, 100, 2.0)}}, 2).has_value());
  EXPECT_FALSE(JobThroughput({{0, Summary(0, 0, 2.0)}}, 1).has_value());
  EXPECT_FALSE(JobThroughput({{0, Summary(0, 10, 0.0)}}, 1).has_value());
}

TEST(ResultsTest, CellsGroupRepeatsAndTakeTheMedian) {
  std::vector<Job> jobs = {
      Finished("a", 1, 128, Precision::kFp32, {Summary(0, 100, 1.0)}),   // 100
      Finished("b", 1, 128, Precision::kFp32, {Summary(0, 300, 1.0)}),   // 300
      Finished("c", 1, 128, Precision::kFp32, {Summary(0, 200, 1.0)}),   // 200
      Finished("d", 1, 256, Precision::kAmp, {Summary(0, 50, 1.0)}),     // 50
  };
  Job failed = Finished("e", 1, 128, Precision::kFp32, {Summary(0, 9999, 1.0)});
  failed.state = JobState::kFailed;
  jobs.push_back(failed);
  std::vector<ResultCell> cells = BuildResultCells(jobs, "");
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].key.batch_size, 128);
  EXPECT_DOUBLE_EQ(cells[0].median_images_per_second, 200);
  EXPECT_DOUBLE_EQ(cells[0].min_images_per_second, 100);
  EXPECT_DOUBLE_EQ(cells[0].max_images_per_second, 300);
  EXPECT_EQ(cells[0].job_ids.size(), 3u);
  EXPECT_EQ(cells[1].key.precision, Precision::kAmp);
  EXPECT_TRUE(BuildResultCells(jobs, "resnet18").empty());
}

}  // namespace
}  // namespace bench
