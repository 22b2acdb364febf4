#include "server/store.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <filesystem>
#include <fstream>
#include <future>

#include <gtest/gtest.h>
#include <sqlite3.h>

namespace bench {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_store_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    path_ = dir_ + "/bench.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static Job MakeJob(int seq) {
    Job job;
    job.seq = seq;
    job.id = "job-" + std::to_string(seq);
    job.spec.model = "resnet50";
    job.spec.devices = 2;
    job.spec.precision = Precision::kAmp;
    job.spec.batch_size = 8;
    job.spec.iterations = 5;
    job.spec.warmup_iterations = 1;
    job.spec.image_size = 64;
    job.spec.labels = {{"team", "infra"}};
    job.spec.request_id = "req-" + std::to_string(seq);
    job.created = absl::FromUnixMillis(1700000000000 + seq);
    job.history.push_back({JobState::kQueued, "submitted", job.created});
    return job;
  }
  static IterationSample Sample(const std::string& job, int rank, int iteration) {
    IterationSample s;
    s.job_id = job;
    s.attempt = 1;
    s.rank = rank;
    s.iteration = iteration;
    s.step_time_s = 0.1 * iteration;
    s.images = 8;
    s.loss = 6.9;
    s.elapsed_s = iteration;
    return s;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(StoreTest, JobsSurviveReopenWithHistoryPlacementsAndSummaries) {
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    Job job = MakeJob(1);
    ASSERT_TRUE((*store)->InsertJob(job).ok());
    job.attempt = 1;
    job.device_kind = DeviceKind::kCpu;
    job.placements = {{"a", {0}, {0}}, {"b", {1}, {1}}};
    job.state = JobState::kSucceeded;
    job.reason = "done";
    job.history.push_back({JobState::kRunning, "placed", absl::FromUnixMillis(1700000001000)});
    job.history.push_back({JobState::kSucceeded, "done", absl::FromUnixMillis(1700000002000)});
    job.parameters = 25557032;
    job.summaries[0] = RankSummary{0, 4, 32, 1.5, 0.3};
    job.summaries[1] = RankSummary{1, 4, 32, 1.6, 0.3};
    ASSERT_TRUE((*store)->UpdateJob(job).ok());
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  const Job& job = jobs->front();
  EXPECT_EQ(job.id, "job-1");
  EXPECT_EQ(job.spec.precision, Precision::kAmp);
  EXPECT_EQ(job.spec.labels.at("team"), "infra");
  EXPECT_EQ(job.spec.request_id, "req-1");
  EXPECT_EQ(job.state, JobState::kSucceeded);
  ASSERT_EQ(job.history.size(), 3u);
  EXPECT_EQ(job.history[1].state, JobState::kRunning);
  ASSERT_EQ(job.placements.size(), 2u);
  EXPECT_EQ(job.placements[1].agent, "b");
  EXPECT_EQ(job.parameters, 25557032);
  EXPECT_DOUBLE_EQ(job.summaries.at(1).window_s, 1.6);
  EXPECT_EQ(job.device_kind, DeviceKind::kCpu);
}

TEST_F(StoreTest, ShapeConstraintsLimitsAndRequeuesSurviveReopen) {
  Job job = MakeJob(1);
  job.spec.nodes = 2;
  job.spec.devices_per_node = 1;
  job.spec.allowed_nodes = {"dgx-01", "dgx-02"};
  job.spec.node_labels = {{"rack", "r2"}, {"fabric", "ib=hdr"}};
  job.spec.wall_time_limit_s = 3600;
  job.spec.hang_timeout_s = 120;
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(job).ok());
    job.requeues = 1;
    ASSERT_TRUE((*store)->UpdateJob(job).ok());
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_TRUE(jobs->front().spec == job.spec);
  EXPECT_EQ(jobs->front().spec.node_labels.at("fabric"), "ib=hdr");
  EXPECT_EQ(jobs->front().requeues, 1);
}

TEST_F(StoreTest, TheDatabaseIdIsKeptAcrossReopensAndNewForANewDatabase) {
  std::string id;
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    id = (*store)->database_id();
    EXPECT_EQ(id.size(), 32u);
  }
  auto again = Store::Open(path_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->database_id(), id);
  auto other = Store::Open(dir_ + "/other.db");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE((*other)->database_id(), id);
}

TEST_F(StoreTest, SamplesAreStoredExactlyOnce) {
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->InsertJob(MakeJob(1)).ok());
  std::vector<IterationSample> batch;
  for (int rank = 0; rank < 2; ++rank) {
    for (int it = 1; it <= 5; ++it) batch.push_back(Sample("job-1", rank, it));
  }
  auto first = (*store)->AppendSamplesSync(batch);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->stored, 10);
  EXPECT_EQ(first->duplicates, 0);
  // A redelivered batch (at-least-once) changes nothing.
  auto again = (*store)->AppendSamplesSync(batch);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->stored, 0);
  EXPECT_EQ(again->duplicates, 10);
  EXPECT_EQ(*(*store)->CountSamples("job-1", 1), 10);
  auto by_rank = (*store)->IterationsByRank("job-1", 1);
  ASSERT_TRUE(by_rank.ok());
  EXPECT_EQ(by_rank->at(0), 5);
  EXPECT_EQ(by_rank->at(1), 5);
  auto samples = (*store)->ReadSamples("job-1", 1);
  ASSERT_TRUE(samples.ok());
  EXPECT_DOUBLE_EQ(samples->at(2).step_time_s, 0.3);
}

