// Store's migrations: a database written by an older schema (1, 2, 5, 6, 7), made here with
// that schema's own SQL, opens, migrates to Store::kSchemaVersion and loses nothing.
#include "server/store/store.h"

#include <cmath>
#include <future>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "server/store/store_test_fixture.h"

namespace bench {
namespace {

// A database written by schema 1 (before GPU telemetry) opens, migrates, and keeps its
// jobs and samples.
// The jobs table as schemas 4 to 7 had it (empty): every database of those schemas has one.
constexpr const char* kJobsTableOfSchemas4To7 = R"sql(
CREATE TABLE jobs (id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, request_id TEXT UNIQUE,
  model TEXT NOT NULL, devices INTEGER NOT NULL, precision TEXT NOT NULL,
  batch_size INTEGER NOT NULL, iterations INTEGER NOT NULL, warmup_iterations INTEGER NOT NULL,
  image_size INTEGER NOT NULL, data TEXT NOT NULL, name TEXT NOT NULL, state TEXT NOT NULL,
  reason TEXT NOT NULL, attempt INTEGER NOT NULL, device_kind TEXT NOT NULL,
  parameters INTEGER NOT NULL, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,
  telemetry_note TEXT NOT NULL DEFAULT '', nodes INTEGER NOT NULL DEFAULT 0,
  devices_per_node INTEGER NOT NULL DEFAULT 0, allowed_nodes TEXT NOT NULL DEFAULT '',
  node_labels TEXT NOT NULL DEFAULT '', wall_time_limit_s INTEGER NOT NULL DEFAULT 0,
  hang_timeout_s INTEGER NOT NULL DEFAULT 0, requeues INTEGER NOT NULL DEFAULT 0);
CREATE TABLE job_labels (job_id TEXT NOT NULL REFERENCES jobs(id), key TEXT NOT NULL,
  value TEXT NOT NULL, PRIMARY KEY (job_id, key)) WITHOUT ROWID;
)sql";
// The GPU readings' table as schemas 2 to 12 had it (empty): every database of those
// schemas has one.
constexpr const char* kGpuSamplesTableOfSchemas2To12 = R"sql(
CREATE TABLE gpu_samples (job_id TEXT NOT NULL, attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL, seq INTEGER NOT NULL, gpu_uuid TEXT NOT NULL,
  gpu_index INTEGER NOT NULL, time_unix_ns INTEGER NOT NULL, power_w REAL,
  power_average_w REAL, energy_j REAL, sm_clock_mhz REAL, memory_clock_mhz REAL,
  temperature_c REAL, gpu_utilization_pct REAL, memory_utilization_pct REAL,
  memory_used_bytes INTEGER, throttle_reasons INTEGER,
  PRIMARY KEY (job_id, attempt, rank, seq)) WITHOUT ROWID;
)sql";
// Today's gpu_samples back in schema 12's shape: without migration 13's columns.
constexpr const char* kGpuSamplesBackToSchema12 = R"sql(
ALTER TABLE gpu_samples DROP COLUMN pcie_gen;
ALTER TABLE gpu_samples DROP COLUMN pcie_gen_max;
ALTER TABLE gpu_samples DROP COLUMN pcie_width;
ALTER TABLE gpu_samples DROP COLUMN pcie_width_max;
ALTER TABLE gpu_samples DROP COLUMN max_sm_clock_mhz;
ALTER TABLE gpu_samples DROP COLUMN max_memory_clock_mhz;
ALTER TABLE gpu_samples DROP COLUMN power_limit_w;
ALTER TABLE gpu_samples DROP COLUMN ecc_corrected;
ALTER TABLE gpu_samples DROP COLUMN ecc_uncorrected;
ALTER TABLE gpu_samples DROP COLUMN xid_errors;
)sql";

// Takes a database of this schema back to schema 12 (before the step split and the simulated mark): the downgrade
// tests below run it before their own.
constexpr const char* kToSchema12 = R"sql(
DROP TABLE job_variability;
ALTER TABLE sample_series DROP COLUMN samples;
ALTER TABLE sample_series DROP COLUMN nonfinite_losses;
DROP TABLE job_diagnoses;
ALTER TABLE jobs DROP COLUMN simulated;
DROP VIEW samples;
ALTER TABLE sample_rows DROP COLUMN compute_time_s;
ALTER TABLE sample_rows DROP COLUMN forward_backward_time_s;
ALTER TABLE sample_rows DROP COLUMN allreduce_wait_time_s;
ALTER TABLE sample_rows DROP COLUMN optimizer_time_s;
CREATE VIEW samples AS
  SELECT r.job_id, r.attempt, r.rank, (s.key & 4294967295) - 2147483648 AS iteration,
         s.step_time_s, s.images, s.loss, s.data_time_s, s.elapsed_s, s.warmup,
         s.received_unix_ns, s.power_w_mean, s.sm_clock_mhz_mean
  FROM sample_series r JOIN sample_rows s
    ON s.key >= r.id << 32 AND s.key < (r.id + 1) << 32;
