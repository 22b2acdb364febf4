// The adapter from a stored job to the diagnosis room's inputs, the "no data" cases, and
// the stored JSON's round trip.
#include "server/results/job_diagnosis.h"

#include <gtest/gtest.h>

#include "server/results/job_diagnosis_json.h"

namespace bench {
namespace {

namespace dx = diagnosis;

Job TwoNodeCudaJob() {
  Job job;
  job.id = "job-000007";
  job.attempt = 2;
  job.state = JobState::kSucceeded;
  job.device_kind = DeviceKind::kCuda;
  job.spec.devices = 3;
  job.spec.precision = Precision::kAmp;
  job.spec.iterations = 60;
  job.spec.warmup_iterations = 10;
  job.placements = {{"node-b", {2}, {5}}, {"node-a", {0, 1}, {0, 3}}};
  job.rank_devices = {{0, "node-a", "host-a", 0, "GPU-a0", "H100"},
                      {1, "node-a", "host-a", 3, "GPU-a3", "H100"},
                      {2, "node-b", "host-b", 5, "GPU-b5", "H100"}};
  job.rank_precisions = {{0, "amp_bf16"}, {1, "amp_bf16"}, {2, "amp_bf16"}};
  job.summaries[0].skipped_steps = 1;
  job.summaries[2].skipped_steps = 4;
  return job;
}

IterationSample Iter(int rank, int iteration, bool warmup = false) {
  IterationSample s;
  s.rank = rank;
  s.iteration = iteration;
  s.step_time_s = 0.1;
  s.data_time_s = 0.01;
  s.warmup = warmup;
  s.received_unix_ns = 1'000'000'000LL * iteration;
  return s;
}

TEST(JobInputsOf, RanksInOrderWithTheirNodeGpuAndTheJobsFacts) {
  dx::JobInputs inputs = JobInputsOf(TwoNodeCudaJob());
  EXPECT_EQ(inputs.job_id, "job-000007");
  EXPECT_EQ(inputs.device_kind, DeviceKind::kCuda);
  EXPECT_EQ(inputs.requested_precision, Precision::kAmp);
  EXPECT_EQ(inputs.effective_precision, Precision::kAmp);  // amp_bf16 is amp
  EXPECT_EQ(inputs.iterations_asked, 60);                  // warm-up included, as the spec
  EXPECT_EQ(inputs.warmup_asked, 10);
  ASSERT_TRUE(inputs.skipped_steps.has_value());
  EXPECT_EQ(*inputs.skipped_steps, 4);  // the most any rank reported
  ASSERT_EQ(inputs.ranks.size(), 3u);
  EXPECT_EQ(inputs.ranks[0].rank, 0);
  EXPECT_EQ(inputs.ranks[1].node, "node-a");
  EXPECT_EQ(inputs.ranks[1].gpu_index, 3);
  EXPECT_EQ(inputs.ranks[1].gpu_uuid, "GPU-a3");
  EXPECT_EQ(inputs.ranks[2].node, "node-b");
  EXPECT_EQ(inputs.ranks[2].gpu_index, 5);
}

TEST(JobInputsOf, CpuSlotsHaveNoGpuAndAPrecisionNobodyReportedIsUnspecified) {
  Job job = TwoNodeCudaJob();
  job.device_kind = DeviceKind::kCpu;
  job.rank_precisions.clear();
  job.summaries.clear();
  dx::JobInputs inputs = JobInputsOf(job);
  for (const dx::RankInputs& r : inputs.ranks) EXPECT_EQ(r.gpu_index, -1) << r.rank;
  EXPECT_EQ(inputs.effective_precision, Precision::kUnspecified);
  EXPECT_FALSE(inputs.skipped_steps.has_value());
}

TEST(JobInputsOf, RanksThatDisagreeShowTheOneThatDiffersFromTheRequest) {
  Job job = TwoNodeCudaJob();
  job.rank_precisions[1] = "fp32";
  EXPECT_EQ(JobInputsOf(job).effective_precision, Precision::kFp32);
  job.spec.precision = Precision::kBf16;
  job.rank_precisions[1] = "amp_fp16";
  EXPECT_EQ(JobInputsOf(job).effective_precision, Precision::kAmp);
}

TEST(AddSamples, IterationsAndReadingsGoToTheirRanks) {
  Job job = TwoNodeCudaJob();
  dx::JobInputs inputs = JobInputsOf(job);
  IterationSample other_rank = Iter(9, 1);
  GpuSample reading;
  reading.rank = 2;
  reading.time_unix_ns = 5;
  reading.sm_clock_mhz = 1200;
  reading.power_average_w = 300;
  reading.throttle_reasons = dx::kReasonHwThermal;
  IterationSample split = Iter(2, 1);
  split.forward_backward_time_s = 0.07;
  split.allreduce_wait_time_s = 0.01;
  split.optimizer_time_s = 0.005;
  AddSamples(inputs, {Iter(0, 1), split, Iter(2, 2, true), other_rank}, {reading});
  ASSERT_EQ(inputs.ranks[0].iterations.size(), 1u);
  ASSERT_EQ(inputs.ranks[2].iterations.size(), 2u);
  EXPECT_TRUE(inputs.ranks[2].iterations[1].warmup);
  EXPECT_EQ(inputs.ranks[2].iterations[0].end_unix_ns, 1'000'000'000LL);
  EXPECT_DOUBLE_EQ(inputs.ranks[2].iterations[0].data_time_s, 0.01);
  // The step split where the trainer wrote it; unset ("no data") where it did not.
  EXPECT_EQ(inputs.ranks[2].iterations[0].forward_backward_time_s, 0.07);
  EXPECT_EQ(inputs.ranks[2].iterations[0].allreduce_wait_time_s, 0.01);
  EXPECT_EQ(inputs.ranks[2].iterations[0].optimizer_time_s, 0.005);
  EXPECT_DOUBLE_EQ(inputs.ranks[2].iterations[0].ComputeSeconds(), 0.07);
  EXPECT_FALSE(inputs.ranks[0].iterations[0].forward_backward_time_s.has_value());
  ASSERT_EQ(inputs.ranks[2].readings.size(), 1u);
  EXPECT_EQ(*inputs.ranks[2].readings[0].sm_clock_mhz, 1200);
  EXPECT_EQ(*inputs.ranks[2].readings[0].power_w, 300);  // the averaged one stands in
  EXPECT_EQ(*inputs.ranks[2].readings[0].throttle_reasons, dx::kReasonHwThermal);
  EXPECT_TRUE(inputs.ranks[1].readings.empty());
}

TEST(Diagnose, WithoutAMeasuredIterationThereIsNoData) {
  Job job = TwoNodeCudaJob();
  JobDiagnosis d = DiagnoseJob(job, {Iter(0, 1, true), Iter(1, 1, true)}, {});
  EXPECT_FALSE(d.available);
  EXPECT_EQ(d.attempt, 2);
  EXPECT_EQ(d.note, kDiagnosisNoMeasuredIterations);
  EXPECT_EQ(d.FailingChecks(), 0);
  EXPECT_TRUE(d.checks.empty());
}

TEST(Diagnose, RunsTheThreeAnalysesTheSameWayTwice) {
  Job job = TwoNodeCudaJob();
  std::vector<IterationSample> samples;
  for (int rank = 0; rank < 3; ++rank) {
    for (int i = 1; i <= 60; ++i) samples.push_back(Iter(rank, i, i <= 10));
  }
  JobDiagnosis first = DiagnoseJob(job, samples, {});
  EXPECT_TRUE(first.available);
  EXPECT_EQ(first.note, "");
  EXPECT_FALSE(first.checks.empty());
  EXPECT_EQ(first, DiagnoseJob(job, samples, {}));
}

TEST(ShouldDiagnose, SucceededOrFailedAfterAPlacement) {
  Job job = TwoNodeCudaJob();
  EXPECT_TRUE(ShouldDiagnose(job));
  job.state = JobState::kFailed;
  EXPECT_TRUE(ShouldDiagnose(job));
  job.state = JobState::kCancelled;
  EXPECT_FALSE(ShouldDiagnose(job));
  job.state = JobState::kRunning;
  EXPECT_FALSE(ShouldDiagnose(job));
  job.state = JobState::kFailed;
  job.attempt = 0;  // never placed
  EXPECT_FALSE(ShouldDiagnose(job));
}

JobDiagnosis EveryFieldSet() {
  JobDiagnosis d;
  d.attempt = 3;
  d.available = true;
  d.stragglers.applicable = true;
  d.stragglers.ranks = 32;
  d.stragglers.iterations = 500;
  d.stragglers.first_iteration = 51;
  d.stragglers.last_iteration = 550;
  dx::Straggler s;
  s.rank = 13;
  s.node = "node-2";
  s.gpu_index = 5;
  s.gpu_uuid = "GPU-13";
  s.phases = {{201, 300, 0.08, 0.4}, {401, 420, 0.1, 0.1}};
  s.mean_excess = 0.085;
  s.lost_s = 0.5;
  d.stragglers.stragglers = {s};
  d.stragglers.lost_s = 0.5;
  d.stragglers.lost_fraction = 0.0123456789012345;
  d.stragglers.window_step_time_s = 40.5;
  d.stragglers.jitter_s = 0.25;
  d.excess.applicable = true;
  d.excess.iterations = 500;
  d.excess.median_step_s = 0.081;
  d.excess.mad_step_s = 0.001;
  d.excess.ideal_step_s = 0.0805;
  d.excess.total_step_s = 40.5;
  d.excess.excess_s = 1.25;
  d.excess.excess_fraction = 1.25 / 40.5;
  d.excess.by_cause = {{dx::Cause::kHwThermal, 1.0, 0.8}, {dx::Cause::kUnexplained, 0.25, 0.2}};
  d.excess.by_rank = {{13, "node-2", 5, "GPU-13", dx::Cause::kHwThermal, 1.0, 0.8}};
  d.excess.capped_without_cost = {{4, "node-1", 4, "GPU-4", 120}};
  dx::Check pass{"steady_cv", dx::CheckOutcome::kPass, 2.5, 10.0, "%", "CV 2.5 % < 10 %"};
  dx::Check na{"precision", dx::CheckOutcome::kNotApplicable, std::nullopt, std::nullopt, "",
               "none asked"};
  dx::Check fail{"throttling", dx::CheckOutcome::kFail, 2.5, 1.0, "%", "throttled"};
  d.checks = {pass, na, fail};
  return d;
}

TEST(DiagnosisJson, EveryFieldSurvivesTheRoundTrip) {
  JobDiagnosis d = EveryFieldSet();
  EXPECT_EQ(d.FailingChecks(), 1);
  absl::StatusOr<JobDiagnosis> back = DiagnosisFromJson(DiagnosisToJson(d));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, d);
  EXPECT_EQ(DiagnosisToJson(*back), DiagnosisToJson(d));
}

TEST(DiagnosisJson, TextThatIsNotADiagnosisIsRefusedNamingWhy) {
  EXPECT_EQ(DiagnosisFromJson("{").status().code(), absl::StatusCode::kInvalidArgument);
  std::string json = DiagnosisToJson(EveryFieldSet());
  std::string bad = json;
  bad.replace(bad.find("hw_thermal"), 10, "hw_thermax");
  absl::StatusOr<JobDiagnosis> refused = DiagnosisFromJson(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("hw_thermax"), std::string::npos);
}

}  // namespace
}  // namespace bench