// Batches large enough for the multi-row inserts, interleaved by rank as agents send
// them, with repeats inside a batch and across batches: each identity is stored once,
// the first copy wins, and the counts add up per rank.
TEST_F(StoreTest, LargeInterleavedBatchesCountStoredAndDuplicatesPerRank) {
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->InsertJob(MakeJob(1)).ok());
  ASSERT_TRUE((*store)->InsertJob(MakeJob(2)).ok());
  std::vector<IterationSample> batch;
  for (int it = 1; it <= 150; ++it) {
    for (int rank = 0; rank < 3; ++rank) batch.push_back(Sample("job-1", rank, it));
    batch.push_back(Sample("job-2", 0, it));
  }
  IterationSample repeat = Sample("job-1", 1, 7);
  repeat.step_time_s = 99;  // a later copy of a stored identity: not stored
  batch.push_back(repeat);
  auto first = (*store)->AppendSamplesSync(batch);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->stored, 600);
  EXPECT_EQ(first->duplicates, 1);
  EXPECT_EQ((first->stored_by_rank.at({"job-1", 1, 1})), 150);
  EXPECT_EQ((first->stored_by_rank.at({"job-2", 1, 0})), 150);

  std::vector<IterationSample> second;
  for (int it = 140; it <= 160; ++it) second.push_back(Sample("job-1", 2, it));
  auto again = (*store)->AppendSamplesSync(second);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->stored, 10);
  EXPECT_EQ(again->duplicates, 11);
  EXPECT_EQ(again->stored_by_rank.size(), 1u);
  EXPECT_EQ(*(*store)->CountSamples("job-1", 1), 460);
  auto samples = (*store)->ReadSamples("job-1", 1);
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 460u);
  EXPECT_EQ(samples->at(150 + 6).rank, 1);
  EXPECT_EQ(samples->at(150 + 6).iteration, 7);
  EXPECT_DOUBLE_EQ(samples->at(150 + 6).step_time_s, 0.7);
}

TEST_F(StoreTest, ManyConcurrentAppendsAllCommit) {
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok());
  std::atomic<int> stored{0}, done{0};
  for (int batch = 0; batch < 200; ++batch) {
    std::vector<IterationSample> samples;
    for (int i = 0; i < 50; ++i) samples.push_back(Sample("job-x", batch, i + 1));
    (*store)->AppendSamples(std::move(samples), [&](absl::StatusOr<AppendResult> r) {
      if (r.ok()) stored += r->stored;
      ++done;
    });
  }
  while (done < 200) usleep(1000);
  EXPECT_EQ(stored, 10000);
  EXPECT_EQ(*(*store)->CountSamples("job-x", 1), 10000);
}

TEST_F(StoreTest, TheWalIsCheckpointedInTheBackgroundAndStaysBounded) {
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok());
  // Each commit rewrites one leaf page per rank, so the WAL passes kCheckpointFrames
  // several times over; without checkpoints it would grow to well over 100 MiB.
  constexpr int kCommits = 1500;
  constexpr int kRanks = 64;
  uintmax_t max_wal = 0;
  for (int i = 1; i <= kCommits; ++i) {
    std::vector<IterationSample> samples;
    for (int rank = 0; rank < kRanks; ++rank) samples.push_back(Sample("job-w", rank, i));
    auto result = (*store)->AppendSamplesSync(std::move(samples));
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->stored, kRanks);
    std::error_code error;
    max_wal = std::max(max_wal, std::filesystem::file_size(path_ + "-wal", error));
  }
  EXPECT_LT(max_wal, uintmax_t{3} * Store::kCheckpointFrames * 4096);
  EXPECT_EQ(*(*store)->CountSamples("job-w", 1), kCommits * kRanks);
  store->reset();
  auto reopened = Store::Open(path_);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(*(*reopened)->CountSamples("job-w", 1), kCommits * kRanks);
}

TEST_F(StoreTest, DuplicateRequestIdIsRefusedAndOthersUnaffected) {
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->InsertJob(MakeJob(1)).ok());
  Job clash = MakeJob(2);
  clash.spec.request_id = "req-1";
  EXPECT_EQ((*store)->InsertJob(clash).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE((*store)->InsertJob(MakeJob(3)).ok());
  EXPECT_EQ((*store)->LoadJobs()->size(), 2u);
}

TEST_F(StoreTest, ACorruptFileIsAClearErrorAndIsLeftAsItWas) {
  {
    std::ofstream out(path_);
    out << std::string(8192, 'x');
  }
  auto store = Store::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_NE(store.status().message().find(path_), std::string::npos);
  EXPECT_EQ(std::filesystem::file_size(path_), 8192u);
}

TEST_F(StoreTest, ANewerSchemaIsRefused) {
  { ASSERT_TRUE(Store::Open(path_).ok()); }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "INSERT INTO schema_version VALUES (99)", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = Store::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("99"), std::string::npos);
}

TEST_F(StoreTest, AMissingDirectoryIsUnavailable) {
  auto store = Store::Open(dir_ + "/no/such/dir/bench.db");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable) << store.status();
}

}  // namespace
}  // namespace bench

