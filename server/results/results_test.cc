#include "server/results/results.h"

#include <gtest/gtest.h>

#include "server/results/job_diagnosis.h"

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

TEST(ResultsTest, DataVsComputeSumsTheRanksSyntheticRatesOnceEveryRankHasOne) {
  RankSummary a = Summary(0, 100, 2.0), b = Summary(1, 100, 2.5);
  a.synthetic_images_per_second = 60;
  Job job = Finished("job-1", 2, 32, Precision::kFp32, {a, b});
  job.spec.data_vs_compute = true;
  EXPECT_FALSE(SyntheticThroughput(job).has_value()) << "rank 1 has no synthetic rate yet";
  job.summaries[1].synthetic_images_per_second = 55;
  ASSERT_TRUE(SyntheticThroughput(job).has_value());
  EXPECT_DOUBLE_EQ(*SyntheticThroughput(job), 115.0);
  job.spec.data_vs_compute = false;
  EXPECT_FALSE(SyntheticThroughput(job).has_value());
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

Job OnGpus(Job job, const std::vector<std::string>& names) {
  job.device_kind = DeviceKind::kCuda;
  for (size_t i = 0; i < names.size(); ++i) {
    int rank = static_cast<int>(i);
    job.rank_devices.push_back({rank, "dgx", "dgx-host", rank, "GPU-" + std::to_string(i),
                                names[i]});
  }
  job.placements = {{"dgx", {}, {}}};
  for (size_t i = 0; i < names.size(); ++i) {
    job.placements[0].ranks.push_back(static_cast<int>(i));
    job.placements[0].device_indices.push_back(static_cast<int>(i));
  }
  return job;
}

Job WithState(Job job, JobState state) {
  job.state = state;
  if (state == JobState::kQueued) {
    job.device_kind = DeviceKind::kNone;
    job.placements.clear();
    job.rank_devices.clear();
    job.summaries.clear();
  }
  return job;
}

TEST(ResultsTest, FailedPendingAndUnmeasuredJobsAreCountedNotFigured) {
  Job ok = OnGpus(Finished("ok", 1, 128, Precision::kAmp, {Summary(0, 100, 1.0)}), {"H100"});
  Job failed = WithState(OnGpus(Finished("f", 1, 128, Precision::kAmp, {}), {"H100"}),
                         JobState::kFailed);
  Job running = WithState(OnGpus(Finished("r", 1, 128, Precision::kAmp, {}), {"H100"}),
                          JobState::kRunning);
  // Finished, but a rank measured no images: no throughput, so no figure.
  Job unmeasured =
      OnGpus(Finished("z", 1, 128, Precision::kAmp, {Summary(0, 0, 1.0)}), {"H100"});
  Job cancelled = WithState(OnGpus(Finished("c", 1, 128, Precision::kAmp, {}), {"H100"}),
                            JobState::kCancelled);
  std::vector<ResultCell> cells =
      BuildResultCells({ok, failed, running, unmeasured, cancelled}, "");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].key.gpu_model, "H100");
  EXPECT_EQ(cells[0].runs(), 1);
  EXPECT_EQ(cells[0].job_ids, (std::vector<std::string>{"ok"}));
  EXPECT_DOUBLE_EQ(cells[0].median_images_per_second, 100);
  EXPECT_EQ(cells[0].failed_runs, 1);
  EXPECT_EQ(cells[0].pending_runs, 1);
  EXPECT_EQ(cells[0].unmeasured_runs, 1);
  EXPECT_FALSE(cells[0].cv.has_value()) << "one run has no spread";
  EXPECT_FALSE(cells[0].ci95.has_value());
}

