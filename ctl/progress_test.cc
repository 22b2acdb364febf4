#include "ctl/progress.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bench::ctl {
namespace {

using benchfleet::v1::JobStatus;

JobStatus Job(benchfleet::v1::JobState state, int done, int total) {
  JobStatus job;
  job.set_id("j-1");
  job.set_state(state);
  job.set_iterations_done(done);
  job.mutable_spec()->set_iterations(total);
  return job;
}

TEST(ProgressTest, Bar) {
  EXPECT_EQ(ProgressBar(45, 100, "RUNNING", 20), "[#########...........]   45/100 it  RUNNING");
  EXPECT_EQ(ProgressBar(0, 100, "QUEUED", 10), "[..........]    0/100 it  QUEUED");
  EXPECT_EQ(ProgressBar(100, 100, "SUCCEEDED", 10), "[##########]  100/100 it  SUCCEEDED");
  EXPECT_EQ(ProgressBar(150, 100, "RUNNING", 10), "[##########]  150/100 it  RUNNING");
  EXPECT_EQ(ProgressBar(5, 0, "QUEUED", 4), "[....]  5/0 it  QUEUED");
  EXPECT_EQ(ProgressBarFor(Job(benchfleet::v1::JOB_STATE_RUNNING, 5, 10), 10),
            "[#####.....]   5/10 it  RUNNING");
}

TEST(ProgressTest, Line) {
  JobStatus job = Job(benchfleet::v1::JOB_STATE_RUNNING, 45, 100);
  EXPECT_EQ(ProgressLine(job), "job j-1: RUNNING 45/100 it");
  job.set_reason("placed on node-a");
  EXPECT_EQ(ProgressLine(job), "job j-1: RUNNING 45/100 it (placed on node-a)");
}

TEST(ProgressTest, ThrottlePrintsStateChangesAndTenths) {
  PlainProgressThrottle throttle;
  EXPECT_TRUE(throttle.ShouldPrint(Job(benchfleet::v1::JOB_STATE_QUEUED, 0, 1000)));
  EXPECT_FALSE(throttle.ShouldPrint(Job(benchfleet::v1::JOB_STATE_QUEUED, 0, 1000)));
  EXPECT_TRUE(throttle.ShouldPrint(Job(benchfleet::v1::JOB_STATE_RUNNING, 0, 1000)));
  int printed = 0;
  for (int i = 1; i <= 1000; ++i) {
    if (throttle.ShouldPrint(Job(benchfleet::v1::JOB_STATE_RUNNING, i, 1000))) ++printed;
  }
  EXPECT_EQ(printed, 10);  // 100, 200, ..., 1000
  EXPECT_TRUE(throttle.ShouldPrint(Job(benchfleet::v1::JOB_STATE_SUCCEEDED, 1000, 1000)));
}

TEST(ProgressTest, FinalSummary) {
  JobStatus job = Job(benchfleet::v1::JOB_STATE_SUCCEEDED, 100, 100);
  job.set_has_throughput(true);
  job.set_images_per_second(1316.66);
  EXPECT_EQ(FinalSummary(job), "job j-1: SUCCEEDED\nthroughput: 1316.7 images/s\n");
  job = Job(benchfleet::v1::JOB_STATE_FAILED, 3, 100);
  job.set_reason("rank 1: CUDA out of memory");
  EXPECT_EQ(FinalSummary(job),
            "job j-1: FAILED (rank 1: CUDA out of memory)\nthroughput: no data\n");
  // A diverged run and a precision other than the one asked for are said at the end.
  job.set_reason("loss diverged: rank 0 on a: non-finite loss in 20 consecutive iterations");
  job.set_samples_stored(57);
  job.set_nonfinite_losses(20);
  job.set_precision_mismatch("requested amp, ran fp32");
  EXPECT_EQ(FinalSummary(job),
            "job j-1: FAILED (loss diverged: rank 0 on a: non-finite loss in 20 consecutive "
            "iterations)\nthroughput: no data\nnon-finite losses: 20 of 57 stored iterations\n"
            "precision: MISMATCH (requested amp, ran fp32)\n");
}

}  // namespace
}  // namespace bench::ctl