namespace bench {
namespace {

TEST_F(StoreTest, GpuSamplesAreStoredExactlyOnceWithUnsetReadingsKeptUnset) {
  auto store = std::move(Store::Open(path_)).value();
  ASSERT_TRUE(store->InsertJob(MakeJob(1)).ok());
  GpuSample full;
  full.job_id = "job-1";
  full.attempt = 1;
  full.rank = 0;
  full.seq = 1;
  full.gpu_uuid = "GPU-x";
  full.time_unix_ns = 1'700'000'000'000'000'000;
  full.power_w = 301.5;
  full.energy_j = 1e6;
  full.throttle_reasons = uint64_t{1} << 63;  // the top bit survives SQLite's signed integer
  full.memory_used_bytes = int64_t{80} << 30;
  GpuSample sparse = full;
  sparse.seq = 2;
  sparse.power_w.reset();
  sparse.throttle_reasons.reset();
  auto first = store->AppendSamplesSync({}, {full, sparse});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->gpu_stored, 2);
  auto again = store->AppendSamplesSync({}, {full});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->gpu_stored, 0);
  EXPECT_EQ(again->gpu_duplicates, 1);

  auto read = store->ReadGpuSamples("job-1", 1);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->size(), 2u);
  EXPECT_DOUBLE_EQ(*(*read)[0].power_w, 301.5);
  EXPECT_EQ(*(*read)[0].throttle_reasons, uint64_t{1} << 63);
  EXPECT_EQ(*(*read)[0].memory_used_bytes, int64_t{80} << 30);
  EXPECT_FALSE((*read)[1].power_w.has_value());
  EXPECT_FALSE((*read)[1].throttle_reasons.has_value());
  EXPECT_FALSE((*read)[1].sm_clock_mhz.has_value());
}

// A database written by schema 1 (before GPU telemetry) opens, migrates, and keeps its
// jobs and samples.
TEST_F(StoreTest, ASchemaOneDatabaseIsMigratedWithNothingLost) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  const char* v1 = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (1);
CREATE TABLE jobs (id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, request_id TEXT UNIQUE,
  model TEXT NOT NULL, devices INTEGER NOT NULL, precision TEXT NOT NULL,
  batch_size INTEGER NOT NULL, iterations INTEGER NOT NULL,
  warmup_iterations INTEGER NOT NULL, image_size INTEGER NOT NULL, data TEXT NOT NULL,
  name TEXT NOT NULL, state TEXT NOT NULL, reason TEXT NOT NULL, attempt INTEGER NOT NULL,
  device_kind TEXT NOT NULL, parameters INTEGER NOT NULL, created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL);
CREATE TABLE job_labels (job_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY (job_id, key)) WITHOUT ROWID;
CREATE TABLE job_history (job_id TEXT NOT NULL, seq INTEGER NOT NULL, state TEXT NOT NULL,
  reason TEXT NOT NULL, time_ms INTEGER NOT NULL, PRIMARY KEY (job_id, seq)) WITHOUT ROWID;
CREATE TABLE job_ranks (job_id TEXT NOT NULL, attempt INTEGER NOT NULL, rank INTEGER NOT NULL,
  agent TEXT NOT NULL, device_index INTEGER NOT NULL,
  PRIMARY KEY (job_id, attempt, rank)) WITHOUT ROWID;
CREATE TABLE rank_summaries (job_id TEXT NOT NULL, attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL, measured_iterations INTEGER NOT NULL,
  measured_images INTEGER NOT NULL, window_s REAL NOT NULL, step_time_median_s REAL NOT NULL,
  PRIMARY KEY (job_id, attempt, rank)) WITHOUT ROWID;
CREATE TABLE samples (job_id TEXT NOT NULL, attempt INTEGER NOT NULL, rank INTEGER NOT NULL,
  iteration INTEGER NOT NULL, step_time_s REAL NOT NULL, images INTEGER NOT NULL,
  loss REAL NOT NULL, data_time_s REAL NOT NULL, elapsed_s REAL NOT NULL,
  warmup INTEGER NOT NULL, PRIMARY KEY (job_id, attempt, rank, iteration)) WITHOUT ROWID;
INSERT INTO jobs VALUES ('job-000001', 1, NULL, 'resnet50', 1, 'fp32', 4, 3, 1, 64,
  'synthetic', '', 'SUCCEEDED', 'all 1 ranks finished', 1, 'cpu', 25557032, 1700000000000,
  1700000000000);
INSERT INTO rank_summaries VALUES ('job-000001', 1, 0, 2, 8, 2.0, 1.0);
INSERT INTO samples VALUES ('job-000001', 1, 0, 1, 1.0, 4, 6.9, 0, 1.0, 1);
INSERT INTO samples VALUES ('job-000001', 1, 0, 2, 1.0, 4, 6.8, 0, 2.0, 0);
)sql";
  ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].state, JobState::kSucceeded);
  EXPECT_EQ((*jobs)[0].summaries.at(0).measured_images, 8);
  EXPECT_EQ((*jobs)[0].telemetry_note, "");
  auto samples = (*store)->ReadSamples("job-000001", 1);
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 2u);
  EXPECT_EQ((*samples)[1].received_unix_ns, 0) << "unknown in schema 1";
  // And the migrated file takes new rows of both kinds.
  Job job = MakeJob(2);
  EXPECT_TRUE((*store)->InsertJob(job).ok());
}

}  // namespace
}  // namespace bench

