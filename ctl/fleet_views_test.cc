#include "ctl/fleet_views.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bench::ctl {
namespace {

namespace v1 = benchfleet::v1;
using ::testing::HasSubstr;
using ::testing::Not;

v1::GpuVariabilityResponse Fleet() {
  v1::GpuVariabilityResponse response;
  response.set_threshold_pct(5);
  const double normalized[] = {1.52, 1.01};
  for (int i = 0; i < 2; ++i) {
    auto* gpu = response.add_gpus();
    gpu->set_gpu_uuid("GPU-" + std::to_string(i));
    gpu->set_gpu_name("NVIDIA A100-SXM4-80GB");
    gpu->set_agent("node-a");
    gpu->set_hostname(i == 0 ? "dgx-a" : "node-a");
    gpu->set_gpu_index(i);
    gpu->set_jobs(3);
    gpu->set_iterations(1500);
    gpu->set_normalized_step_time(normalized[i]);
    gpu->set_step_time_cv(0.0123);
    gpu->set_outlier(i == 0);
    gpu->mutable_sm_clock_mhz()->set_count(100);
    gpu->mutable_sm_clock_mhz()->set_p5(1200);
    gpu->mutable_sm_clock_mhz()->set_p50(1410);
    gpu->mutable_sm_clock_mhz()->set_p95(1410);
    gpu->mutable_power_w()->set_count(100);
    gpu->mutable_power_w()->set_p50(398.25);
    gpu->mutable_temperature_c()->set_count(100);
    gpu->mutable_temperature_c()->set_p50(71);
  }
  return response;
}

TEST(FleetViewsTest, GpusRankedWithSlowFlag) {
  const std::string text = FormatGpuVariability(Fleet(), false);
  EXPECT_THAT(text, HasSubstr("UUID   NAME                   NODE          INDEX  JOBS  ITERATIONS"
                              "  STEP TIME    CV  SM MHz p50 (p5-p95)  POWER W p50  TEMP C p50  "
                              "FLAG\n"));
  EXPECT_THAT(text, HasSubstr("GPU-0  NVIDIA A100-SXM4-80GB  node-a/dgx-a      0     3        1500"
                              "      1.52x  1.2%     1410 (1200-1410)        398.2          71  "
                              "SLOW\n"));
  EXPECT_THAT(text, HasSubstr("GPU-1  NVIDIA A100-SXM4-80GB  node-a            1"));
  EXPECT_LT(text.find("GPU-0"), text.find("GPU-1"));
  EXPECT_THAT(text, HasSubstr("1 of 2 GPUs SLOW (more than 5% slower)"));
}

TEST(FleetViewsTest, OutliersOnly) {
  std::string text = FormatGpuVariability(Fleet(), true);
  EXPECT_THAT(text, HasSubstr("GPU-0"));
  EXPECT_THAT(text, Not(HasSubstr("GPU-1")));
  v1::GpuVariabilityResponse calm = Fleet();
  calm.mutable_gpus(0)->set_outlier(false);
  calm.set_threshold_pct(7.5);
  EXPECT_EQ(FormatGpuVariability(calm, true),
            "no GPU is slower than the fleet by more than 7.5% (2 GPUs)\n");
}

TEST(FleetViewsTest, NoGpuDataSaysSo) {
  v1::GpuVariabilityResponse empty;
  EXPECT_THAT(FormatGpuVariability(empty, false), HasSubstr("no data"));
  EXPECT_THAT(FormatGpuVariability(empty, true), HasSubstr("no data"));
  v1::GpuVariabilityResponse unmeasured = Fleet();
  unmeasured.mutable_gpus(1)->set_iterations(0);
  unmeasured.mutable_gpus(1)->set_normalized_step_time(0);
  unmeasured.mutable_gpus(1)->clear_sm_clock_mhz();
  const std::string text = FormatGpuVariability(unmeasured, false);
  EXPECT_THAT(text, HasSubstr("GPU-1  NVIDIA A100-SXM4-80GB  node-a            1     3           0"
                              "    no data  no data              no data"));
}

v1::Baseline MakeBaseline() {
  v1::Baseline baseline;
  baseline.set_model("resnet50");
  baseline.set_precision(v1::PRECISION_AMP);
  baseline.set_batch_size(256);
  baseline.set_devices(8);
  baseline.set_gpu_model("NVIDIA H100 80GB HBM3");
  baseline.set_device_kind("cuda");
  baseline.set_job_id("j-8");
  baseline.set_images_per_second(10000);
  baseline.set_lower_tolerance_pct(3);
  baseline.set_upper_tolerance_pct(5);
  baseline.set_image_size(224);
  return baseline;
}

TEST(FleetViewsTest, Baselines) {
  EXPECT_EQ(FormatBaselineSet(MakeBaseline()),
            "baseline for resnet50, 8 GPUs (NVIDIA H100 80GB HBM3), amp, batch 256, 224 px: "
            "10000.0 images/s from job j-8\n"
            "bounds: -3% / +5% (below 9700.0 is a REGRESSION, above 10500.0 is ABOVE)\n");
  const std::string table = FormatBaselinesTable({MakeBaseline()});
  EXPECT_THAT(table, HasSubstr("MODEL     DEVICE  GPU MODEL              DEVICES  PRECISION   BS"
                               "  IMAGES/S  BOUNDS   JOB  SET\n"));
  EXPECT_THAT(table, HasSubstr("resnet50  cuda    NVIDIA H100 80GB HBM3        8  amp        256"
                               "   10000.0  -3%/+5%  j-8  -\n"));
  EXPECT_EQ(FormatBaselinesTable({}), "no baselines\n");
}

}  // namespace
}  // namespace bench::ctl
