// Job diagnoses in the store: computed from the stored samples on the writer thread,
// kept per (job, attempt) and loaded with the jobs after a reopen; a database from before
// diagnoses marks its ended jobs "no data".
#include <sqlite3.h>

#include <future>

#include <gtest/gtest.h>

#include "server/results/job_diagnosis.h"
#include "server/store/store.h"
#include "server/store/store_test_fixture.h"

namespace bench {
namespace {

Job EndedJob(Job job) {
  job.attempt = 1;
  job.state = JobState::kSucceeded;
  job.device_kind = DeviceKind::kCpu;
  job.placements = {{"a", {0}, {0}}, {"b", {1}, {1}}};
  job.rank_devices = {{0, "a", "host-a", 0, "", ""}, {1, "b", "host-b", 1, "", ""}};
  return job;
}

absl::StatusOr<JobDiagnosis> DiagnoseAndWait(Store& store, const Job& job) {
  std::promise<absl::StatusOr<JobDiagnosis>> promise;
  EXPECT_TRUE(store.DiagnoseJobAsync(
      JobInputsOf(job), job.attempt,
      [&](absl::StatusOr<JobDiagnosis> d) { promise.set_value(std::move(d)); }));
  return promise.get_future().get();
}

TEST_F(StoreTest, AJobsDiagnosisIsComputedFromItsSamplesStoredAndReloaded) {
  Job job = EndedJob(MakeJob(1));
  JobDiagnosis computed;
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(job).ok());
    ASSERT_TRUE((*store)->UpdateJob(job).ok());
    std::vector<IterationSample> samples;
    for (int rank = 0; rank < 2; ++rank) {
      for (int i = 1; i <= 5; ++i) {
        IterationSample s = Sample(job.id, rank, i);
        s.warmup = i == 1;
        s.step_time_s = 0.1;
        samples.push_back(s);
      }
    }
    ASSERT_TRUE((*store)->AppendSamplesSync(samples).ok());
    absl::StatusOr<JobDiagnosis> diagnosis = DiagnoseAndWait(**store, job);
    ASSERT_TRUE(diagnosis.ok()) << diagnosis.status();
    EXPECT_TRUE(diagnosis->available);
    EXPECT_EQ(diagnosis->attempt, 1);
    EXPECT_FALSE(diagnosis->checks.empty());
    computed = *diagnosis;
    // Recomputed on the reader from the same data: the same.
    absl::StatusOr<JobDiagnosis> again = (*store)->RediagnoseJob(JobInputsOf(job), 1);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, computed);
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  ASSERT_NE(jobs->front().diagnosis, nullptr);
  EXPECT_EQ(*jobs->front().diagnosis, computed);
}

TEST_F(StoreTest, AnAttemptWithoutMeasuredIterationsIsStoredAsNoData) {
  Job job = EndedJob(MakeJob(1));
  job.state = JobState::kFailed;
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(job).ok());
    ASSERT_TRUE((*store)->UpdateJob(job).ok());
    absl::StatusOr<JobDiagnosis> diagnosis = DiagnoseAndWait(**store, job);
    ASSERT_TRUE(diagnosis.ok()) << diagnosis.status();
    EXPECT_FALSE(diagnosis->available);
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_NE(jobs->front().diagnosis, nullptr);
  EXPECT_FALSE(jobs->front().diagnosis->available);
  EXPECT_EQ(jobs->front().diagnosis->note, kDiagnosisNoMeasuredIterations);
}

TEST_F(StoreTest, AnotherAttemptsDiagnosisIsNotTheJobs) {
  Job job = EndedJob(MakeJob(1));
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(job).ok());
    ASSERT_TRUE((*store)->UpdateJob(job).ok());
    ASSERT_TRUE(DiagnoseAndWait(**store, job).ok());
    job.attempt = 2;  // requeued after the diagnosis of attempt 1
    job.state = JobState::kRunning;
    ASSERT_TRUE((*store)->UpdateJob(job).ok());
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ(jobs->front().diagnosis, nullptr);
}

// A database from before diagnoses: its ended jobs come back with "no data",
// its running and cancelled ones with none (a running one is diagnosed when it ends).
TEST_F(StoreTest, JobsThatEndedBeforeDiagnosesHaveNoData) {
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    Job ended = EndedJob(MakeJob(1));
    Job running = EndedJob(MakeJob(2));
    running.state = JobState::kRunning;
    Job cancelled = EndedJob(MakeJob(3));
    cancelled.state = JobState::kCancelled;
    for (const Job* job : {&ended, &running, &cancelled}) {
      ASSERT_TRUE((*store)->InsertJob(*job).ok());
      ASSERT_TRUE((*store)->UpdateJob(*job).ok());
    }
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  // Back to schema 15, before job_diagnoses (migration 16) and what came after it
  // (17: sample_series' counts; 18: job_variability).
  const std::string before =
      "DROP TABLE job_variability; ALTER TABLE sample_series DROP COLUMN samples; "
      "ALTER TABLE sample_series DROP COLUMN nonfinite_losses; "
      "DROP TABLE job_diagnoses; DELETE FROM schema_version WHERE version >= 16;";
  ASSERT_EQ(sqlite3_exec(db, kToSchema18, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, before.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  ASSERT_NE((*jobs)[0].diagnosis, nullptr);
  EXPECT_FALSE((*jobs)[0].diagnosis->available);
  EXPECT_EQ((*jobs)[0].diagnosis->note, kDiagnosisBeforeBenchd);
  EXPECT_EQ((*jobs)[1].diagnosis, nullptr);
  EXPECT_EQ((*jobs)[2].diagnosis, nullptr);
}

}  // namespace
}  // namespace bench