namespace bench {
namespace {

// A database written by schema 2 (before rank devices, versions and baselines) opens,
// migrates, and keeps its jobs: their ranks get devices with what schema 2 knew (agent
// and device index), no UUIDs.
TEST_F(StoreTest, ASchemaTwoDatabaseIsMigratedWithNothingLost) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  const char* v2 = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (1);
INSERT INTO schema_version VALUES (2);
CREATE TABLE jobs (id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, request_id TEXT UNIQUE,
  model TEXT NOT NULL, devices INTEGER NOT NULL, precision TEXT NOT NULL,
  batch_size INTEGER NOT NULL, iterations INTEGER NOT NULL,
  warmup_iterations INTEGER NOT NULL, image_size INTEGER NOT NULL, data TEXT NOT NULL,
  name TEXT NOT NULL, state TEXT NOT NULL, reason TEXT NOT NULL, attempt INTEGER NOT NULL,
  device_kind TEXT NOT NULL, parameters INTEGER NOT NULL, created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL, telemetry_note TEXT NOT NULL DEFAULT '');
CREATE TABLE job_labels (job_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY (job_id, key)) WITHOUT ROWID;
CREATE TABLE job_history (job_id TEXT NOT NULL, seq INTEGER NOT NULL, state TEXT NOT NULL,
  reason TEXT NOT NULL, time_ms INTEGER NOT NULL, PRIMARY KEY (job_id, seq)) WITHOUT ROWID;
CREATE TABLE job_ranks (job_id TEXT NOT NULL, attempt INTEGER NOT NULL, rank INTEGER NOT NULL,
  agent TEXT NOT NULL, device_index INTEGER NOT NULL,
  PRIMARY KEY (job_id, attempt, rank)) WITHOUT ROWID;
CREATE TABLE rank_summaries (job_id TEXT NOT NULL, attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL, measured_iterations INTEGER NOT NULL,
  measured_images INTEGER NOT NULL, window_s REAL NOT NULL, step_time_median_s REAL NOT NULL,
  PRIMARY KEY (job_id, attempt, rank)) WITHOUT ROWID;
CREATE TABLE samples (job_id TEXT NOT NULL, attempt INTEGER NOT NULL, rank INTEGER NOT NULL,
  iteration INTEGER NOT NULL, step_time_s REAL NOT NULL, images INTEGER NOT NULL,
  loss REAL NOT NULL, data_time_s REAL NOT NULL, elapsed_s REAL NOT NULL,
  warmup INTEGER NOT NULL, received_unix_ns INTEGER NOT NULL DEFAULT 0, power_w_mean REAL,
  sm_clock_mhz_mean REAL, PRIMARY KEY (job_id, attempt, rank, iteration)) WITHOUT ROWID;
CREATE TABLE gpu_samples (job_id TEXT NOT NULL, attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL, seq INTEGER NOT NULL, gpu_uuid TEXT NOT NULL,
  gpu_index INTEGER NOT NULL, time_unix_ns INTEGER NOT NULL, power_w REAL,
  power_average_w REAL, energy_j REAL, sm_clock_mhz REAL, memory_clock_mhz REAL,
  temperature_c REAL, gpu_utilization_pct REAL, memory_utilization_pct REAL,
  memory_used_bytes INTEGER, throttle_reasons INTEGER,
  PRIMARY KEY (job_id, attempt, rank, seq)) WITHOUT ROWID;
CREATE TABLE gpu_telemetry (job_id TEXT NOT NULL, attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL, agent TEXT NOT NULL, gpu_index INTEGER NOT NULL,
  gpu_uuid TEXT NOT NULL, samples INTEGER NOT NULL, energy_j REAL, energy_per_image_j REAL,
  images_per_second_per_watt REAL,
  power_count INTEGER NOT NULL, power_p5 REAL, power_p50 REAL, power_p95 REAL,
  sm_clock_count INTEGER NOT NULL, sm_clock_p5 REAL, sm_clock_p50 REAL, sm_clock_p95 REAL,
  temperature_count INTEGER NOT NULL, temperature_p5 REAL, temperature_p50 REAL,
  temperature_p95 REAL, throttle_reasons INTEGER NOT NULL,
  PRIMARY KEY (job_id, attempt, rank)) WITHOUT ROWID;
INSERT INTO jobs VALUES ('job-000001', 1, NULL, 'resnet50', 1, 'amp', 4, 3, 1, 64,
  'synthetic', '', 'SUCCEEDED', 'all 1 ranks finished', 1, 'cuda', 25557032, 1700000000000,
  1700000000000, '');
INSERT INTO job_ranks VALUES ('job-000001', 1, 0, 'dgx', 3);
INSERT INTO rank_summaries VALUES ('job-000001', 1, 0, 2, 8, 2.0, 1.0);
INSERT INTO samples (job_id, attempt, rank, iteration, step_time_s, images, loss,
  data_time_s, elapsed_s, warmup, received_unix_ns) VALUES
  ('job-000001', 1, 0, 1, 1.0, 4, 6.9, 0, 1.0, 1, 5);
)sql";
  ASSERT_EQ(sqlite3_exec(db, v2, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  const Job& job = (*jobs)[0];
  EXPECT_EQ(job.state, JobState::kSucceeded);
  ASSERT_EQ(job.placements.size(), 1u);
  ASSERT_EQ(job.rank_devices.size(), 1u);
  EXPECT_EQ(job.rank_devices[0].agent, "dgx");
  EXPECT_EQ(job.rank_devices[0].device_index, 3);
  EXPECT_EQ(job.rank_devices[0].gpu_uuid, "") << "unknown before schema 3";
  EXPECT_TRUE(job.rank_versions.empty());
  EXPECT_EQ((*store)->ReadSamples("job-000001", 1)->size(), 1u);
  EXPECT_TRUE((*store)->LoadBaselines()->empty());
  // The migrated file takes baselines and new jobs.
  Baseline baseline;
  baseline.configuration = ConfigurationOf(job);
  baseline.job_id = job.id;
  baseline.images_per_second = 4;
  std::promise<absl::Status> put;
  (*store)->PutBaselineAsync(baseline, [&](absl::Status s) { put.set_value(s); });
  EXPECT_TRUE(put.get_future().get().ok());
  EXPECT_TRUE((*store)->InsertJob(MakeJob(2)).ok());
}

// A database of schema 5 (samples keyed by (job_id, attempt, rank, iteration)) is
// migrated to integer-keyed samples: every row keeps its values, the readers and the
// `samples` view see them as before, and identities stay exactly-once across the move.
TEST_F(StoreTest, ASchemaFiveDatabaseKeepsItsSamplesInTheIntegerKeyedTable) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  const char* v5 = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (1), (2), (3), (4), (5);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO meta VALUES ('database_id', 'feedfeedfeedfeedfeedfeedfeedfeed');
CREATE TABLE job_ranks (job_id TEXT NOT NULL, attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL, agent TEXT NOT NULL, device_index INTEGER NOT NULL,
  PRIMARY KEY (job_id, attempt, rank)) WITHOUT ROWID;
CREATE TABLE rank_summaries (job_id TEXT NOT NULL, attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL, PRIMARY KEY (job_id, attempt, rank)) WITHOUT ROWID;
CREATE TABLE samples (job_id TEXT NOT NULL, attempt INTEGER NOT NULL, rank INTEGER NOT NULL,
  iteration INTEGER NOT NULL, step_time_s REAL NOT NULL, images INTEGER NOT NULL,
  loss REAL NOT NULL, data_time_s REAL NOT NULL, elapsed_s REAL NOT NULL,
  warmup INTEGER NOT NULL, received_unix_ns INTEGER NOT NULL DEFAULT 0, power_w_mean REAL,
  sm_clock_mhz_mean REAL, PRIMARY KEY (job_id, attempt, rank, iteration)) WITHOUT ROWID;
INSERT INTO samples VALUES
  ('job-000001', 1, 1, 0, 0.5, 4, 6.9, 0.01, 0.5, 1, 11, NULL, NULL),
  ('job-000001', 1, 0, 2147483647, 0.25, 4, 6.1, 0.0, 9.0, 0, 12, 250.0, 1410.0),
  ('job-000001', 1, 0, 7, 1.5, 4, 6.7, 0.02, 3.0, 0, 13, 300.0, NULL),
  ('job-000001', 2, 0, 1, 2.5, 8, 5.0, 0.0, 1.0, 0, 14, NULL, NULL),
  ('job-000002', 1, 0, 1, 3.5, 2, 4.0, 0.0, 1.0, 1, 15, NULL, NULL);
)sql";
  ASSERT_EQ(sqlite3_exec(db, v5, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto opened = Store::Open(path_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Store& store = **opened;
  EXPECT_EQ(store.database_id(), "feedfeedfeedfeedfeedfeedfeedfeed");
  EXPECT_EQ(*store.CountSamples("job-000001", 1), 3);
  EXPECT_EQ(*store.CountSamples("job-000001", 2), 1);
  EXPECT_EQ(*store.CountSamples("job-000002", 1), 1);
  auto samples = store.ReadSamples("job-000001", 1);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 3u);
  EXPECT_EQ((*samples)[0].rank, 0);
  EXPECT_EQ((*samples)[0].iteration, 7);
  EXPECT_EQ((*samples)[0].step_time_s, 1.5);
  EXPECT_EQ((*samples)[0].images, 4);
  EXPECT_EQ((*samples)[0].loss, 6.7);
  EXPECT_EQ((*samples)[0].data_time_s, 0.02);
  EXPECT_EQ((*samples)[0].elapsed_s, 3.0);
  EXPECT_FALSE((*samples)[0].warmup);
  EXPECT_EQ((*samples)[0].received_unix_ns, 13);
  EXPECT_EQ((*samples)[1].iteration, 2147483647);
  EXPECT_EQ((*samples)[2].rank, 1);
  EXPECT_EQ((*samples)[2].iteration, 0);
  EXPECT_TRUE((*samples)[2].warmup);
  EXPECT_EQ(store.ReadSamples("job-000001", 1, 8)->size(), 1u);
  EXPECT_EQ(*store.IterationsByRank("job-000001", 1), (std::map<int, int>{{0, 2}, {1, 1}}));
  auto means = store.ReadIterationMeans("job-000001", 1);
  ASSERT_TRUE(means.ok()) << means.status();
  EXPECT_EQ(means->at({0, 7}).power_w, 300.0);
  EXPECT_FALSE(means->at({0, 7}).sm_clock_mhz.has_value());
  EXPECT_EQ(means->at({0, 2147483647}).sm_clock_mhz, 1410.0);
  EXPECT_FALSE(means->at({1, 0}).power_w.has_value());

  // A migrated identity is a duplicate; a new one, in a migrated or a new series, is stored.
  auto appended = store.AppendSamplesSync(
      {Sample("job-000001", 0, 7), Sample("job-000001", 0, 8), Sample("job-000003", 2, 1)});
  ASSERT_TRUE(appended.ok()) << appended.status();
  EXPECT_EQ(appended->stored, 2);
  EXPECT_EQ(appended->duplicates, 1);
  EXPECT_EQ(appended->stored_by_rank,
            (std::map<std::tuple<std::string, int, int>, int>{{{"job-000001", 1, 0}, 1},
                                                              {{"job-000003", 1, 2}, 1}}));
  EXPECT_EQ(*store.CountSamples("job-000001", 1), 4);

  // Ad-hoc SQL against `samples` still works.
  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT count(*), sum(iteration), sum(step_time_s) FROM samples "
                               "WHERE job_id='job-000001' AND attempt=1 AND rank=0",
                               -1, &stmt, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(stmt, 0), 3);
  EXPECT_EQ(sqlite3_column_int64(stmt, 1), int64_t{2147483647} + 7 + 8);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_F(StoreTest, RankDevicesVersionsAndBaselinesSurviveReopen) {
  {
    auto store = std::move(Store::Open(path_)).value();
    Job job = MakeJob(1);
    ASSERT_TRUE(store->InsertJob(job).ok());
    job.attempt = 1;
    job.device_kind = DeviceKind::kCuda;
    job.placements = {{"dgx", {0, 1}, {2, 5}}};
    job.rank_devices = {{0, "dgx", "dgx-01", 2, "GPU-aaa", "NVIDIA H100 80GB HBM3"},
                        {1, "dgx", "dgx-01", 5, "GPU-bbb", "NVIDIA H100 80GB HBM3"}};
    job.agent_versions["dgx"] = {{"driver", "550.54.15"}};
    job.rank_versions[0] = {{"torch", "2.3.0"}};
    job.rank_versions[1] = {{"torch", "2.3.1"}};
    ASSERT_TRUE(store->UpdateJob(job).ok());
    // A later write of the same attempt does not rewrite the devices recorded at placement.
    Job later = job;
    later.rank_devices[0].gpu_uuid = "GPU-rewritten";
    ASSERT_TRUE(store->UpdateJob(later).ok());

    for (double ips : {100.0, 200.0}) {  // the second replaces the first
      Baseline baseline;
      baseline.configuration = ConfigurationOf(job);
      baseline.job_id = ips == 100 ? "job-1" : "job-9";
      baseline.images_per_second = ips;
      baseline.lower_tolerance_pct = 3;
      baseline.upper_tolerance_pct = 7;
      baseline.set = absl::FromUnixMillis(1700000000123);
      std::promise<absl::Status> put;
      store->PutBaselineAsync(baseline, [&](absl::Status s) { put.set_value(s); });
      ASSERT_TRUE(put.get_future().get().ok());
    }
  }
  auto store = std::move(Store::Open(path_)).value();
  auto jobs = store->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const Job& job = jobs->at(0);
  ASSERT_EQ(job.rank_devices.size(), 2u);
  EXPECT_EQ(job.rank_devices[0].gpu_uuid, "GPU-aaa");
  EXPECT_EQ(job.rank_devices[1].device_index, 5);
  EXPECT_EQ(job.rank_devices[1].hostname, "dgx-01");
  EXPECT_EQ(job.rank_devices[1].gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(job.agent_versions.at("dgx").at("driver"), "550.54.15");
  EXPECT_EQ(job.rank_versions.at(1).at("torch"), "2.3.1");
  EXPECT_EQ(GpuModelOf(job), "NVIDIA H100 80GB HBM3");

  auto baselines = store->LoadBaselines();
  ASSERT_TRUE(baselines.ok()) << baselines.status();
  ASSERT_EQ(baselines->size(), 1u);
  const Baseline& b = baselines->at(0);
  EXPECT_EQ(b.job_id, "job-9");
  EXPECT_DOUBLE_EQ(b.images_per_second, 200);
  EXPECT_DOUBLE_EQ(b.lower_tolerance_pct, 3);
  EXPECT_DOUBLE_EQ(b.upper_tolerance_pct, 7);
  EXPECT_EQ(b.configuration, ConfigurationOf(job));
  EXPECT_EQ(b.set, absl::FromUnixMillis(1700000000123));
}

TEST_F(StoreTest, ReadSamplesFromAnIteration) {
  auto store = std::move(Store::Open(path_)).value();
  ASSERT_TRUE(store->InsertJob(MakeJob(1)).ok());
  std::vector<IterationSample> batch;
  for (int rank = 0; rank < 2; ++rank) {
    for (int it = 1; it <= 4; ++it) batch.push_back(Sample("job-1", rank, it));
  }
  ASSERT_TRUE(store->AppendSamplesSync(batch).ok());
  auto from3 = store->ReadSamples("job-1", 1, 3);
  ASSERT_TRUE(from3.ok());
  ASSERT_EQ(from3->size(), 4u);
  EXPECT_EQ((*from3)[0].rank, 0);
  EXPECT_EQ((*from3)[0].iteration, 3);
  EXPECT_EQ((*from3)[3].rank, 1);
  EXPECT_EQ((*from3)[3].iteration, 4);
}

// A diverged run's iterations are data: a NaN, +Inf or -Inf loss is stored (it used to
// break `loss REAL NOT NULL` and be dropped as a "duplicate"), read back as itself, and
// counted per rank; a redelivery of them is a duplicate like any other.
TEST_F(StoreTest, NonFiniteLossesAreStoredReadBackAndCounted) {
  auto store = std::move(Store::Open(path_)).value();
  ASSERT_TRUE(store->InsertJob(MakeJob(1)).ok());
  const double kNaN = std::numeric_limits<double>::quiet_NaN();
  const double kInf = std::numeric_limits<double>::infinity();
  // Rank 0: enough samples for the 64- and 8-row inserts, with non-finite runs inside;
  // rank 1: one NaN.
  std::vector<IterationSample> batch;
  for (int it = 1; it <= 80; ++it) {
    IterationSample s = Sample("job-1", 0, it);
    if (it == 3) s.loss = kNaN;
    if (it == 4) s.loss = kInf;
    if (it == 5) s.loss = -kInf;
    if (it >= 70) s.loss = kNaN;  // diverged for good
    batch.push_back(s);
  }
  IterationSample other = Sample("job-1", 1, 1);
  other.loss = kNaN;
  batch.push_back(other);
  auto first = store->AppendSamplesSync(batch);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->stored, 81);
  EXPECT_EQ(first->duplicates, 0);
  EXPECT_EQ(first->nonfinite_losses, 3 + 11 + 1);
  EXPECT_EQ(first->nonfinite_by_rank,
            (std::map<std::tuple<std::string, int, int>, int>{{{"job-1", 1, 0}, 14},
                                                              {{"job-1", 1, 1}, 1}}));
  auto again = store->AppendSamplesSync(batch);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->stored, 0);
  EXPECT_EQ(again->duplicates, 81);
  EXPECT_EQ(again->nonfinite_losses, 0);

  EXPECT_EQ(*store->CountSamples("job-1", 1), 81);
  EXPECT_EQ(*store->NonFiniteLossesByRank("job-1", 1),
            (std::map<int, int64_t>{{0, 14}, {1, 1}}));
  auto samples = store->ReadSamples("job-1", 1);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 81u);
  EXPECT_EQ((*samples)[1].loss, 6.9);
  EXPECT_TRUE(std::isnan((*samples)[2].loss));
  EXPECT_EQ((*samples)[3].loss, kInf);
  EXPECT_EQ((*samples)[4].loss, -kInf);
  EXPECT_EQ((*samples)[5].loss, 6.9);
  EXPECT_TRUE(std::isnan((*samples)[79].loss));
  EXPECT_EQ((*samples)[79].step_time_s, 0.1 * 80);  // the rest of the row is intact
  EXPECT_TRUE(std::isnan((*samples)[80].loss));
  EXPECT_EQ((*samples)[80].rank, 1);
}

