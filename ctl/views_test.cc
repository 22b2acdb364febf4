#include "ctl/views.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/json_output.h"

namespace bench::ctl {
namespace {

using benchfleet::v1::AgentStatus;
using benchfleet::v1::JobStatus;
using ::testing::HasSubstr;
using ::testing::Not;

JobStatus RunningJob() {
  JobStatus job;
  job.set_id("j-7");
  auto* spec = job.mutable_spec();
  spec->set_model("resnet50");
  spec->set_devices(8);
  spec->set_precision(benchfleet::v1::PRECISION_AMP);
  spec->set_batch_size(256);
  spec->set_iterations(100);
  spec->set_warmup_iterations(10);
  spec->set_image_size(224);
  spec->set_name("nightly");
  (*spec->mutable_labels())["gpu"] = "v100";
  job.set_state(benchfleet::v1::JOB_STATE_RUNNING);
  job.set_reason("placed");
  job.set_attempt(1);
  job.set_iterations_done(45);
  job.set_samples_stored(360);
  job.set_parameters(25557032);
  job.set_device_kind("cuda");
  job.set_created_unix_ms(1700000000000);
  auto* a = job.add_placements();
  a->set_agent("node-a");
  for (int r = 0; r < 4; ++r) {
    a->add_ranks(r);
    a->add_device_indices(r);
  }
  auto* b = job.add_placements();
  b->set_agent("node-b");
  for (int r = 4; r < 8; ++r) {
    b->add_ranks(r);
    b->add_device_indices(r - 4);
  }
  auto* t = job.add_history();
  t->set_state(benchfleet::v1::JOB_STATE_QUEUED);
  t->set_reason("submitted");
  t->set_time_unix_ms(1700000000000);
  t = job.add_history();
  t->set_state(benchfleet::v1::JOB_STATE_RUNNING);
  t->set_reason("placed");
  t->set_time_unix_ms(1700000001000);
  return job;
}

TEST(ViewsTest, CompactRanges) {
  EXPECT_EQ(CompactRanges({}), "");
  EXPECT_EQ(CompactRanges({3}), "3");
  EXPECT_EQ(CompactRanges({0, 1}), "0,1");
  EXPECT_EQ(CompactRanges({0, 1, 2, 3, 6, 8, 9, 10}), "0-3,6,8-10");
}

TEST(ViewsTest, DataSourceAndDataWait) {
  JobStatus job = RunningJob();
  EXPECT_THAT(FormatJobText(job), HasSubstr("\ndata:       synthetic\n"));
  EXPECT_THAT(FormatJobText(job), Not(HasSubstr("data wait")));
  job.mutable_spec()->set_data(benchfleet::v1::DATA_SOURCE_IMAGEFOLDER);
  job.mutable_spec()->set_data_path("/data/imagenet/train");
  job.mutable_spec()->set_loader_threads(8);
  EXPECT_THAT(FormatJobText(job, "x"),
              HasSubstr("\ndata:       imagefolder at /data/imagenet/train, 8 loader threads "
                        "per rank\n"));
  EXPECT_THAT(FormatJobText(job, "x"), HasSubstr("\ndata wait:  x\n"));
  job.mutable_spec()->set_loader_threads(0);
  EXPECT_EQ(DescribeData(job.spec()),
            "imagefolder at /data/imagenet/train, bench-train's default loader threads");

  std::vector<benchfleet::v1::IterationSample> samples;
  auto add = [&](double step, double data, bool warmup) {
    benchfleet::v1::IterationSample sample;
    sample.set_step_time_s(step);
    sample.set_data_time_s(data);
    sample.set_warmup(warmup);
    samples.push_back(sample);
  };
  EXPECT_EQ(DataWaitText(samples), "no measured iterations");
  add(5.0, 4.0, true);  // warm-up: left out
  add(0.2, 0.010, false);
  add(0.2, 0.020, false);
  add(0.1, 0.030, false);
  // median data 20 ms over median step 200 ms
  EXPECT_EQ(DataWaitText(samples),
            "20 ms median per step, 10.0% of the median step time (3 iterations)");
}

TEST(ViewsTest, JobText) {
  std::string text = FormatJobText(RunningJob());
  EXPECT_THAT(text, HasSubstr("id:         j-7\n"));
  EXPECT_THAT(text, HasSubstr("name:       nightly\n"));
  EXPECT_THAT(text, HasSubstr("state:      RUNNING (placed)\n"));
  EXPECT_THAT(text, HasSubstr("spec:       resnet50, 8 devices, amp, batch 256/device, "
                              "100 iterations (10 warm-up), 224 px images\n"));
  EXPECT_THAT(text, HasSubstr("labels:     gpu=v100\n"));
  EXPECT_THAT(text, HasSubstr("placements: node-a: ranks 0-3 (devices 0-3)\n"
                              "            node-b: ranks 4-7 (devices 0-3)\n"));
  EXPECT_THAT(text, HasSubstr("progress:   45/100 it\n"));
  EXPECT_THAT(text, HasSubstr("samples:    360 stored\n"));
  EXPECT_THAT(text, HasSubstr("parameters: 25557032\n"));
  EXPECT_THAT(text, HasSubstr("images/s:   no data\n"));
  EXPECT_THAT(text, HasSubstr("history:\n  "));
  EXPECT_THAT(text, HasSubstr("  QUEUED  submitted\n"));
  EXPECT_THAT(text, HasSubstr("  RUNNING  placed\n"));

  JobStatus done = RunningJob();
  done.set_has_throughput(true);
  done.set_images_per_second(9500.54);
  EXPECT_THAT(FormatJobText(done), HasSubstr("images/s:   9500.5\n"));
}

TEST(ViewsTest, JobTextNamesTheSubmitterWhenBenchdRecordedOne) {
  EXPECT_THAT(FormatJobText(RunningJob()), Not(HasSubstr("submitted by")));
  JobStatus job = RunningJob();
  job.set_submitted_by("alice");
  EXPECT_THAT(FormatJobText(job), HasSubstr("\nsubmitted by: alice\n"));
}

TEST(ViewsTest, JobTextShowsDataVsComputeWhenAskedFor) {
  EXPECT_THAT(FormatJobText(RunningJob()), Not(HasSubstr("vs compute:")));
  JobStatus job = RunningJob();
  job.mutable_spec()->set_data_vs_compute(true);
  EXPECT_THAT(FormatJobText(job), HasSubstr("vs compute: no data ("));
  job.set_has_throughput(true);
  job.set_images_per_second(120.25);
  job.set_synthetic_images_per_second(193.125);
  job.set_data_vs_compute(120.25 / 193.125);
  EXPECT_THAT(FormatJobText(job),
              HasSubstr("vs compute: 0.62 of compute: 120.2 images/s on its data, 193.1 on "
                        "synthetic data\n"));
}

TEST(ViewsTest, JobTextShowsTheSlurmAllocationWhenThereIsOne) {
  EXPECT_THAT(FormatJobText(RunningJob()), Not(HasSubstr("allocation:")));
  JobStatus job = RunningJob();
  job.mutable_allocation()->set_system("slurm");
  job.mutable_allocation()->set_id("4711");
  job.mutable_allocation()->set_state("PENDING");
  job.mutable_allocation()->set_reason("Resources");
  EXPECT_THAT(FormatJobText(job), HasSubstr("\nallocation: Slurm job 4711 PENDING (Resources)\n"));
  job.mutable_allocation()->set_state("TIMEOUT");
  job.mutable_allocation()->set_reason("TimeLimit");
  job.mutable_allocation()->set_nodes("node[1-2]");
  EXPECT_THAT(FormatJobText(job),
              HasSubstr("\nallocation: Slurm job 4711 TIMEOUT (TimeLimit) on node[1-2]\n"));
}

TEST(ViewsTest, JobTextShowsShapeConstraintsLimitsQueueAndRequeues) {
  const std::string plain = FormatJobText(RunningJob());
  for (const char* key : {"queue:", "requeues:", "shape:", "constraints:", "limits:"}) {
    EXPECT_THAT(plain, Not(HasSubstr(key)));
  }

  JobStatus job = RunningJob();
  job.set_state(benchfleet::v1::JOB_STATE_QUEUED);
  job.set_reason("no agent carries gpu=h100");
  job.set_queue_position(3);
  job.set_requeues(2);
  auto* spec = job.mutable_spec();
  spec->set_nodes(2);
  spec->set_devices_per_node(4);
  spec->add_allowed_nodes("dgx-01");
  spec->add_allowed_nodes("dgx-02");
  (*spec->mutable_node_labels())["site"] = "a";
  (*spec->mutable_node_labels())["gpu"] = "h100";
  spec->set_wall_time_limit_s(5400);
  spec->set_hang_timeout_s(600);
  const std::string text = FormatJobText(job);
  EXPECT_THAT(text, HasSubstr("state:      QUEUED (no agent carries gpu=h100)\n"
                              "queue:      position 3\n"
                              "requeues:   2 (back in the queue after losing a node)\n"));
  EXPECT_THAT(text, HasSubstr("shape:      2 nodes x 4 devices\n"
                              "constraints: nodes dgx-01, dgx-02; labels gpu=h100, site=a\n"
                              "limits:     wall time 1h30m, hang timeout 10m\n"));

  job.set_queue_position(1);
  EXPECT_THAT(FormatJobText(job), HasSubstr("queue:      position 1 (next)\n"));
  // A position only means something while queued.
  job.set_state(benchfleet::v1::JOB_STATE_RUNNING);
  EXPECT_THAT(FormatJobText(job), Not(HasSubstr("queue:")));

  JobStatus limits_only = RunningJob();
  limits_only.mutable_spec()->set_hang_timeout_s(90);
  limits_only.mutable_spec()->set_devices_per_node(8);
  EXPECT_THAT(FormatJobText(limits_only), HasSubstr("limits:     hang timeout 1m30s\n"));
  EXPECT_THAT(FormatJobText(limits_only), HasSubstr("shape:      8 devices per node\n"));
  EXPECT_THAT(FormatJobText(limits_only), Not(HasSubstr("requeues:")));
}

TEST(ViewsTest, FormatSeconds) {
  EXPECT_EQ(FormatSeconds(0), "0s");
  EXPECT_EQ(FormatSeconds(45), "45s");
  EXPECT_EQ(FormatSeconds(90), "1m30s");
  EXPECT_EQ(FormatSeconds(1800), "30m");
  EXPECT_EQ(FormatSeconds(7200), "2h");
  EXPECT_EQ(FormatSeconds(3605), "1h5s");
  EXPECT_EQ(FormatSeconds(93600), "1d2h");
}

TEST(ViewsTest, JobTextShowsGpuTelemetryOrSaysThereIsNone) {
  JobStatus job = RunningJob();
  EXPECT_THAT(FormatJobText(job), HasSubstr("energy:     no data"));
  job.set_telemetry_note("no GPU samples for rank 3");
  job.set_energy_per_image_j(0.25);
  job.set_images_per_second_per_watt(4);
  auto* gpu = job.add_gpu_telemetry();
  gpu->set_rank(0);
  gpu->set_agent("node-a");
  gpu->set_gpu_index(0);
  gpu->set_gpu_uuid("GPU-fake-0");
  gpu->set_samples(42);
  gpu->set_energy_per_image_j(0.25);
  gpu->mutable_power_w()->set_count(42);
  gpu->mutable_power_w()->set_p5(290);
  gpu->mutable_power_w()->set_p50(300);
  gpu->mutable_power_w()->set_p95(310.25);
  gpu->set_throttle_reasons(4);
  std::string text = FormatJobText(job);
  EXPECT_THAT(text, HasSubstr("energy:     0.25 J/image (4 images/s per W)"));
  EXPECT_THAT(text, HasSubstr("telemetry:  no GPU samples for rank 3"));
  EXPECT_THAT(text, HasSubstr("gpus (measured window):"));
  EXPECT_THAT(text, HasSubstr("300.0 (290.0-310.2)"));
  EXPECT_THAT(text, HasSubstr("GPU-fake-0"));
  EXPECT_THAT(text, HasSubstr("0x4"));
  EXPECT_THAT(FormatGpuTelemetryTable(job), HasSubstr("no data"));  // no clock readings
}

// A simulated job (bench-sim-train, issue 26): "simulated" next to every figure's heading,
// in the status text and in the jobs table; a real job's text never says it.
TEST(ViewsTest, ASimulatedJobSaysSoNextToEveryFigure) {
  JobStatus job = RunningJob();
  job.set_has_throughput(true);
  job.set_images_per_second(812.5);
  job.set_energy_per_image_j(0.25);
  job.mutable_spec()->set_data_vs_compute(true);
  job.mutable_baseline()->set_verdict(benchfleet::v1::BASELINE_VERDICT_WITHIN);
  job.mutable_baseline()->set_ratio(1);
  job.add_gpu_telemetry()->set_gpu_uuid("GPU-sim-0");
  EXPECT_THAT(FormatJobText(job, "0.1 s"), Not(HasSubstr("simulated")));
  job.set_simulated(true);
  const std::string text = FormatJobText(job, "0.1 s");
  EXPECT_THAT(text, HasSubstr("simulated:  yes: every figure below comes from bench-sim-train"));
  for (const char* heading :
       {"precision", "non-finite", "skipped", "images/s", "data wait", "vs compute", "energy"}) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat("\n", heading, " (simulated): "))) << heading;
    EXPECT_THAT(text, Not(HasSubstr(absl::StrCat("\n", heading, ": ")))) << heading;
  }
  EXPECT_THAT(text, HasSubstr("gpus (measured window, simulated):"));
  EXPECT_THAT(FormatJobsTable({job}), HasSubstr("812.5 (simulated)"));
}