DELETE FROM schema_version WHERE version > 12;
)sql";

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
  ASSERT_EQ(sqlite3_exec(db, kGpuSamplesTableOfSchemas2To12, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, kJobsTableOfSchemas4To7, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
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
  EXPECT_EQ(appended->stored_by_rank, (std::map<std::tuple<std::string, int, int>, int>{
                                          {{"job-000001", 1, 0}, 1}, {{"job-000003", 1, 2}, 1}}));
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
  ASSERT_EQ(sqlite3_exec(db, kGpuSamplesTableOfSchemas2To12, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, kJobsTableOfSchemas4To7, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
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
  EXPECT_EQ(sqlite3_column_int64(stmt, 3), Store::kSchemaVersion);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

// Schema 7 kept allowed_nodes and node_labels in one TEXT column each, items joined with
// 0x1f, a label as KEY=VALUE. Migrating to 8 splits them into rows as schema 7's reader
// did (a label at its first '='), keeps an empty column empty, and leaves submitted_by ''.
TEST_F(StoreTest, ASchemaSevenDatabaseKeepsItsConstraintsAsRows) {
  Job constrained = MakeJob(1);
  Job unconstrained = MakeJob(2);
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(constrained).ok());
    ASSERT_TRUE((*store)->InsertJob(unconstrained).ok());
  }
  // The jobs table back in schema 7's shape, holding schema 7's encoding.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  const char* to_v7 = R"sql(
DROP TABLE join_tokens;
ALTER TABLE jobs DROP COLUMN data_vs_compute;
ALTER TABLE rank_summaries DROP COLUMN synthetic_images_per_second;
ALTER TABLE jobs DROP COLUMN data_path;
ALTER TABLE jobs DROP COLUMN loader_threads;
DROP TABLE job_allocations;
DROP TABLE job_allowed_nodes;
DROP TABLE job_node_labels;
ALTER TABLE jobs DROP COLUMN submitted_by;
ALTER TABLE jobs ADD COLUMN allowed_nodes TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN node_labels TEXT NOT NULL DEFAULT '';
UPDATE jobs SET allowed_nodes = 'dgx-01' || char(31) || 'dgx-02' || char(31) || 'n' || x'c3a9',
                node_labels = 'rack=r2' || char(31) || 'fabric=ib=hdr' || char(31) || 'bare'
  WHERE id = 'job-1';
DELETE FROM schema_version WHERE version > 7;
)sql";
  ASSERT_EQ(sqlite3_exec(db, kToSchema18, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, kToSchema12, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, kGpuSamplesBackToSchema12, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, to_v7, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  const Job& job = jobs->front();
  EXPECT_EQ(job.spec.allowed_nodes, (std::vector<std::string>{"dgx-01", "dgx-02", "n\xc3\xa9"}));
  EXPECT_EQ(job.spec.node_labels, (std::map<std::string, std::string>{
                                      {"rack", "r2"}, {"fabric", "ib=hdr"}, {"bare", ""}}));
  EXPECT_EQ(job.spec.labels, constrained.spec.labels);
  EXPECT_EQ(job.submitted_by, "");
  EXPECT_TRUE(jobs->back().spec.allowed_nodes.empty());
  EXPECT_TRUE(jobs->back().spec.node_labels.empty());

  // The old columns are gone; a new job's constraints go in beside the migrated ones.
  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  EXPECT_NE(sqlite3_exec(db, "SELECT allowed_nodes FROM jobs", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  Job later = MakeJob(3);
  later.spec.allowed_nodes = {"dgx-03"};
  later.submitted_by = "alice";
  ASSERT_TRUE((*store)->InsertJob(later).ok());
  jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ(jobs->back().spec.allowed_nodes, std::vector<std::string>{"dgx-03"});
  EXPECT_EQ(jobs->back().submitted_by, "alice");
}

// Schema 9 had no data path or loader threads: its jobs come back synthetic with neither
// (what they ran), and a job of schema 10 keeps both beside them.
TEST_F(StoreTest, ASchemaNineDatabaseKeepsItsJobsAsSyntheticWithoutPath) {
  Job old_job = MakeJob(1);
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(old_job).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  const char* to_v9 = R"sql(
DROP TABLE join_tokens;
ALTER TABLE jobs DROP COLUMN data_vs_compute;
ALTER TABLE rank_summaries DROP COLUMN synthetic_images_per_second;
ALTER TABLE jobs DROP COLUMN data_path;
ALTER TABLE jobs DROP COLUMN loader_threads;
DELETE FROM schema_version WHERE version > 9;
)sql";
  ASSERT_EQ(sqlite3_exec(db, kToSchema18, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, kToSchema12, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, kGpuSamplesBackToSchema12, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, to_v9, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ(jobs->front().spec, old_job.spec);
  EXPECT_EQ(jobs->front().spec.data, "synthetic");
  EXPECT_EQ(jobs->front().spec.data_path, "");
  EXPECT_EQ(jobs->front().spec.loader_threads, 0);

  Job real = MakeJob(2);
  real.spec.data = "coco";
  real.spec.data_path = "/data/coco2017";
  real.spec.loader_threads = 12;
  ASSERT_TRUE((*store)->InsertJob(real).ok());
  jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ(jobs->back().spec, real.spec);
  EXPECT_EQ(jobs->back().spec.data_path, "/data/coco2017");
  EXPECT_EQ(jobs->back().spec.loader_threads, 12);
}

// A database from before the screening fields (schema 12: made here as today's schema less
// migration 13's columns) keeps its GPU readings, the new fields unset (NULL), and takes
// readings with them afterwards.
TEST_F(StoreTest, ASchemaTwelveDatabaseKeepsItsGpuReadingsWithoutLinkOrErrorFields) {
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(MakeJob(1)).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  const char* to_v12 = R"sql(
DELETE FROM schema_version WHERE version > 12;
INSERT INTO gpu_samples VALUES ('job-1', 1, 0, 1, 'GPU-old', 0, 1700000000000000000, 300.5,
  290, 1000, 1980, 1593, 61, 100, 40, 4096, 4);
)sql";
  ASSERT_EQ(sqlite3_exec(db, kToSchema18, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, kToSchema12, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, kGpuSamplesBackToSchema12, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, to_v12, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto read = (*store)->ReadGpuSamples("job-1", 1);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 1u);
  const GpuSample& old = read->front();
  EXPECT_EQ(old.gpu_uuid, "GPU-old");
  EXPECT_EQ(old.power_w, 300.5);
  EXPECT_EQ(old.throttle_reasons, 4u);
  EXPECT_FALSE(old.pcie_gen.has_value());
  EXPECT_FALSE(old.pcie_width_max.has_value());
  EXPECT_FALSE(old.max_sm_clock_mhz.has_value());
  EXPECT_FALSE(old.power_limit_w.has_value());
  EXPECT_FALSE(old.ecc_uncorrected.has_value());
  EXPECT_FALSE(old.xid_errors.has_value());

  GpuSample next = old;
  next.seq = 2;
  next.pcie_gen = 3;
  next.pcie_gen_max = 5;
  next.xid_errors = 1;
  auto appended = (*store)->AppendSamplesSync({}, {next});
  ASSERT_TRUE(appended.ok()) << appended.status();
  read = (*store)->ReadGpuSamples("job-1", 1);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[1].pcie_gen, 3);
  EXPECT_EQ((*read)[1].pcie_gen_max, 5);
  EXPECT_EQ((*read)[1].xid_errors, 1);
  EXPECT_FALSE((*read)[1].ecc_corrected.has_value());
}

// Schema 12 had no step split: its samples keep every figure and come back with none of
// the split (no data, not 0); a sample stored after the migration keeps its split beside
// them, and the `samples` view shows the new columns.
TEST_F(StoreTest, ASchemaTwelveDatabaseKeepsItsSamplesWithNoStepSplit) {
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(MakeJob(1)).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, kToSchema18, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, kToSchema12, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, kGpuSamplesBackToSchema12, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  // Rows as schema 12's benchd wrote them.
  const char* v12_rows = R"sql(
INSERT INTO sample_series (id, job_id, attempt, rank) VALUES (1, 'job-1', 1, 0);
INSERT INTO sample_rows (key, step_time_s, images, loss, data_time_s, elapsed_s, warmup,
                         received_unix_ns)
  VALUES ((1 << 32) + 1 + 2147483648, 0.5, 8, 6.9, 0.01, 0.5, 1, 11),
         ((1 << 32) + 2 + 2147483648, 0.25, 8, NULL, 0.02, 0.75, 0, 12);
)sql";
  ASSERT_EQ(sqlite3_exec(db, v12_rows, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto opened = Store::Open(path_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Store& store = **opened;
  IterationSample later = Sample("job-1", 0, 3);
  later.compute_time_s = 0.3;
  later.forward_backward_time_s = 0.2;
  later.allreduce_wait_time_s = 0.0;
  later.optimizer_time_s = 0.05;
  auto appended = store.AppendSamplesSync({later});
  ASSERT_TRUE(appended.ok()) << appended.status();
  EXPECT_EQ(appended->stored, 1);
  auto samples = store.ReadSamples("job-1", 1);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 3u);
  for (int i : {0, 1}) {
    const IterationSample& old = (*samples)[i];
    EXPECT_EQ(old.iteration, i + 1);
    EXPECT_FALSE(old.compute_time_s.has_value());
    EXPECT_FALSE(old.forward_backward_time_s.has_value());
    EXPECT_FALSE(old.allreduce_wait_time_s.has_value());
    EXPECT_FALSE(old.optimizer_time_s.has_value());
  }
  EXPECT_EQ((*samples)[0].step_time_s, 0.5);
  EXPECT_EQ((*samples)[0].data_time_s, 0.01);
  EXPECT_EQ((*samples)[0].received_unix_ns, 11);
  EXPECT_TRUE(std::isnan((*samples)[1].loss));
  EXPECT_EQ((*samples)[2].compute_time_s, 0.3);
  EXPECT_EQ((*samples)[2].forward_backward_time_s, 0.2);
  EXPECT_EQ((*samples)[2].allreduce_wait_time_s, 0.0);
  EXPECT_EQ((*samples)[2].optimizer_time_s, 0.05);

  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT count(compute_time_s), count(forward_backward_time_s), "
                               "count(allreduce_wait_time_s), count(optimizer_time_s), "
                               "(SELECT max(version) FROM schema_version) FROM samples",
                               -1, &stmt, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  for (int column = 0; column < 4; ++column) EXPECT_EQ(sqlite3_column_int64(stmt, column), 1);
  EXPECT_EQ(sqlite3_column_int64(stmt, 4), Store::kSchemaVersion);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

// Issue 26's migration 15 (the jobs' simulated mark): jobs stored before it are real
// (taken back to schema 14: without the mark and without migration 16's diagnoses).
TEST_F(StoreTest, JobsStoredBeforeTheSimulatedMarkAreReal) {
  Job old_job = MakeJob(1);
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(old_job).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  const std::string back = absl::StrCat(
      "DROP TABLE job_variability; ALTER TABLE sample_series DROP COLUMN samples; "
      "ALTER TABLE sample_series DROP COLUMN nonfinite_losses; "
      "DROP TABLE job_diagnoses; ALTER TABLE jobs DROP COLUMN simulated; "
      "DELETE FROM schema_version WHERE version > 14;");
  ASSERT_EQ(sqlite3_exec(db, kToSchema18, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db, back.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_FALSE(jobs->front().simulated);
  Job simulated = jobs->front();
  simulated.simulated = true;
  ASSERT_TRUE((*store)->UpdateJob(simulated).ok());
  jobs = (*store)->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_TRUE(jobs->front().simulated);
}

// Issue 27's migrations 17 and 18: a database of schema 16 (sample_series without its
// counts, no job_variability) gets every series' stored samples and non-finite losses
// counted once, and the counts are kept from then on: ReadSeriesCounts answers what
// IterationsByRank and NonFiniteLossesByRank count, the samples stored before the
// migration included. Its jobs have no variability summary yet (made when next asked).
TEST_F(StoreTest, MigrationsSeventeenAndEighteenCountTheSamplesStoredBefore) {
  auto sample = [](int rank, int iteration, double loss) {
    IterationSample s;
    s.job_id = "job-1";
    s.attempt = 1;
    s.rank = rank;
    s.iteration = iteration;
    s.step_time_s = 0.1;
    s.images = 32;
    s.loss = loss;
    return s;
  };
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(MakeJob(1)).ok());
    auto appended = (*store)->AppendSamplesSync(
        {sample(0, 1, 2.0), sample(0, 2, std::nan("")), sample(0, 3, INFINITY), sample(1, 1, 2.0)},
        {});
    ASSERT_TRUE(appended.ok()) << appended.status();
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, kToSchema18, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_exec(db,
                         "DROP TABLE job_variability; "
                         "ALTER TABLE sample_series DROP COLUMN samples; "
                         "ALTER TABLE sample_series DROP COLUMN nonfinite_losses; "
                         "DELETE FROM schema_version WHERE version > 16;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto counts = (*store)->ReadSeriesCounts();
  ASSERT_TRUE(counts.ok()) << counts.status();
  ASSERT_EQ(counts->size(), 2u);
  std::map<int, std::pair<int64_t, int64_t>> by_rank;
  for (const Store::SeriesCounts& c : *counts) {
    EXPECT_EQ(c.job_id, "job-1");
    EXPECT_EQ(c.attempt, 1);
    by_rank[c.rank] = {c.samples, c.nonfinite_losses};
  }
  EXPECT_EQ(by_rank, (std::map<int, std::pair<int64_t, int64_t>>{{0, {3, 2}}, {1, {1, 0}}}));
  auto summaries = (*store)->ReadJobVariability({{"job-1", 1}});
  ASSERT_TRUE(summaries.ok()) << summaries.status();
  EXPECT_FALSE(summaries->at(0).has_value());

  // Appended afterwards (a duplicate among them): counted as they go in.
  auto appended = (*store)->AppendSamplesSync(
      {sample(0, 3, 1.0), sample(0, 4, std::nan("")), sample(1, 2, 1.0)}, {});
  ASSERT_TRUE(appended.ok()) << appended.status();
  counts = (*store)->ReadSeriesCounts();
  ASSERT_TRUE(counts.ok()) << counts.status();
  by_rank.clear();
  for (const Store::SeriesCounts& c : *counts) by_rank[c.rank] = {c.samples, c.nonfinite_losses};
  EXPECT_EQ(by_rank, (std::map<int, std::pair<int64_t, int64_t>>{{0, {4, 3}}, {1, {2, 0}}}));
  EXPECT_EQ(*(*store)->IterationsByRank("job-1", 1), (std::map<int, int>{{0, 4}, {1, 2}}));
  EXPECT_EQ(*(*store)->NonFiniteLossesByRank("job-1", 1), (std::map<int, int64_t>{{0, 3}}));
}

// Issue 27's migration 19: a database of schema 18 (iterations and GPU readings keyed by
// rank first) is rekeyed by attempt, then iteration or seq, then rank, and every reader
// answers exactly what it answered before: samples (by rank, then iteration), pages,
// chart buckets, counts, GPU readings (by rank, then seq) and the live stream's pages.
TEST_F(StoreTest, MigrationNineteenKeysSamplesByAttemptAndLosesNothing) {
  auto reading = [](const std::string& job, int attempt, int rank, int64_t seq) {
    GpuSample g;
    g.job_id = job;
    g.attempt = attempt;
    g.rank = rank;
    g.seq = seq;
    g.gpu_uuid = "GPU-" + job + "-" + std::to_string(rank);
    g.gpu_index = rank;
    g.time_unix_ns = 1700000000000000000 + seq * 100000000 + rank;
    g.power_w = 200.0 + rank + 0.5 * static_cast<double>(seq);
    if (seq % 3 == 0) g.sm_clock_mhz = 1410.0 - rank;
    return g;
  };
  struct Read {
    std::vector<IterationSample> samples;
    std::vector<IterationSample> page;
    std::vector<Store::SampleBucket> buckets;
    std::map<int, int> iterations;
    int64_t count = 0;
    std::vector<GpuSample> readings;
    std::vector<GpuSample> stream_page;
    std::vector<IterationSample> after;
  };
  auto read_all = [](Store& store, const std::string& job, int attempt) {
    Read r;
    r.samples = *store.ReadSamples(job, attempt);
    r.page = *store.ReadSamplesPage(job, attempt, 2, std::nullopt, Store::SampleCursor{1, 4}, 5);
    r.buckets = *store.ReadSampleBuckets(job, attempt, 0, std::nullopt, 3);
    r.iterations = *store.IterationsByRank(job, attempt);
    r.count = *store.CountSamples(job, attempt);
    r.readings = *store.ReadGpuSamples(job, attempt);
    r.stream_page = *store.ReadGpuSamplesAfter(job, attempt, {2, 1}, 4);
    r.after = *store.ReadSamplesAfter(job, attempt, {3, 0}, 5);
    return r;
  };
  const std::vector<std::pair<std::string, int>> attempts = {{"job-1", 1}, {"job-2", 1}, {"job-2", 2}};
  std::vector<Read> before;
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->InsertJob(MakeJob(1)).ok());
    ASSERT_TRUE((*store)->InsertJob(MakeJob(2)).ok());
    // Arrival order mixes jobs, attempts, ranks and iterations.
    std::vector<IterationSample> samples;
    std::vector<GpuSample> readings;
    for (int iteration = 1; iteration <= 9; ++iteration) {
      for (const auto& [job, attempt] : attempts) {
        for (int rank = 2; rank >= 0; --rank) {
          if (job == "job-1" && rank == 2 && iteration > 6) continue;  // a rank that stopped early
          IterationSample s = Sample(job, rank, iteration);
          s.attempt = attempt;
          s.loss = iteration == 5 && rank == 1 ? std::nan("") : 1.0 / iteration;
          if (iteration % 2 == 0) s.compute_time_s = 0.01 * iteration;
          samples.push_back(s);
          readings.push_back(reading(job, attempt, rank, iteration));
        }
      }
    }
    auto appended = (*store)->AppendSamplesSync(samples, readings);
    ASSERT_TRUE(appended.ok()) << appended.status();
    for (const auto& [job, attempt] : attempts) before.push_back(read_all(**store, job, attempt));
  }
  ASSERT_EQ(before[0].samples.size(), 9u * 3 - 3);
  ASSERT_FALSE(before[0].page.empty());
  ASSERT_FALSE(before[0].buckets.empty());
  ASSERT_FALSE(before[0].stream_page.empty());

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, kToSchema18, nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  for (size_t i = 0; i < attempts.size(); ++i) {
    SCOPED_TRACE(attempts[i].first + " attempt " + std::to_string(attempts[i].second));
    Read after = read_all(**store, attempts[i].first, attempts[i].second);
    const Read& was = before[i];
    auto sample_fields = [](const IterationSample& s) {
      return std::make_tuple(s.job_id, s.attempt, s.rank, s.iteration, s.step_time_s, s.images,
                             std::isnan(s.loss) ? -1.0 : s.loss, s.compute_time_s);
    };
    auto same_samples = [&](const std::vector<IterationSample>& a,
                            const std::vector<IterationSample>& b) {
      ASSERT_EQ(a.size(), b.size());
      for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(sample_fields(a[k]), sample_fields(b[k])) << k;
    };
    same_samples(after.samples, was.samples);
    same_samples(after.page, was.page);
    same_samples(after.after, was.after);
    ASSERT_EQ(after.buckets.size(), was.buckets.size());
    for (size_t k = 0; k < was.buckets.size(); ++k) {
      const Store::SampleBucket& a = after.buckets[k];
      const Store::SampleBucket& b = was.buckets[k];
      EXPECT_EQ(std::tie(a.rank, a.first_iteration, a.last_iteration, a.samples, a.images,
                         a.nonfinite_losses, a.mean_step_time_s, a.mean_loss, a.mean_compute_time_s),
                std::tie(b.rank, b.first_iteration, b.last_iteration, b.samples, b.images,
                         b.nonfinite_losses, b.mean_step_time_s, b.mean_loss, b.mean_compute_time_s))
          << k;
    }
    EXPECT_EQ(after.iterations, was.iterations);
    EXPECT_EQ(after.count, was.count);
    auto reading_fields = [](const GpuSample& g) {
      return std::make_tuple(g.rank, g.seq, g.gpu_uuid, g.gpu_index, g.time_unix_ns, g.power_w,
                             g.sm_clock_mhz);
    };
    ASSERT_EQ(after.readings.size(), was.readings.size());
    for (size_t k = 0; k < was.readings.size(); ++k) {
      EXPECT_EQ(reading_fields(after.readings[k]), reading_fields(was.readings[k])) << k;
    }
    ASSERT_EQ(after.stream_page.size(), was.stream_page.size());
    for (size_t k = 0; k < was.stream_page.size(); ++k) {
      EXPECT_EQ(reading_fields(after.stream_page[k]), reading_fields(was.stream_page[k])) << k;
    }
  }
  // Stored again after the migration: duplicates, whatever the key.
  auto again = (*store)->AppendSamplesSync({Sample("job-1", 0, 1)}, {reading("job-1", 1, 0, 1)});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->stored, 0);
  EXPECT_EQ(again->duplicates, 1);
  EXPECT_EQ(again->gpu_stored, 0);
  EXPECT_EQ(again->gpu_duplicates, 1);
}

}  // namespace
}  // namespace bench