// Only a repeated identity is a duplicate: a sample that breaks another constraint (a
// NaN time in a NOT NULL column) fails the write instead of vanishing as a duplicate.
TEST_F(StoreTest, AConstraintOtherThanTheIdentityIsAnErrorNotADuplicate) {
  auto store = std::move(Store::Open(path_)).value();
  IterationSample bad = Sample("job-1", 0, 1);
  bad.step_time_s = std::numeric_limits<double>::quiet_NaN();
  auto result = store->AppendSamplesSync({bad});
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(*store->CountSamples("job-1", 1), 0);
}

TEST_F(StoreTest, PrecisionsAndSummaryCountsSurviveReopen) {
  {
    auto store = std::move(Store::Open(path_)).value();
    Job job = MakeJob(1);
    ASSERT_TRUE(store->InsertJob(job).ok());
    job.attempt = 1;
    job.device_kind = DeviceKind::kCuda;
    job.placements = {{"dgx", {0, 1}, {0, 1}}};
    ASSERT_TRUE(store->UpdateJob(job).ok());  // placed: precisions not known yet
    job.rank_precisions = {{0, "amp_fp16"}, {1, "fp32"}};
    job.summaries[0] = RankSummary{0, 4, 32, 1.5, 0.3, 7, 2};
    ASSERT_TRUE(store->UpdateJob(job).ok());
  }
  auto store = std::move(Store::Open(path_)).value();
  auto jobs = store->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const Job& job = jobs->at(0);
  EXPECT_EQ(job.rank_precisions, (std::map<int, std::string>{{0, "amp_fp16"}, {1, "fp32"}}));
  ASSERT_EQ(job.summaries.count(0), 1u);
  EXPECT_EQ(job.summaries.at(0).skipped_steps, 7);
  EXPECT_EQ(job.summaries.at(0).nonfinite_losses, 2);
}