TEST(ViewsTest, JobTextShowsEnvironmentRankDevicesAndBaseline) {
  JobStatus job = RunningJob();
  std::string plain = FormatJobText(job);
  EXPECT_THAT(plain, Not(HasSubstr("versions:")));
  EXPECT_THAT(plain, Not(HasSubstr("baseline:")));
  EXPECT_THAT(plain, Not(HasSubstr("ranks:")));
  auto& versions = *job.mutable_environment()->mutable_versions();
  versions["torch"] = "2.3.0";
  versions["cuda"] = "12.4";
  versions["driver"] = "550.54 | 550.90";
  job.mutable_environment()->add_hostnames("dgx-a");
  job.mutable_environment()->add_hostnames("dgx-b");
  auto* device = job.add_rank_devices();
  device->set_rank(0);
  device->set_agent("node-a");
  device->set_hostname("dgx-a");
  device->set_device_index(0);
  device->set_gpu_name("Tesla V100-SXM2-16GB");
  device->set_gpu_uuid("GPU-aaaa");
  device = job.add_rank_devices();
  device->set_rank(1);
  device->set_agent("cpu-node");
  device->set_device_index(3);
  job.mutable_baseline()->set_verdict(benchfleet::v1::BASELINE_VERDICT_BELOW);
  job.mutable_baseline()->set_ratio(0.9);
  job.mutable_baseline()->set_baseline_images_per_second(10000);
  job.mutable_baseline()->set_baseline_job_id("j-1");
  std::string text = FormatJobText(job);
  EXPECT_THAT(text, HasSubstr("versions:   cuda=12.4, driver=550.54 | 550.90, torch=2.3.0\n"));
  EXPECT_THAT(text, HasSubstr("hosts:      dgx-a, dgx-b\n"));
  EXPECT_THAT(text, HasSubstr("baseline:   0.900x of 10000.0 images/s (job j-1): REGRESSION"));
  EXPECT_THAT(text,
              HasSubstr("ranks:\n"
                        "  RANK  NODE      HOST   DEVICE  GPU                   UUID      PRECISION\n"
                        "     0  node-a    dgx-a       0  Tesla V100-SXM2-16GB  GPU-aaaa  -\n"
                        "     1  cpu-node  -           3  -                     -         -\n"));
  job.mutable_baseline()->set_verdict(benchfleet::v1::BASELINE_VERDICT_WITHIN);
  job.mutable_baseline()->set_ratio(1.01);
  EXPECT_THAT(FormatJobText(job), HasSubstr("(job j-1): within bounds\n"));
}

