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