// Schema 6 had `loss REAL NOT NULL`: migrating to 7 rebuilds sample_rows with a nullable
// loss and keeps every row, key and value; the `samples` view works over the new table;
// rank summaries and rank devices gain their columns with defaults.
TEST_F(StoreTest, ASchemaSixDatabaseKeepsItsSamplesAndTakesNaNLosses) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  const char* v6 = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (1), (2), (3), (4), (5), (6);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO meta VALUES ('database_id', 'feedfeedfeedfeedfeedfeedfeedfeed');
CREATE TABLE job_ranks (job_id TEXT NOT NULL, attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL, agent TEXT NOT NULL, device_index INTEGER NOT NULL,
  hostname TEXT NOT NULL DEFAULT '', gpu_uuid TEXT NOT NULL DEFAULT '',
  gpu_name TEXT NOT NULL DEFAULT '', PRIMARY KEY (job_id, attempt, rank)) WITHOUT ROWID;
INSERT INTO job_ranks VALUES ('job-000001', 1, 0, 'a', 0, 'h', '', '');
CREATE TABLE rank_summaries (job_id TEXT NOT NULL, attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL, measured_iterations INTEGER NOT NULL,
  measured_images INTEGER NOT NULL, window_s REAL NOT NULL,
  step_time_median_s REAL NOT NULL, PRIMARY KEY (job_id, attempt, rank)) WITHOUT ROWID;