// A run whose diagnosis has a failing check counts, marked; --strict leaves it out. A run
// whose diagnosis passes, or that has none ("no data"), always counts.
TEST(ResultsTest, RunsWithAFailingCheckAreCountedOrLeftOutWhenStrict) {
  auto with_checks = [](Job job, diagnosis::CheckOutcome outcome) {
    auto d = std::make_shared<JobDiagnosis>();
    d->available = true;
    d->checks = {{"steady_cv", outcome, 12.0, 10.0, "%", ""}};
    job.diagnosis = std::move(d);
    return job;
  };
  Job failing = with_checks(Finished("bad", 1, 128, Precision::kAmp, {Summary(0, 50, 1.0)}),
                            diagnosis::CheckOutcome::kFail);
  Job passing = with_checks(Finished("ok", 1, 128, Precision::kAmp, {Summary(0, 100, 1.0)}),
                            diagnosis::CheckOutcome::kPass);
  Job none = Finished("old", 1, 128, Precision::kAmp, {Summary(0, 110, 1.0)});
  Job failed_run = WithState(
      with_checks(Finished("f", 1, 128, Precision::kAmp, {}), diagnosis::CheckOutcome::kFail),
      JobState::kFailed);
  ResultsFilter filter;
  std::vector<ResultCell> cells = BuildResultCells({failing, passing, none, failed_run}, filter);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].job_ids, (std::vector<std::string>{"bad", "ok", "old"}));
  EXPECT_EQ(cells[0].failing_check_runs, 1);
  EXPECT_EQ(cells[0].failed_runs, 1);
  EXPECT_DOUBLE_EQ(cells[0].median_images_per_second, 100);

  filter.strict = true;
  cells = BuildResultCells({failing, passing, none, failed_run}, filter);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].job_ids, (std::vector<std::string>{"ok", "old"}));
  EXPECT_EQ(cells[0].failing_check_runs, 0);
  EXPECT_EQ(cells[0].failed_runs, 0);
  EXPECT_DOUBLE_EQ(cells[0].median_images_per_second, 105);
}

TEST(ResultsTest, AConfigurationWithOnlyFailedOrQueuedJobsHasACellWithNoRuns) {
  Job failed = WithState(OnGpus(Finished("f", 8, 256, Precision::kFp32, {}), {
                             "H100", "H100", "H100", "H100", "H100", "H100", "H100", "H100"}),
                         JobState::kFailed);
  Job queued = WithState(Finished("q", 2, 64, Precision::kFp32, {}), JobState::kQueued);
  std::vector<ResultCell> cells = BuildResultCells({failed, queued}, "");
  ASSERT_EQ(cells.size(), 2u);
  // Sorted by key: 2 devices (queued) before 8.
  EXPECT_EQ(cells[0].key.devices, 2);
  EXPECT_EQ(cells[0].key.device_kind, DeviceKind::kNone) << "not placed: hardware unknown";
  EXPECT_EQ(cells[0].key.gpu_model, "");
  EXPECT_EQ(cells[0].runs(), 0);
  EXPECT_EQ(cells[0].pending_runs, 1);
  EXPECT_EQ(cells[1].runs(), 0);
  EXPECT_EQ(cells[1].failed_runs, 1);
  EXPECT_EQ(cells[1].key.gpu_model, "H100");
  EXPECT_FALSE(cells[1].cv.has_value());
  EXPECT_FALSE(cells[1].baseline.has_value());
}

TEST(ResultsTest, GpuModelSplitsCellsAndMixedJobsJoinTheNames) {
  Job h100 = OnGpus(Finished("a", 2, 64, Precision::kAmp,
                             {Summary(0, 100, 1.0), Summary(1, 100, 1.0)}),
                    {"H100", "H100"});
  Job a100 = OnGpus(Finished("b", 2, 64, Precision::kAmp,
                             {Summary(0, 50, 1.0), Summary(1, 50, 1.0)}),
                    {"A100", "A100"});
  Job mixed = OnGpus(Finished("c", 2, 64, Precision::kAmp,
                              {Summary(0, 50, 1.0), Summary(1, 100, 1.0)}),
                     {"H100", "A100"});
  Job cpu = Finished("d", 2, 64, Precision::kAmp, {Summary(0, 5, 1.0), Summary(1, 5, 1.0)});
  std::vector<ResultCell> cells = BuildResultCells({h100, a100, mixed, cpu}, "");
  ASSERT_EQ(cells.size(), 4u);
  std::map<std::string, std::string> model_of;
  for (const ResultCell& cell : cells) model_of[cell.job_ids.at(0)] = cell.key.gpu_model;
  EXPECT_EQ(model_of["a"], "H100");
  EXPECT_EQ(model_of["b"], "A100");
  EXPECT_EQ(model_of["c"], "A100 + H100");
  EXPECT_EQ(model_of["d"], "");

  ResultsFilter filter;
  filter.configuration.gpu_model = "A100";
  cells = BuildResultCells({h100, a100, mixed, cpu}, filter);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].job_ids, (std::vector<std::string>{"b"}));
}

