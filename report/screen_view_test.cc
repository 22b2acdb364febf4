// Fleet screening as text: the verdict words, the GPU and node tables in the message's order,
// and the list of screenings.
#include "report/screen_view.h"

#include "gtest/gtest.h"

namespace bench::report {
namespace {

namespace v1 = benchfleet::v1;

v1::ScreeningReport TwoNodes() {
  v1::ScreeningReport report;
  report.set_screening_id("scr-1");
  report.set_jobs(3);
  report.set_any_flagged(true);
  v1::ScreeningConfiguration* c = report.add_configurations();
  c->set_model("resnet50");
  c->set_batch_size(64);
  c->set_precision(v1::PRECISION_FP32);
  c->set_device_kind("cuda");
  c->set_gpu_model("NVIDIA H100");
  c->set_image_size(224);
  c->set_gpus(3);
  c->set_fleet_median_step_s(0.05);
  c->set_spread_mad_pct(2.25);
  c->set_threshold_pct(6.75);
  c->set_flagged(2);
  v1::ScreeningGpuVerdict* slow = report.add_gpus();
  slow->set_node("n1");
  slow->set_gpu_index(2);
  slow->set_verdict("slow");
  slow->set_flagged(true);
  slow->set_slow(true);
  slow->set_median_step_s(0.059);
  slow->set_slow_pct(18.04);
  slow->add_causes("thermal");
  slow->add_cause_descriptions("thermal");
  slow->set_evidence("hw_thermal in 80 % of readings");
  slow->set_job_id("job-000002");
  v1::ScreeningGpuVerdict* failed = report.add_gpus();
  failed->set_node("n2");
  failed->set_gpu_index(0);
  failed->set_verdict("failed");
  failed->set_flagged(true);
  failed->set_failed(true);
  failed->set_failure_reason("rank 0 exited with code 1");
  failed->set_job_id("job-000003");
  v1::ScreeningGpuVerdict* ok = report.add_gpus();
  ok->set_node("n1");
  ok->set_gpu_index(0);
  ok->set_verdict("ok");
  ok->set_median_step_s(0.0499);
  ok->set_slow_pct(-0.2);
  ok->set_job_id("job-000001");
  v1::ScreeningNodeVerdict* n1 = report.add_nodes();
  n1->set_node("n1");
  n1->set_gpus(2);
  n1->add_flagged_gpu_indexes(2);
  v1::ScreeningNodeVerdict* n2 = report.add_nodes();
  n2->set_node("n2");
  n2->set_gpus(1);
  n2->add_flagged_gpu_indexes(0);
  return report;
}

TEST(ScreenViewTest, VerdictWords) {
  v1::ScreeningGpuVerdict gpu;
  gpu.set_verdict("ok");
  EXPECT_EQ(ScreenVerdictText(gpu), "ok");
  gpu.set_verdict("slow");
  gpu.set_slow_pct(12.34);
  EXPECT_EQ(ScreenVerdictText(gpu), "slow +12.3 %");
  gpu.set_verdict("fault");
  EXPECT_EQ(ScreenVerdictText(gpu), "fault");
}

TEST(ScreenViewTest, ReportAsText) {
  EXPECT_EQ(RenderScreeningReport(TwoNodes()),
            "screening scr-1: 3 GPUs on 2 nodes, 2 flagged\n"
            "resnet50 bs 64 fp32 224px on NVIDIA H100: 3 GPUs, fleet median step 0.0500 s, "
            "spread 2.2 %, slow above +6.8 %\n"
            "\n"
            "NODE  GPU  VERDICT       VS FLEET  CAUSE       EVIDENCE                        JOB\n"
            "n1      2  slow +18.0 %   +18.0 %  thermal     hw_thermal in 80 % of readings  "
            "job-000002\n"
            "n2      0  failed               -  job failed  rank 0 exited with code 1       "
            "job-000003\n"
            "n1      0  ok              -0.2 %  -           -                               "
            "job-000001\n"
            "\n"
            "NODE  GPUS  VERDICT\n"
            "n1       2  flagged: GPU 2\n"
            "n2       1  flagged: GPU 0\n"
            "\n"
            "2 of 3 GPUs flagged\n");
}

TEST(ScreenViewTest, PendingJobsAndAllOk) {
  v1::ScreeningReport report = TwoNodes();
  report.clear_gpus();
  report.mutable_nodes(0)->clear_flagged_gpu_indexes();
  report.mutable_nodes(0)->set_ok(true);
  report.mutable_nodes()->RemoveLast();
  report.set_pending(1);
  v1::ScreeningGpuVerdict* ok = report.add_gpus();
  ok->set_node("n1");
  ok->set_verdict("ok");
  ok->set_median_step_s(0.05);
  ok->set_job_id("job-000001");
  const std::string text = RenderScreeningReport(report);
  EXPECT_NE(text.find("1 GPU on 1 node, 0 flagged, 1 job still queued or running"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("n1       2  ok\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nthe GPU is ok\n"), std::string::npos) << text;
}

TEST(ScreenViewTest, List) {
  v1::ListScreeningsResponse list;
  EXPECT_EQ(RenderScreeningList(list), "no screenings\n");
  v1::ScreeningSummary* s = list.add_screenings();
  s->set_screening_id("scr-1");
  s->set_created_unix_ms(1764180000000);
  s->set_jobs(16);
  s->set_pending(2);
  s->set_succeeded(13);
  s->set_failed(1);
  s->add_nodes("n1");
  s->add_nodes("n2");
  EXPECT_EQ(RenderScreeningList(list),
            "ID     CREATED               JOBS  PENDING  SUCCEEDED  FAILED  NODES\n"
            "scr-1  2025-11-26T18:00:00Z    16        2         13       1  n1,n2\n");
}

}  // namespace
}  // namespace bench::report