INSERT INTO rank_summaries VALUES ('job-000001', 1, 0, 4, 32, 1.5, 0.3);
CREATE TABLE sample_series (id INTEGER PRIMARY KEY, job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL, rank INTEGER NOT NULL, UNIQUE (job_id, attempt, rank));
CREATE TABLE sample_rows (key INTEGER PRIMARY KEY, step_time_s REAL NOT NULL,
  images INTEGER NOT NULL, loss REAL NOT NULL, data_time_s REAL NOT NULL,
  elapsed_s REAL NOT NULL, warmup INTEGER NOT NULL,
  received_unix_ns INTEGER NOT NULL DEFAULT 0, power_w_mean REAL, sm_clock_mhz_mean REAL);
INSERT INTO sample_series VALUES (1, 'job-000001', 1, 0), (2, 'job-000001', 1, 1);
INSERT INTO sample_rows VALUES
  ((1 << 32) + 1 + 2147483648, 0.5, 4, 6.9, 0.01, 0.5, 1, 11, NULL, NULL),
  ((1 << 32) + 2 + 2147483648, 0.25, 4, 9e999, 0.0, 0.75, 0, 12, 250.0, 1410.0),
  ((2 << 32) + 1 + 2147483648, 1.5, 4, 6.7, 0.02, 3.0, 0, 13, 300.0, NULL);
