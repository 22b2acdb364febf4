// Fleet screening's adapter: a stored job as Screen's input (rank 0's GPU, measured steps in
// iteration order, its readings), failures and cancellations, ids, and the list of screenings.
#include "server/results/screening_inputs.h"

#include "gtest/gtest.h"

namespace bench {
namespace {

Job ScreeningJob(const std::string& id, const std::string& screening, JobState state,
                 int64_t created_s) {
  Job job;
  job.id = id;
  job.spec.model = "resnet50";
  job.spec.devices = 1;
  job.spec.batch_size = 64;
  job.spec.labels = {{"screening", screening}};
  job.spec.allowed_nodes = {"n1"};
  job.state = state;
  job.created = absl::FromUnixSeconds(created_s);
  return job;
}

TEST(ScreeningInputsTest, RankZeroMeasuredStepsInOrderAndItsReadings) {
  Job job = ScreeningJob("job-1", "s1", JobState::kSucceeded, 10);
  job.attempt = 1;
  job.device_kind = DeviceKind::kCuda;
  job.rank_devices.push_back(RankDevice{0, "n7", "host7", 3, "GPU-7-3", "NVIDIA H100"});
  std::vector<IterationSample> samples(4);
  samples[0].iteration = 3;
  samples[0].step_time_s = 0.3;
  samples[1].iteration = 1;
  samples[1].step_time_s = 9;
  samples[1].warmup = true;
  samples[2].iteration = 2;
  samples[2].step_time_s = 0.2;
  samples[3].iteration = 2;
  samples[3].rank = 1;  // not this GPU's
  samples[3].step_time_s = 5;
  std::vector<GpuSample> readings(2);
  readings[0].time_unix_ns = 5;
  readings[0].sm_clock_mhz = 1200;
  readings[0].throttle_reasons = 0x40;
  readings[0].max_sm_clock_mhz = 1980;
  readings[0].memory_clock_mhz = 2000;
  readings[0].max_memory_clock_mhz = 2619;
  readings[0].power_w = 650;
  readings[0].power_limit_w = 700;
  readings[0].temperature_c = 93;
  readings[0].pcie_gen = 3;
  readings[0].pcie_gen_max = 5;
  readings[0].pcie_width = 8;
  readings[0].pcie_width_max = 16;
  readings[0].ecc_corrected = 4;
  readings[0].ecc_uncorrected = 1;
  readings[0].xid_errors = 2;
  readings[1].rank = 1;
  const diagnosis::ScreenedGpu gpu = ScreenedGpuOf(job, samples, readings);
  EXPECT_EQ(gpu.job_id, "job-1");
  EXPECT_EQ(gpu.node, "n7");
  EXPECT_EQ(gpu.gpu_index, 3);
  EXPECT_EQ(gpu.gpu_uuid, "GPU-7-3");
  EXPECT_EQ(gpu.gpu_name, "NVIDIA H100");
  EXPECT_EQ(gpu.configuration, ConfigurationOf(job));
  EXPECT_TRUE(gpu.succeeded);
  EXPECT_EQ(gpu.step_times_s, (std::vector<double>{0.2, 0.3}));
  ASSERT_EQ(gpu.readings.size(), 1u);
  EXPECT_EQ(gpu.readings[0].time_unix_ns, 5);
  EXPECT_EQ(gpu.readings[0].sm_clock_mhz, 1200);
  EXPECT_EQ(gpu.readings[0].throttle_reasons, 0x40u);
  // Every field the causes need (screening.h) comes through.
  const diagnosis::GpuReading& r = gpu.readings[0];
  EXPECT_EQ(r.max_sm_clock_mhz, 1980);
  EXPECT_EQ(r.memory_clock_mhz, 2000);
  EXPECT_EQ(r.max_memory_clock_mhz, 2619);
  EXPECT_EQ(r.power_w, 650);
  EXPECT_EQ(r.power_limit_w, 700);
  EXPECT_EQ(r.temperature_c, 93);
  EXPECT_EQ(r.pcie_gen, 3);
  EXPECT_EQ(r.pcie_gen_max, 5);
  EXPECT_EQ(r.pcie_width, 8);
  EXPECT_EQ(r.pcie_width_max, 16);
  EXPECT_EQ(r.ecc_corrected, 4);
  EXPECT_EQ(r.ecc_uncorrected, 1);
  EXPECT_EQ(r.xid_errors, 2);
}

TEST(ScreeningInputsTest, FailedAndCancelledJobsSayWhy) {
  Job failed = ScreeningJob("job-1", "s1", JobState::kFailed, 10);
  failed.reason = "rank 0 exited with code 1";
  diagnosis::ScreenedGpu gpu = ScreenedGpuOf(failed, {}, {});
  EXPECT_FALSE(gpu.succeeded);
  EXPECT_EQ(gpu.failure_reason, "rank 0 exited with code 1");
  EXPECT_EQ(gpu.node, "n1");  // never placed: the node it was pinned to
  Job cancelled = ScreeningJob("job-2", "s1", JobState::kCancelled, 10);
  EXPECT_EQ(ScreenedGpuOf(cancelled, {}, {}).failure_reason, "cancelled");
}

TEST(ScreeningInputsTest, Ids) {
  EXPECT_TRUE(ValidateScreeningId("scr-20261126-190512-ab12").ok());
  EXPECT_EQ(ValidateScreeningId("").message(), "screening id \"\": expected 1 to 64 characters");
  EXPECT_EQ(ValidateScreeningId("a/b").message(),
            "screening id \"a/b\": only letters, digits, '.', '_' and '-' are allowed");
  EXPECT_EQ(ScreeningIdOf(ScreeningJob("job-1", "s9", JobState::kQueued, 1)), "s9");
  Job plain;
  EXPECT_EQ(ScreeningIdOf(plain), "");
}

TEST(ScreeningInputsTest, ListNewestFirstWithCounts) {
  std::vector<Job> jobs = {ScreeningJob("job-1", "old", JobState::kSucceeded, 10),
                           ScreeningJob("job-2", "old", JobState::kFailed, 11),
                           ScreeningJob("job-3", "new", JobState::kRunning, 20),
                           ScreeningJob("job-4", "new", JobState::kCancelled, 21), Job{}};
  jobs[1].spec.allowed_nodes = {"n0"};
  const std::vector<ScreeningListEntry> list = ListScreeningsOf(jobs);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].id, "new");
  EXPECT_EQ(list[0].created, absl::FromUnixSeconds(20));
  EXPECT_EQ(list[0].jobs, 2);
  EXPECT_EQ(list[0].pending, 1);
  EXPECT_EQ(list[0].failed, 1);
  EXPECT_EQ(list[1].id, "old");
  EXPECT_EQ(list[1].succeeded, 1);
  EXPECT_EQ(list[1].failed, 1);
  EXPECT_EQ(list[1].nodes, (std::vector<std::string>{"n0", "n1"}));
}

}  // namespace
}  // namespace bench
