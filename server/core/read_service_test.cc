// The read side over a real store: jobs and baselines written to SQLite, recovered by a
// JobManager, read back through ReadService (and the manager's Snapshot it reads from).
#include "server/core/read_service.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <future>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bench {
namespace {

class ReadServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_read_service_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    store_ = std::move(Store::Open(dir_ + "/bench.db")).value();
  }
  void TearDown() override {
    reads_.reset();
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // Starts the manager over what the store holds, and the read service over both.
  void StartManager() {
    manager_ = std::make_unique<JobManager>(store_.get(), JobManagerOptions{});
    ASSERT_TRUE(manager_->Recover().ok());
    reads_ = std::make_unique<ReadService>(store_.get(), manager_.get());
  }
  // Stores an ended CPU job of `devices` ranks on agent "a" whose ranks each measured 8
  // images over `window_s` (so `devices` * 8 / window_s images/s).
  Job StoreEndedJob(int64_t seq, const std::string& model, JobState state, int devices,
                    double window_s) {
    Job job;
    job.seq = seq;
    job.id = "job-00000" + std::to_string(seq);
    job.spec.model = model;
    job.spec.devices = devices;
    job.spec.precision = Precision::kFp32;
    job.spec.batch_size = 2;
    job.spec.iterations = 5;
    job.spec.warmup_iterations = 1;
    job.spec.image_size = 64;
    job.created = absl::Now();
    job.state = state;
    job.reason = JobStateText(state);
    job.history.push_back({JobState::kQueued, "submitted", job.created});
    job.history.push_back({state, job.reason, job.created});
    job.attempt = 1;
    job.device_kind = DeviceKind::kCpu;
    Placement placement;
    placement.agent = "a";
    for (int rank = 0; rank < devices; ++rank) {
      placement.ranks.push_back(rank);
      placement.device_indices.push_back(rank);
      job.summaries[rank] = RankSummary{rank, 4, 8, window_s, 0.1};
    }
    job.placements.push_back(placement);
    EXPECT_TRUE(store_->InsertJob(job).ok());
    EXPECT_TRUE(store_->UpdateJob(job).ok());
    return job;
  }
  void StoreBaseline(const Job& job, double images_per_second) {
    Baseline baseline;
    baseline.configuration = ConfigurationOf(job);
    baseline.job_id = job.id;
    baseline.images_per_second = images_per_second;
    baseline.set = absl::Now();
    std::promise<absl::Status> stored;
    store_->PutBaselineAsync(baseline, [&](absl::Status s) { stored.set_value(s); });
    ASSERT_TRUE(stored.get_future().get().ok());
  }

  std::string dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
  std::unique_ptr<ReadService> reads_;
};

TEST_F(ReadServiceTest, ResultsGroupTheMatchingJobsAndCompareWithTheBaseline) {
  Job fast = StoreEndedJob(1, "resnet50", JobState::kSucceeded, 1, 2.0);  // 4 images/s
  StoreEndedJob(2, "resnet50", JobState::kSucceeded, 1, 4.0);             // 2 images/s
  StoreEndedJob(3, "resnet50", JobState::kFailed, 1, 4.0);
  StoreEndedJob(4, "resnet18", JobState::kSucceeded, 1, 1.0);
  StoreBaseline(fast, 4);
  StartManager();

  ResultsFilter filter;
  filter.configuration.model = "resnet50";
  std::vector<ResultCell> cells = reads_->Results(filter);
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].runs(), 2);  // the failed one is counted apart
  EXPECT_EQ(cells[0].failed_runs, 1);
  EXPECT_DOUBLE_EQ(cells[0].median_images_per_second, 3);
  ASSERT_TRUE(cells[0].baseline.has_value());
  EXPECT_EQ(cells[0].baseline->verdict, BaselineVerdict::kBelow);  // 3 < 4 - 5%
  EXPECT_EQ(cells[0].baseline->baseline_job_id, fast.id);
  EXPECT_EQ(reads_->Results(ResultsFilter{}).size(), 2u);

  std::vector<Baseline> baselines = reads_->ListBaselines();
  ASSERT_EQ(baselines.size(), 1u);
  EXPECT_EQ(baselines[0].job_id, fast.id);
  EXPECT_DOUBLE_EQ(baselines[0].images_per_second, 4);
}

TEST_F(ReadServiceTest, SnapshotCopiesTheKeptJobsInSubmissionOrderAndEveryBaseline) {
  Job first = StoreEndedJob(1, "resnet50", JobState::kSucceeded, 1, 2.0);
  StoreEndedJob(2, "resnet18", JobState::kSucceeded, 1, 2.0);
  Job third = StoreEndedJob(3, "resnet50", JobState::kFailed, 1, 2.0);
  StoreBaseline(first, 4);
  StartManager();

  JobManager::ReadSnapshot snapshot =
      manager_->Snapshot([](const Job& job) { return job.spec.model == "resnet50"; });
  ASSERT_EQ(snapshot.jobs.size(), 2u);
  EXPECT_EQ(snapshot.jobs[0].id, first.id);
  EXPECT_EQ(snapshot.jobs[1].id, third.id);
  EXPECT_EQ(snapshot.baselines.size(), 1u);
  EXPECT_TRUE(manager_->Snapshot([](const Job&) { return false; }).jobs.empty());
}