CREATE VIEW samples AS
  SELECT r.job_id, r.attempt, r.rank, (s.key & 4294967295) - 2147483648 AS iteration,
         s.step_time_s, s.images, s.loss, s.data_time_s, s.elapsed_s, s.warmup,
         s.received_unix_ns, s.power_w_mean, s.sm_clock_mhz_mean
  FROM sample_series r JOIN sample_rows s
    ON s.key >= r.id << 32 AND s.key < (r.id + 1) << 32;
)sql";
  ASSERT_EQ(sqlite3_exec(db, v6, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto opened = Store::Open(path_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Store& store = **opened;
  EXPECT_EQ(store.database_id(), "feedfeedfeedfeedfeedfeedfeedfeed");
  auto samples = store.ReadSamples("job-000001", 1);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 3u);
  EXPECT_EQ((*samples)[0].iteration, 1);
  EXPECT_EQ((*samples)[0].step_time_s, 0.5);
  EXPECT_EQ((*samples)[0].loss, 6.9);
  EXPECT_EQ((*samples)[0].data_time_s, 0.01);
  EXPECT_TRUE((*samples)[0].warmup);
  EXPECT_EQ((*samples)[0].received_unix_ns, 11);
  EXPECT_EQ((*samples)[1].loss, std::numeric_limits<double>::infinity());
  EXPECT_EQ((*samples)[2].rank, 1);
  EXPECT_EQ((*samples)[2].loss, 6.7);
  auto means = store.ReadIterationMeans("job-000001", 1);
  ASSERT_TRUE(means.ok()) << means.status();
  EXPECT_EQ(means->at({0, 2}).sm_clock_mhz, 1410.0);
  EXPECT_EQ(means->at({1, 1}).power_w, 300.0);
  EXPECT_EQ(*store.NonFiniteLossesByRank("job-000001", 1), (std::map<int, int64_t>{{0, 1}}));

  // A NaN loss now goes in beside the migrated rows; a migrated identity stays a duplicate.
  IterationSample nan = Sample("job-000001", 0, 3);
  nan.loss = std::numeric_limits<double>::quiet_NaN();
  auto appended = store.AppendSamplesSync({Sample("job-000001", 0, 1), nan});
  ASSERT_TRUE(appended.ok()) << appended.status();
  EXPECT_EQ(appended->stored, 1);
  EXPECT_EQ(appended->duplicates, 1);
  EXPECT_EQ(appended->nonfinite_losses, 1);
  EXPECT_EQ(*store.CountSamples("job-000001", 1), 4);

  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT (SELECT count(*) FROM samples WHERE loss IS NULL), "
                               "(SELECT skipped_steps + nonfinite_losses FROM rank_summaries), "
                               "(SELECT precision FROM job_ranks), "
                               "(SELECT max(version) FROM schema_version)",
                               -1, &stmt, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(stmt, 0), 1);
  EXPECT_EQ(sqlite3_column_int64(stmt, 1), 0);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 2))), "");
  EXPECT_EQ(sqlite3_column_int64(stmt, 3), 7);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

}  // namespace
}  // namespace bench
