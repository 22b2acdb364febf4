#include "common/names.h"

#include <gtest/gtest.h>

#include "common/spec_defaults.h"
#include "common/spec_names.h"

namespace bench {
namespace {

namespace v1 = benchfleet::v1;

TEST(NamesTest, JobStatesAndTerminalComeFromOneTable) {
  EXPECT_EQ(JobStateName(v1::JOB_STATE_QUEUED), "QUEUED");
  EXPECT_EQ(JobStateName(v1::JOB_STATE_RUNNING), "RUNNING");
  EXPECT_EQ(JobStateName(v1::JOB_STATE_SUCCEEDED), "SUCCEEDED");
  EXPECT_EQ(JobStateName(v1::JOB_STATE_FAILED), "FAILED");
  EXPECT_EQ(JobStateName(v1::JOB_STATE_CANCELLED), "CANCELLED");
  EXPECT_EQ(JobStateName(v1::JOB_STATE_UNSPECIFIED), "UNSPECIFIED");
  EXPECT_FALSE(IsTerminal(v1::JOB_STATE_UNSPECIFIED));
  EXPECT_FALSE(IsTerminal(v1::JOB_STATE_QUEUED));
  EXPECT_FALSE(IsTerminal(v1::JOB_STATE_RUNNING));
  EXPECT_TRUE(IsTerminal(v1::JOB_STATE_SUCCEEDED));
  EXPECT_TRUE(IsTerminal(v1::JOB_STATE_FAILED));
  EXPECT_TRUE(IsTerminal(v1::JOB_STATE_CANCELLED));
}

TEST(NamesTest, EveryPrecisionNameParsesAndPrintsBack) {
  for (const char* name : kPrecisionNames) {
    absl::StatusOr<v1::Precision> precision = ParsePrecision(name);
    ASSERT_TRUE(precision.ok()) << name;
    EXPECT_EQ(PrecisionName(*precision), name);
  }
  EXPECT_EQ(*ParsePrecision("AMP"), v1::PRECISION_AMP);
  EXPECT_EQ(PrecisionName(v1::PRECISION_UNSPECIFIED), "unspecified");
  absl::StatusOr<v1::Precision> bad = ParsePrecision("fp16");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "precision: unknown precision \"fp16\" (expected fp32, tf32, amp or bf16)");
}

TEST(NamesTest, ModelsAndJoin) {
  EXPECT_TRUE(IsKnownModel("resnet50"));
  EXPECT_TRUE(IsKnownModel(kDefaultModel));
  EXPECT_FALSE(IsKnownModel("ResNet50"));
  EXPECT_FALSE(IsKnownModel(""));
  EXPECT_EQ(JoinNames(kModelNames, ", ", ", "),
            "resnet18, resnet34, resnet50, resnet101, resnet152, ssd_resnet34");
  EXPECT_EQ(JoinNames(kPrecisionNames, "|", "|"), "fp32|tf32|amp|bf16");
  EXPECT_EQ(JoinNames(kPrecisionNames), "fp32, tf32, amp or bf16");
}

TEST(NamesTest, ModelRegistryDeclaresSizeKindAndBenchmark) {
  const ModelInfo* resnet50 = FindModel("resnet50");
  ASSERT_NE(resnet50, nullptr);
  EXPECT_EQ(resnet50->default_image_size, kDefaultImageSize);
  EXPECT_EQ(resnet50->default_num_classes, 1000);
  EXPECT_EQ(resnet50->data_kind, DataKind::kClassification);
  EXPECT_STREQ(resnet50->mllog_benchmark, "resnet");
  EXPECT_EQ(FindModel("ResNet50"), nullptr);
  const ModelInfo* ssd = FindModel("ssd_resnet34");
  ASSERT_NE(ssd, nullptr);
  EXPECT_EQ(ssd->default_image_size, 300);
  EXPECT_EQ(ssd->default_num_classes, 81);
  EXPECT_EQ(ssd->data_kind, DataKind::kDetection);
  EXPECT_STREQ(ssd->mllog_benchmark, "ssd");
  EXPECT_STREQ(DataKindName(DataKind::kClassification), "classification");
  EXPECT_STREQ(DataKindName(DataKind::kDetection), "detection");
  ASSERT_EQ(std::size(kModels), std::size(kModelNames));
  for (size_t i = 0; i < std::size(kModels); ++i) {
    EXPECT_STREQ(kModels[i].name, kModelNames[i]);
    EXPECT_GE(kModels[i].default_image_size, 32) << kModels[i].name;
  }
}

TEST(SpecDefaultsTest, DevicesOfShape) {
  EXPECT_EQ(ShapeDevices(4, 8), 32);
  EXPECT_EQ(ShapeDevices(65536, 65536), int64_t{1} << 32);  // no overflow
  EXPECT_EQ(DevicesOfShape(4, 8), 32);
  EXPECT_EQ(DevicesOfShape(0, 8), 0);
  EXPECT_EQ(DevicesOfShape(4, 0), 0);
  EXPECT_EQ(DevicesOfShape(-1, 8), 0);
  EXPECT_EQ(DevicesOfShape(4, 1024, 4096), 4096);
  EXPECT_EQ(DevicesOfShape(5, 1024, 4096), 0);
  EXPECT_EQ(DevicesOfShape(65536, 65536), 0);
  EXPECT_TRUE(ParsePrecision(kDefaultPrecision).ok());
}

}  // namespace
}  // namespace bench