TEST_F(ReadServiceTest, GetSamplesReadsTheCurrentAttemptFromTheStore) {
  Job job = StoreEndedJob(1, "resnet50", JobState::kSucceeded, 2, 2.0);
  std::vector<IterationSample> samples;
  for (int rank = 0; rank < 2; ++rank) {
    for (int it = 1; it <= 5; ++it) {
      IterationSample s;
      s.job_id = job.id;
      s.attempt = 1;
      s.rank = rank;
      s.iteration = it;
      s.step_time_s = 0.1 * it + rank;
      s.images = 2;
      s.warmup = it == 1;
      samples.push_back(s);
    }
  }
  ASSERT_TRUE(store_->AppendSamplesSync(samples).ok());
  StartManager();

  auto all = reads_->GetSamples(job.id, 0);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->view.job.state, JobState::kSucceeded);
  EXPECT_EQ(all->samples.size(), 10u);
  auto later_of_rank_1 = reads_->GetSamples(job.id, 4, 1);
  ASSERT_TRUE(later_of_rank_1.ok()) << later_of_rank_1.status();
  ASSERT_EQ(later_of_rank_1->samples.size(), 2u);
  EXPECT_EQ(later_of_rank_1->samples[0].rank, 1);
  EXPECT_EQ(later_of_rank_1->samples[0].iteration, 4);
  EXPECT_DOUBLE_EQ(later_of_rank_1->samples[1].step_time_s, 1.5);

  EXPECT_EQ(reads_->GetSamples("job-000404", 0).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ReadServiceTest, VariabilityCountsOnlyGpuJobsAndRefusesABadThreshold) {
  StoreEndedJob(1, "resnet50", JobState::kSucceeded, 1, 2.0);  // CPU: not a GPU's figure
  StartManager();

  auto report = reads_->Variability(0, "");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->threshold_pct, 5);
  EXPECT_TRUE(report->gpus.empty());
  EXPECT_EQ(reads_->Variability(2.5, "resnet50")->threshold_pct, 2.5);
  EXPECT_EQ(reads_->Variability(-1, "").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reads_->Variability(std::numeric_limits<double>::quiet_NaN(), "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A SUCCEEDED single-device cuda job on `gpu` with 6 measured iterations (and 1 warm-up)
// of about `step_s` and GPU readings through them, stored with its samples.
Job StoreGpuJob(Store& store, int64_t seq, const std::string& gpu, double step_s) {
  Job job;
  job.seq = seq;
  job.id = "gpu-job-" + std::to_string(seq);
  job.spec.model = seq % 2 ? "resnet50" : "resnet18";
  job.spec.devices = 1;
  job.spec.precision = Precision::kAmp;
  job.spec.batch_size = 256;
  job.spec.iterations = 7;
  job.spec.warmup_iterations = 1;
  job.spec.image_size = 224;
  job.created = absl::FromUnixSeconds(1'700'000'000 + seq * 100);
  job.state = JobState::kSucceeded;
  job.reason = JobStateText(job.state);
  job.history.push_back({JobState::kQueued, "submitted", job.created});
  job.history.push_back({job.state, job.reason, job.created});
  job.attempt = 1;
  job.device_kind = DeviceKind::kCuda;
  Placement placement;
  placement.agent = "node-" + gpu;
  placement.ranks = {0};
  placement.device_indices = {0};
  job.placements.push_back(placement);
  job.rank_devices.push_back({0, placement.agent, placement.agent, 0, gpu, "H100"});
  EXPECT_TRUE(store.InsertJob(job).ok());
  EXPECT_TRUE(store.UpdateJob(job).ok());
  std::vector<IterationSample> samples;
  std::vector<GpuSample> readings;
  const double t0 = absl::ToUnixSeconds(job.created);
  for (int i = 1; i <= 7; ++i) {
    IterationSample s;
    s.job_id = job.id;
    s.attempt = 1;
    s.iteration = i;
    s.warmup = i == 1;
    s.step_time_s = step_s * (1 + 0.01 * ((seq + i) % 5));
    s.images = 256;
    s.loss = 1;
    s.elapsed_s = i;
    s.received_unix_ns = static_cast<int64_t>((t0 + i) * 1e9);
    samples.push_back(s);
    GpuSample g;
    g.job_id = job.id;
    g.attempt = 1;
    g.seq = i;
    g.gpu_uuid = gpu;
    g.time_unix_ns = static_cast<int64_t>((t0 + i + 0.5) * 1e9);
    g.sm_clock_mhz = 1900 + (seq * 7 + i) % 30;
    g.power_w = 650 + (seq * 13 + i) % 11 / 10.0;
    g.temperature_c = 60 + i;
    readings.push_back(g);
  }
  EXPECT_TRUE(store.AppendSamplesSync(samples, readings).ok());
  return job;
}

// The report VariabilityBuilder makes from the stored samples of every job in `jobs`.
std::vector<GpuVariability> Reference(Store& store, const std::vector<Job>& jobs) {
  VariabilityBuilder builder;
  for (const Job& job : jobs) {
    builder.AddJob(job, *store.ReadSamples(job.id, 1), *store.ReadGpuSamples(job.id, 1));
  }
  return builder.Finish(5);
}

void ExpectSame(const std::vector<GpuVariability>& expected,
                const std::vector<GpuVariability>& actual) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(actual[i].gpu_uuid, expected[i].gpu_uuid);
    EXPECT_EQ(actual[i].jobs, expected[i].jobs);
    EXPECT_EQ(actual[i].iterations, expected[i].iterations);
    EXPECT_EQ(actual[i].normalized_step_time, expected[i].normalized_step_time);
    ASSERT_TRUE(actual[i].step_time_cv && expected[i].step_time_cv);
    EXPECT_NEAR(*actual[i].step_time_cv, *expected[i].step_time_cv,
                1e-12 * *expected[i].step_time_cv);
    EXPECT_EQ(actual[i].sm_clock_mhz.p50, expected[i].sm_clock_mhz.p50);
    EXPECT_EQ(actual[i].power_w.p95, expected[i].power_w.p95);
    EXPECT_EQ(actual[i].temperature_c.p5, expected[i].temperature_c.p5);
    EXPECT_EQ(actual[i].outlier, expected[i].outlier);
  }
}

// Issue 27: the report is kept, not recomputed from every sample. Each job is summarized
// once and its summary stored; after a restart the summaries are read, not the samples
// (a changed stored summary shows in the answer); jobs that ended since are added; the
// numbers are VariabilityBuilder's over all the jobs throughout.
TEST_F(ReadServiceTest, VariabilityIsKeptFromStoredSummariesAndEqualsTheReference) {
  std::vector<Job> jobs;
  for (int64_t seq = 1; seq <= 12; ++seq) {
    jobs.push_back(
        StoreGpuJob(*store_, seq, "GPU-" + std::to_string(seq % 4), seq % 4 == 3 ? 0.3 : 0.2));
  }
  StartManager();
  auto report = reads_->Variability(0, "");
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->gpus.size(), 4u);
  EXPECT_EQ(report->gpus.front().gpu_uuid, "GPU-3");
  EXPECT_TRUE(report->gpus.front().outlier);
  ExpectSame(Reference(*store_, jobs), report->gpus);

  // The summaries were stored (the writer's queue is in order: this insert waits for them).
  StoreGpuJob(*store_, 13, "GPU-1", 0.2);
  std::vector<std::pair<std::string, int>> attempts;
  for (int64_t seq = 1; seq <= 13; ++seq)
    attempts.emplace_back("gpu-job-" + std::to_string(seq), 1);
  auto stored = store_->ReadJobVariability(attempts);
  ASSERT_TRUE(stored.ok()) << stored.status();
  for (int i = 0; i < 12; ++i) EXPECT_TRUE((*stored)[i].has_value()) << i;
  EXPECT_FALSE((*stored)[12].has_value());  // not counted yet: the manager has not seen it

  // Restarted: job 13 (ended meanwhile) is summarized from its samples, the others read.
  StartManager();
  jobs.clear();
  for (const Job& job : manager_->Snapshot([](const Job&) { return true; }).jobs) {
    jobs.push_back(job);
  }
  ASSERT_EQ(jobs.size(), 13u);
  report = reads_->Variability(0, "");
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectSame(Reference(*store_, jobs), report->gpus);
  auto for_model = reads_->Variability(0, "resnet18");
  ASSERT_TRUE(for_model.ok()) << for_model.status();
  std::vector<Job> resnet18;
  for (const Job& job : jobs) {
    if (job.spec.model == "resnet18") resnet18.push_back(job);
  }
  ExpectSame(Reference(*store_, resnet18), for_model->gpus);

  // A stored summary is what a restarted report reads: changed, the answer changes.
  auto summary = store_->ReadJobVariability({{"gpu-job-3", 1}});
  ASSERT_TRUE(summary.ok() && (*summary)[0]) << summary.status();
  JobVariability changed = *(*summary)[0];
  changed.ranks.at(0).iterations = 1000;
  std::promise<absl::Status> written;
  store_->WriteJobVariabilityAsync({{"gpu-job-3", 1, changed}},
                                   [&](absl::Status s) { written.set_value(s); });
  ASSERT_TRUE(written.get_future().get().ok());
  const int64_t before = report->gpus.front().iterations;
  StartManager();
  report = reads_->Variability(0, "");
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->gpus.front().gpu_uuid, "GPU-3");
  EXPECT_EQ(report->gpus.front().iterations, before - 6 + 1000);
}

}  // namespace
}  // namespace bench
