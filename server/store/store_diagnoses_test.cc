// Job diagnoses in the store: computed from the stored samples on the writer thread,
// kept per (job, attempt) and loaded with the jobs after a reopen; a database from before
// diagnoses marks its ended jobs "no data".
#include <sqlite3.h>

#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/results/job_diagnosis.h"
#include "server/results/telemetry.h"
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

TEST_F(StoreTest, OneReadOfAnAttemptServesBothItsTelemetryJoinAndItsDiagnosis) {
  Job job = EndedJob(MakeJob(1));
  job.device_kind = DeviceKind::kCuda;
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->InsertJob(job).ok());
  ASSERT_TRUE((*store)->UpdateJob(job).ok());
  // Two ranks, 1 s per iteration from t0, with a GPU reading every 0.5 s over them.
  constexpr int64_t kT0Ns = 1'700'000'000'000'000'000;
  std::vector<IterationSample> samples;
  std::vector<GpuSample> readings;
  for (int rank = 0; rank < 2; ++rank) {
    for (int i = 1; i <= 6; ++i) {
      IterationSample s = Sample(job.id, rank, i);
      s.warmup = i == 1;
      s.step_time_s = 1.0;
      s.received_unix_ns = kT0Ns + i * 1'000'000'000LL;
      samples.push_back(s);
    }
    for (int k = 0; k <= 14; ++k) {
      GpuSample g;
      g.job_id = job.id;
      g.attempt = 1;
      g.rank = rank;
      g.seq = k;
      g.gpu_uuid = rank == 0 ? "GPU-a" : "GPU-b";
      g.gpu_index = rank;
      g.time_unix_ns = kT0Ns + k * 500'000'000LL;
      g.power_w = 300.0 + 10 * rank + k;
      g.sm_clock_mhz = 1980.0 - k;
      g.energy_j = 1000.0 + 150.0 * k;
      readings.push_back(g);
    }
  }
  ASSERT_TRUE((*store)->AppendSamplesSync(samples, readings).ok());

  Store::TelemetryRequest request;
  request.job_id = job.id;
  request.attempt = 1;
  request.agent_by_rank = {{0, "a"}, {1, "b"}};
  request.expect_gpus = true;
  // Apart, as before: each reads the attempt's rows.
  std::promise<absl::StatusOr<JoinedTelemetry>> apart_joined;
  ASSERT_TRUE((*store)->JoinTelemetryAsync(
      request, [&](absl::StatusOr<JoinedTelemetry> j) { apart_joined.set_value(std::move(j)); }));
  absl::StatusOr<JoinedTelemetry> joined_apart = apart_joined.get_future().get();
  ASSERT_TRUE(joined_apart.ok()) << joined_apart.status();
  ASSERT_EQ(joined_apart->gpus.size(), 2u);
  ASSERT_FALSE(joined_apart->iterations.empty());
  absl::StatusOr<JobDiagnosis> diagnosed_apart = DiagnoseAndWait(**store, job);
  ASSERT_TRUE(diagnosed_apart.ok()) << diagnosed_apart.status();
  ASSERT_TRUE(diagnosed_apart->available);

  // Together: the same results from one read, the telemetry's answer first.
  std::vector<std::string> answered;
  std::promise<absl::StatusOr<JoinedTelemetry>> together_joined;
  std::promise<absl::StatusOr<JobDiagnosis>> together_diagnosed;
  ASSERT_TRUE((*store)->AnalyzeAttemptAsync(
      request, JobInputsOf(job),
      [&](absl::StatusOr<JoinedTelemetry> j) {
        answered.push_back("telemetry");
        together_joined.set_value(std::move(j));
      },
      [&](absl::StatusOr<JobDiagnosis> d) {
        answered.push_back("diagnosis");
        together_diagnosed.set_value(std::move(d));
      }));
  absl::StatusOr<JoinedTelemetry> joined = together_joined.get_future().get();
  absl::StatusOr<JobDiagnosis> diagnosed = together_diagnosed.get_future().get();
  ASSERT_TRUE(joined.ok()) << joined.status();
  ASSERT_TRUE(diagnosed.ok()) << diagnosed.status();
  EXPECT_EQ(answered, (std::vector<std::string>{"telemetry", "diagnosis"}));
  EXPECT_EQ(*diagnosed, *diagnosed_apart);
  ASSERT_EQ(joined->gpus.size(), joined_apart->gpus.size());
  for (size_t i = 0; i < joined->gpus.size(); ++i) {
    EXPECT_EQ(joined->gpus[i].rank, joined_apart->gpus[i].rank);
    EXPECT_EQ(joined->gpus[i].samples, joined_apart->gpus[i].samples);
    EXPECT_EQ(joined->gpus[i].energy_j, joined_apart->gpus[i].energy_j);
  }
  ASSERT_EQ(joined->iterations.size(), joined_apart->iterations.size());
  for (size_t i = 0; i < joined->iterations.size(); ++i) {
    EXPECT_EQ(joined->iterations[i].iteration, joined_apart->iterations[i].iteration);
    EXPECT_EQ(joined->iterations[i].power_w_mean, joined_apart->iterations[i].power_w_mean);
  }
  EXPECT_EQ(joined->note, joined_apart->note);
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