// Issue 13: the precision in effect (a mismatch with the request flagged), the
// non-finite losses and the skipped fp16 steps of the current attempt.
TEST(ViewsTest, JobTextShowsPrecisionInEffectNonFiniteLossesAndSkippedSteps) {
  JobStatus job = RunningJob();  // amp requested, 360 samples stored, 8 ranks
  std::string text = FormatJobText(job);
  EXPECT_THAT(text, HasSubstr("precision:  unknown until a rank starts (requested amp)\n"));
  EXPECT_THAT(text, HasSubstr(
                        "non-finite: 0 of 360 stored iterations had a NaN or infinite loss\n"));
  EXPECT_THAT(text, HasSubstr("skipped:    unknown until a rank reports its summary\n"));

  job.set_effective_precision("amp_fp16");
  job.set_nonfinite_losses(12);
  job.set_skipped_steps(5);
  job.set_ranks_summarized(3);
  text = FormatJobText(job);
  EXPECT_THAT(text, HasSubstr("precision:  amp_fp16 (requested amp)\n"));
  EXPECT_THAT(text, HasSubstr(
                        "non-finite: 12 of 360 stored iterations had a NaN or infinite loss\n"));
  EXPECT_THAT(text, HasSubstr(
                        "skipped:    5 fp16 steps skipped for overflow (summaries of 3 of 8 ranks)\n"));

  job.set_effective_precision("fp32");
  job.set_precision_mismatch("requested amp, ran fp32");
  auto* rank = job.add_rank_devices();
  rank->set_rank(0);
  rank->set_agent("node-a");
  rank->set_precision("fp32");
  text = FormatJobText(job);
  EXPECT_THAT(text, HasSubstr("precision:  fp32 (MISMATCH: requested amp, ran fp32)\n"));
  EXPECT_THAT(text, HasSubstr("  fp32\n"));  // the ranks table's PRECISION column

  // --format json carries the same fields.
  const std::string json = report::ToJson(job);
  EXPECT_THAT(json, HasSubstr("\"effective_precision\":\"fp32\""));
  EXPECT_THAT(json, HasSubstr("\"precision_mismatch\":\"requested amp, ran fp32\""));
  EXPECT_THAT(json, HasSubstr("\"nonfinite_losses\":\"12\""));  // int64: a string
  EXPECT_THAT(json, HasSubstr("\"skipped_steps\":\"5\""));
  EXPECT_THAT(json, HasSubstr("\"ranks_summarized\":3"));

  JobStatus diverged = RunningJob();
  diverged.set_state(benchfleet::v1::JOB_STATE_FAILED);
  EXPECT_THAT(FormatJobText(diverged),
              HasSubstr("skipped:    unknown: no rank reported its summary\n"));

  JobStatus queued = RunningJob();
  queued.set_attempt(0);
  EXPECT_THAT(FormatJobText(queued), Not(HasSubstr("non-finite:")));
}