TEST(ResultsTest, FiltersByNodeTimeAndLabels) {
  auto job = [](const std::string& id, const std::string& agent, int64_t created_ms,
                std::map<std::string, std::string> labels) {
    Job j = Finished(id, 1, 64, Precision::kFp32, {Summary(0, 10, 1.0)});
    j.placements = {{agent, {0}, {0}}};
    j.created = absl::FromUnixMillis(created_ms);
    j.spec.labels = std::move(labels);
    return j;
  };
  std::vector<Job> jobs = {job("a", "n1", 1000, {{"sweep", "s1"}, {"team", "x"}}),
                           job("b", "n2", 2000, {{"sweep", "s1"}}),
                           job("c", "n1", 3000, {{"sweep", "s2"}})};
  auto ids = [&](const ResultsFilter& filter) {
    std::vector<std::string> out;
    for (const ResultCell& cell : BuildResultCells(jobs, filter)) {
      out.insert(out.end(), cell.job_ids.begin(), cell.job_ids.end());
    }
    return out;
  };
  ResultsFilter node;
  node.node = "n1";
  EXPECT_EQ(ids(node), (std::vector<std::string>{"a", "c"}));
  ResultsFilter window;
  window.since = absl::FromUnixMillis(2000);  // at or after
  window.until = absl::FromUnixMillis(3000);  // before
  EXPECT_EQ(ids(window), (std::vector<std::string>{"b"}));
  ResultsFilter labels;
  labels.labels = {{"sweep", "s1"}};
  EXPECT_EQ(ids(labels), (std::vector<std::string>{"a", "b"}));
  labels.labels = {{"sweep", "s1"}, {"team", "x"}};
  EXPECT_EQ(ids(labels), (std::vector<std::string>{"a"}));
  ResultsFilter model;
  model.configuration.model = "resnet18";
  EXPECT_TRUE(ids(model).empty());
}

// Six runs of 100..600 img/s: median 350, the CI of the median (ranks 1 and 6) is the
// min–max, and the CV is stddev(187.083) / mean(350) = 0.534522.
TEST(ResultsTest, SixRunsHaveAConfidenceIntervalAndACoefficientOfVariation) {
  std::vector<Job> jobs;
  for (int i = 1; i <= 6; ++i) {
    jobs.push_back(Finished("j" + std::to_string(i), 1, 64, Precision::kFp32,
                            {Summary(0, 100 * i, 1.0)}));
  }
  std::vector<ResultCell> five = BuildResultCells({jobs.begin(), jobs.end() - 1}, "");
  ASSERT_EQ(five.size(), 1u);
  EXPECT_FALSE(five[0].ci95.has_value()) << "5 runs: not enough for a 95% interval";
  ASSERT_TRUE(five[0].cv.has_value());
  std::vector<ResultCell> cells = BuildResultCells(jobs, "");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].runs(), 6);
  EXPECT_DOUBLE_EQ(cells[0].median_images_per_second, 350);
  ASSERT_TRUE(cells[0].ci95.has_value());
  EXPECT_DOUBLE_EQ(cells[0].ci95->low, 100);
  EXPECT_DOUBLE_EQ(cells[0].ci95->high, 600);
  ASSERT_TRUE(cells[0].cv.has_value());
  EXPECT_NEAR(*cells[0].cv, 0.534522, 1e-6);
}

TEST(ResultsTest, MediansAreComparedWithTheirConfigurationsBaseline) {
  auto run = [](const std::string& id, int images) {
    return OnGpus(Finished(id, 1, 256, Precision::kAmp, {Summary(0, images, 1.0)}), {"H100"});
  };
  std::vector<Job> jobs = {run("a", 1000), run("b", 900), run("c", 940)};  // median 940
  Baseline baseline;
  baseline.configuration = ConfigurationOf(jobs[0]);
  baseline.job_id = "a";
  baseline.images_per_second = 1000;
  baseline.lower_tolerance_pct = 5;  // BELOW under 950
  baseline.upper_tolerance_pct = 5;
  Baselines baselines = {{baseline.configuration, baseline}};
  std::vector<ResultCell> cells = BuildResultCells(jobs, ResultsFilter{}, baselines);
  ASSERT_EQ(cells.size(), 1u);
  ASSERT_TRUE(cells[0].baseline.has_value());
  EXPECT_EQ(cells[0].baseline->verdict, BaselineVerdict::kBelow);
  EXPECT_DOUBLE_EQ(cells[0].baseline->ratio, 0.94);
  EXPECT_EQ(cells[0].baseline->baseline_job_id, "a");
  EXPECT_DOUBLE_EQ(cells[0].baseline->baseline_images_per_second, 1000);

  // A baseline of another GPU model does not apply.
  Job a100 = run("d", 500);
  a100.rank_devices[0].gpu_name = "A100";
  cells = BuildResultCells({a100}, ResultsFilter{}, baselines);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_FALSE(cells[0].baseline.has_value());
}

}  // namespace
}  // namespace bench
