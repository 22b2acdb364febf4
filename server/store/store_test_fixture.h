// The fixture of the store tests (store_*test.cc): a fresh directory per test for the
// database file, and the jobs and samples they store.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "server/core/job.h"

namespace bench {

// Takes a database of this schema back to schema 18: iterations and GPU readings keyed
// by rank again (store_schema.cc, migration 19). The downgrade tests run it first.
constexpr const char* kToSchema18 = R"sql(
DROP VIEW samples;
DROP VIEW gpu_samples;
CREATE TABLE sample_rows (key INTEGER PRIMARY KEY, step_time_s REAL NOT NULL,
  images INTEGER NOT NULL, loss REAL, data_time_s REAL NOT NULL, elapsed_s REAL NOT NULL,
  warmup INTEGER NOT NULL, received_unix_ns INTEGER NOT NULL DEFAULT 0, power_w_mean REAL,
  sm_clock_mhz_mean REAL, compute_time_s REAL, forward_backward_time_s REAL,
  allreduce_wait_time_s REAL, optimizer_time_s REAL);
INSERT INTO sample_rows
  SELECT (r.id << 32) + s.iteration + 2147483648, s.step_time_s, s.images, s.loss,
         s.data_time_s, s.elapsed_s, s.warmup, s.received_unix_ns, m.power_w_mean,
         m.sm_clock_mhz_mean, s.compute_time_s, s.forward_backward_time_s,
         s.allreduce_wait_time_s, s.optimizer_time_s
  FROM attempt_series a JOIN iteration_rows s ON s.series = a.id
  JOIN sample_series r ON r.job_id = a.job_id AND r.attempt = a.attempt AND r.rank = s.rank
  LEFT JOIN iteration_means m
    ON m.series = s.series AND m.iteration = s.iteration AND m.rank = s.rank;
DROP TABLE iteration_rows;
DROP TABLE iteration_means;
CREATE VIEW samples AS
  SELECT r.job_id, r.attempt, r.rank, (s.key & 4294967295) - 2147483648 AS iteration,
         s.step_time_s, s.images, s.loss, s.data_time_s, s.elapsed_s, s.warmup,
         s.received_unix_ns, s.power_w_mean, s.sm_clock_mhz_mean, s.compute_time_s,
         s.forward_backward_time_s, s.allreduce_wait_time_s, s.optimizer_time_s
  FROM sample_series r JOIN sample_rows s
    ON s.key >= r.id << 32 AND s.key < (r.id + 1) << 32;
CREATE TABLE gpu_samples (job_id TEXT NOT NULL, attempt INTEGER NOT NULL,
  rank INTEGER NOT NULL, seq INTEGER NOT NULL, gpu_uuid TEXT NOT NULL,
  gpu_index INTEGER NOT NULL, time_unix_ns INTEGER NOT NULL, power_w REAL,
  power_average_w REAL, energy_j REAL, sm_clock_mhz REAL, memory_clock_mhz REAL,
  temperature_c REAL, gpu_utilization_pct REAL, memory_utilization_pct REAL,
  memory_used_bytes INTEGER, throttle_reasons INTEGER, pcie_gen INTEGER,
  pcie_gen_max INTEGER, pcie_width INTEGER, pcie_width_max INTEGER, max_sm_clock_mhz REAL,
  max_memory_clock_mhz REAL, power_limit_w REAL, ecc_corrected INTEGER,
  ecc_uncorrected INTEGER, xid_errors INTEGER,
  PRIMARY KEY (job_id, attempt, rank, seq)) WITHOUT ROWID;
INSERT INTO gpu_samples
  SELECT a.job_id, a.attempt, g.rank, g.seq, g.gpu_uuid, g.gpu_index, g.time_unix_ns,
         g.power_w, g.power_average_w, g.energy_j, g.sm_clock_mhz, g.memory_clock_mhz,
         g.temperature_c, g.gpu_utilization_pct, g.memory_utilization_pct,
         g.memory_used_bytes, g.throttle_reasons, g.pcie_gen, g.pcie_gen_max, g.pcie_width,
         g.pcie_width_max, g.max_sm_clock_mhz, g.max_memory_clock_mhz, g.power_limit_w,
         g.ecc_corrected, g.ecc_uncorrected, g.xid_errors
  FROM gpu_readings g JOIN attempt_series a ON a.id = g.series;
DROP TABLE gpu_readings;
DROP TABLE attempt_series;
DELETE FROM schema_version WHERE version > 18;
)sql";

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

}  // namespace bench
