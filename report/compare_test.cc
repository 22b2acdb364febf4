#include "report/compare.h"

#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace bench::report {
namespace {

namespace v1 = benchfleet::v1;
using ::testing::HasSubstr;
using ::testing::Not;

v1::JobStatus Job(const std::string& id, double ips) {
  v1::JobStatus job;
  job.set_id(id);
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  job.set_device_kind("cuda");
  auto* spec = job.mutable_spec();
  spec->set_model("resnet50");
  spec->set_devices(2);
  spec->set_precision(v1::PRECISION_AMP);
  spec->set_batch_size(256);
  spec->set_iterations(100);
  spec->set_warmup_iterations(10);
  spec->set_image_size(224);
  job.set_has_throughput(true);
  job.set_images_per_second(ips);
  (*job.mutable_environment()->mutable_versions())["torch"] = "2.3.0";
  (*job.mutable_environment()->mutable_versions())["cuda"] = "12.4";
  job.mutable_environment()->add_hostnames("dgx-1");
  for (int rank = 0; rank < 2; ++rank) {
    auto* device = job.add_rank_devices();
    device->set_rank(rank);
    device->set_agent("dgx-1");
    device->set_hostname("dgx-1");
    device->set_device_index(rank);
    device->set_gpu_name("NVIDIA H100 80GB HBM3");
    device->set_gpu_uuid("GPU-" + std::to_string(rank));
  }
  return job;
}

TEST(CompareTest, MarksWhatDiffers) {
  v1::JobStatus a = Job("j-1", 2000);
  v1::JobStatus b = Job("j-2", 2100);
  (*b.mutable_environment()->mutable_versions())["torch"] = "2.4.0";
  (*b.mutable_environment()->mutable_versions())["nccl"] = "2.21.5";
  b.mutable_rank_devices(1)->set_gpu_uuid("GPU-7");
  b.mutable_rank_devices(1)->set_device_index(7);
  b.mutable_baseline()->set_verdict(v1::BASELINE_VERDICT_ABOVE);
  b.mutable_baseline()->set_ratio(1.05);
  b.set_energy_per_image_j(0.125);
  const std::string text = FormatComparison(a, b);
  EXPECT_THAT(text, HasSubstr("   FIELD          A                                     B\n"
                              "   job            j-1                                   j-2\n"));
  EXPECT_THAT(text, HasSubstr("   precision      amp                                   amp\n"));
  EXPECT_THAT(text, HasSubstr("*  images/s       2000.0"));
  EXPECT_THAT(text, HasSubstr("*  energy/image   no data"));
  EXPECT_THAT(text, HasSubstr("*  baseline       -"));
  EXPECT_THAT(text, HasSubstr("1.050x: ABOVE"));
  EXPECT_THAT(text, HasSubstr("   version cuda   12.4"));
  EXPECT_THAT(text, HasSubstr("*  version nccl   -"));
  EXPECT_THAT(text, HasSubstr("*  version torch  2.3.0"));
  EXPECT_THAT(text, HasSubstr("   hosts          dgx-1"));
  EXPECT_THAT(text, HasSubstr("   rank 0         dgx-1 #0 NVIDIA H100 80GB HBM3 GPU-0"));
  EXPECT_THAT(text, HasSubstr("*  rank 1         dgx-1 #1 NVIDIA H100 80GB HBM3 GPU-1"));
  EXPECT_THAT(text, HasSubstr("throughput B/A: 1.050x (+5.0%)\n"));
  EXPECT_THAT(text, HasSubstr("* marks the 6 lines that differ\n"));
  EXPECT_DOUBLE_EQ(*ThroughputRatio(a, b), 1.05);
}

TEST(CompareTest, SameJobsAndMissingThroughput) {
  v1::JobStatus a = Job("j-1", 2000);
  EXPECT_THAT(FormatComparison(a, Job("j-2", 2000)), HasSubstr("no differences\n"));
  v1::JobStatus failed = Job("j-3", 0);
  failed.set_state(v1::JOB_STATE_FAILED);
  failed.clear_has_throughput();
  failed.clear_images_per_second();
  const std::string text = FormatComparison(a, failed);
  EXPECT_THAT(text, HasSubstr("throughput B/A: no data (B (j-3) has no throughput)\n"));
  EXPECT_THAT(text, HasSubstr("*  state"));
  EXPECT_FALSE(ThroughputRatio(a, failed).has_value());
  EXPECT_THAT(text, Not(HasSubstr("0.000x")));
}

TEST(CompareTest, Json) {
  v1::JobStatus a = Job("j-1", 2000);
  v1::JobStatus b = Job("j-2", 1000);
  b.mutable_spec()->set_batch_size(128);
  const std::string json = ComparisonJson(a, b);
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  EXPECT_DOUBLE_EQ(parsed.fields().at("throughput_ratio").number_value(), 0.5);
  EXPECT_EQ(parsed.fields().at("a").struct_value().fields().at("id").string_value(), "j-1");
  const auto& differences = parsed.fields().at("differences").list_value();
  ASSERT_EQ(differences.values_size(), 2);
  EXPECT_EQ(differences.values(0).string_value(), "batch size");
  EXPECT_EQ(differences.values(1).string_value(), "images/s");
}

}  // namespace
}  // namespace bench::report