TEST(ViewsTest, JobsTable) {
  JobStatus done = RunningJob();
  done.set_id("j-8");
  done.set_state(benchfleet::v1::JOB_STATE_SUCCEEDED);
  done.set_has_throughput(true);
  done.set_images_per_second(10440);
  std::string table = FormatJobsTable({RunningJob(), done});
  EXPECT_THAT(table, HasSubstr("ID   STATE      MODEL     DEVICES  PRECISION   BS  PROGRESS  "
                               "IMAGES/S  CREATED\n"));
  EXPECT_THAT(table, HasSubstr("j-7  RUNNING    resnet50        8  amp        256    45/100  "
                               " no data  "));
  EXPECT_THAT(table, HasSubstr("j-8  SUCCEEDED  resnet50        8  amp        256    45/100  "
                               " 10440.0  "));
  EXPECT_EQ(FormatJobsTable({}), "no jobs\n");
}

TEST(ViewsTest, AgentsTable) {
  AgentStatus gpu;
  gpu.mutable_inventory()->set_name("dgx-1");
  gpu.mutable_inventory()->set_address("10.0.0.5");
  for (int i = 0; i < 8; ++i) {
    auto* g = gpu.mutable_inventory()->add_gpus();
    g->set_index(i);
    g->set_name("Tesla V100-SXM2-16GB");
  }
  gpu.set_connected(true);
  gpu.set_devices_total(8);
  gpu.set_devices_busy(8);
  gpu.add_running_jobs("j-7");
  AgentStatus cpu;
  cpu.mutable_inventory()->set_name("laptop");
  cpu.mutable_inventory()->set_cpu_slots(4);
  cpu.set_devices_total(4);
  cpu.set_connected(false);
  (*gpu.mutable_inventory()->mutable_labels())["site"] = "a";
  (*gpu.mutable_inventory()->mutable_labels())["gpu"] = "v100";
  std::string table = FormatAgentsTable({gpu, cpu});
  EXPECT_THAT(table, HasSubstr("NAME    ADDRESS   DEVICES                  BUSY  LABELS           "
                               "CONNECTED"));
  EXPECT_THAT(table,
              HasSubstr("dgx-1   10.0.0.5  8x Tesla V100-SXM2-16GB   8/8  gpu=v100,site=a  yes"));
  EXPECT_THAT(table, HasSubstr("j-7\n"));
  EXPECT_THAT(table,
              HasSubstr("laptop  -         4 CPU slots               0/4  -                no"));
  EXPECT_EQ(FormatAgentsTable({}), "no agents\n");
}

TEST(ViewsTest, JsonUsesProtoFieldNames) {
  std::string json = report::ToJson(RunningJob());
  EXPECT_THAT(json, HasSubstr("\"iterations_done\":45"));
  EXPECT_THAT(json, HasSubstr("\"has_throughput\":false"));
  EXPECT_THAT(json, HasSubstr("\"state\":\"JOB_STATE_RUNNING\""));
  EXPECT_THAT(json, Not(HasSubstr("iterationsDone")));
  EXPECT_EQ(json.back(), '\n');
  std::string array = report::ToJsonArray(std::vector<JobStatus>{RunningJob(), RunningJob()});
  EXPECT_EQ(array.substr(0, 4), "[\n  ");
  EXPECT_THAT(array, HasSubstr("},\n  {"));
  EXPECT_EQ(array.substr(array.size() - 4), "}\n]\n");
}

}  // namespace
}  // namespace bench::ctl
