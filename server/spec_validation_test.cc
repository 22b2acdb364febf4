#include "server/spec_validation.h"

#include <gtest/gtest.h>

namespace bench {
namespace {

JobSpec Valid() {
  JobSpec spec;
  spec.model = "resnet50";
  spec.devices = 1;
  spec.precision = Precision::kFp32;
  spec.batch_size = 2;
  spec.iterations = 5;
  spec.warmup_iterations = 1;
  spec.image_size = 64;
  return spec;
}

void ExpectFieldError(JobSpec spec, const std::string& field) {
  absl::Status status = NormalizeAndValidateSpec(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << field;
  EXPECT_EQ(status.message().find(field + " ("), 0u) << status.message();
}

TEST(SpecValidationTest, AcceptsAValidSpecAndDefaultsTheData) {
  JobSpec spec = Valid();
  spec.data = "";
  EXPECT_TRUE(NormalizeAndValidateSpec(spec).ok());
  EXPECT_EQ(spec.data, "synthetic");
}

TEST(SpecValidationTest, NamesTheOffendingField) {
  JobSpec s = Valid();
  s.batch_size = 0;
  ExpectFieldError(s, "batch_size");
  s = Valid();
  s.devices = 0;
  ExpectFieldError(s, "devices");
  s = Valid();
  s.model = "vgg16";
  ExpectFieldError(s, "model");
  s = Valid();
  s.precision = Precision::kUnspecified;
  ExpectFieldError(s, "precision");
  s = Valid();
  s.iterations = -3;
  ExpectFieldError(s, "iterations");
  s = Valid();
  s.warmup_iterations = -1;
  ExpectFieldError(s, "warmup_iterations");
  s = Valid();
  s.warmup_iterations = 5;  // == iterations: nothing would be measured
  ExpectFieldError(s, "warmup_iterations");
  s = Valid();
  s.image_size = 8;
  ExpectFieldError(s, "image_size");
  s = Valid();
  s.data = "imagenet";
  ExpectFieldError(s, "data");
}

TEST(SpecValidationTest, ABatchOfOneAtThirtyTwoPixelsCannotTrainItsBatchNorm) {
  JobSpec s = Valid();
  s.batch_size = 1;
  s.image_size = 32;  // the last stage is 1×1: one value per channel
  ExpectFieldError(s, "batch_size");
  s.image_size = 33;  // 2×2
  EXPECT_TRUE(NormalizeAndValidateSpec(s).ok());
  s.image_size = 32;
  s.batch_size = 2;
  EXPECT_TRUE(NormalizeAndValidateSpec(s).ok());
}

TEST(SpecValidationTest, ShapeConstraintsAndLimits) {
  JobSpec s = Valid();
  s.devices = 0;
  s.nodes = 4;
  s.devices_per_node = 8;
  ASSERT_TRUE(NormalizeAndValidateSpec(s).ok());
  EXPECT_EQ(s.devices, 32);  // nodes × per node when devices is left out
  s = Valid();
  s.devices = 8;
  s.nodes = 3;
  s.devices_per_node = 2;
  ExpectFieldError(s, "nodes");  // 3 × 2 is not 8
  s = Valid();
  s.nodes = 2;  // without devices_per_node
  ExpectFieldError(s, "nodes");
  s = Valid();
  s.allowed_nodes = {""};
  ExpectFieldError(s, "allowed_nodes");
  s = Valid();
  s.node_labels = {{"a=b", "c"}};
  ExpectFieldError(s, "node_labels");
  s = Valid();
  s.wall_time_limit_s = -1;
  ExpectFieldError(s, "wall_time_limit_s");
  s = Valid();
  s.hang_timeout_s = 31 * 24 * 3600;
  ExpectFieldError(s, "hang_timeout_s");
}

TEST(SpecValidationTest, MessageCarriesTheCliFlag) {
  JobSpec s = Valid();
  s.batch_size = 0;
  absl::Status status = NormalizeAndValidateSpec(s);
  EXPECT_NE(status.message().find("--bs"), std::string::npos);
}

}  // namespace
}  // namespace bench
