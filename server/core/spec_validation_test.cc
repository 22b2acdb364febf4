#include "server/core/spec_validation.h"

#include <gtest/gtest.h>

#include <string>

#include "common/names.h"

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

// A refusal for `spec`: INVALID_ARGUMENT, the field first, the limit named, the value
// quoted as a short prefix; the message stays small whatever the value's size.
absl::Status Refusal(JobSpec spec, const std::string& field) {
  absl::Status status = NormalizeAndValidateSpec(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << field;
  EXPECT_EQ(status.message().find(field + " ("), 0u) << status.message();
  EXPECT_LT(status.message().size(), 300u) << status.message();
  return status;
}

bool Contains(const absl::Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

TEST(SpecValidationTest, AFiveMebibyteNameIsRefusedWithAShortMessageNamingTheLimit) {
  JobSpec s = Valid();
  s.name = std::string(5 << 20, 'x');
  absl::Status status = Refusal(s, "name");
  EXPECT_TRUE(Contains(status, "256 bytes")) << status.message();
  EXPECT_TRUE(Contains(status, "\"xxxxxxxx")) << status.message();
  EXPECT_TRUE(Contains(status, "(5242880 bytes)")) << status.message();
  s.name = std::string(kMaxJobNameBytes, 'x');
  EXPECT_TRUE(NormalizeAndValidateSpec(s).ok());
  s.name = "r\xc3\xa9sultats 8\xc3\x97H100";  // UTF-8 is fine
  EXPECT_TRUE(NormalizeAndValidateSpec(s).ok());
}

TEST(SpecValidationTest, EveryStringAndListHasALimit) {
  JobSpec s = Valid();
  s.request_id = std::string(kMaxRequestIdBytes + 1, 'r');
  EXPECT_TRUE(Contains(Refusal(s, "request_id"), "128 bytes"));
  s.request_id = std::string(kMaxRequestIdBytes, 'r');
  EXPECT_TRUE(NormalizeAndValidateSpec(s).ok());

  s = Valid();
  s.model = std::string(1 << 20, 'm');
  EXPECT_TRUE(Contains(Refusal(s, "model"), "64 bytes"));
  s = Valid();
  s.model = "resnet" + std::string(40, '5');  // short, unknown: quoted whole
  EXPECT_TRUE(Contains(Refusal(s, "model"), "unknown model \"resnet555"));
  s = Valid();
  s.data = std::string(1 << 20, 'd');
  EXPECT_TRUE(Contains(Refusal(s, "data"), "64 bytes"));

  s = Valid();
  for (size_t i = 0; i <= kMaxLabels; ++i) s.labels["k" + std::to_string(i)] = "v";
  EXPECT_TRUE(Contains(Refusal(s, "labels"), "33 labels, more than the 32"));
  s.labels.erase("k0");
  EXPECT_TRUE(NormalizeAndValidateSpec(s).ok());
  s = Valid();
  s.labels[std::string(kMaxLabelKeyBytes + 1, 'k')] = "v";
  EXPECT_TRUE(Contains(Refusal(s, "labels"), "63 bytes"));
  s = Valid();
  s.labels["k"] = std::string(1 << 20, 'v');
  EXPECT_TRUE(Contains(Refusal(s, "labels"), "256 bytes"));
  s = Valid();
  s.labels[""] = "v";
  Refusal(s, "labels").IgnoreError();

  s = Valid();
  for (size_t i = 0; i <= kMaxAllowedNodes; ++i) s.allowed_nodes.push_back("n" + std::to_string(i));
  EXPECT_TRUE(Contains(Refusal(s, "allowed_nodes"), "257 nodes, more than the 256"));
  s.allowed_nodes.pop_back();
  EXPECT_TRUE(NormalizeAndValidateSpec(s).ok());
  s = Valid();
  s.allowed_nodes = {std::string(kMaxNodeNameBytes + 1, 'n')};
  EXPECT_TRUE(Contains(Refusal(s, "allowed_nodes"), "1 to 63 bytes"));
  s.allowed_nodes = {std::string(kMaxNodeNameBytes, 'n'), "dgx-01.rack_2", "7b"};
  EXPECT_TRUE(NormalizeAndValidateSpec(s).ok());
  for (const char* bad : {"-dgx", ".dgx", "dgx 01", "dgx/01", "dgx\x1f", "n\xc3\xa9ud"}) {
    s.allowed_nodes = {bad};
    Refusal(s, "allowed_nodes").IgnoreError();
  }

  s = Valid();
  for (size_t i = 0; i <= kMaxLabels; ++i) s.node_labels["k" + std::to_string(i)] = "v";
  Refusal(s, "node_labels").IgnoreError();
  s = Valid();
  s.node_labels["rack"] = std::string(kMaxLabelValueBytes + 1, 'v');
  EXPECT_TRUE(Contains(Refusal(s, "node_labels"), "256 bytes"));
}

TEST(SpecValidationTest, ControlBytesThatCouldForgeALogLineAreRefused) {
  const std::string nul(1, '\0');
  for (const std::string& bad : {std::string("a\nb"), std::string("a\rb"), "a" + nul + "b",
                                 std::string("a\x1f"), std::string("a\x7f")}) {
    JobSpec s = Valid();
    s.name = bad;
    absl::Status status = Refusal(s, "name");
    EXPECT_TRUE(Contains(status, "control byte")) << status.message();
    EXPECT_EQ(status.message().find('\n'), std::string::npos) << "escaped in the message";
    s = Valid();
    s.request_id = bad;
    Refusal(s, "request_id").IgnoreError();
    s = Valid();
    s.labels[bad] = "v";
    Refusal(s, "labels").IgnoreError();
    s = Valid();
    s.node_labels[bad] = "v";
    Refusal(s, "node_labels").IgnoreError();
  }
  for (const std::string& bad : {std::string("a\nb"), std::string("a\rb"), "a" + nul + "b"}) {
    JobSpec s = Valid();
    s.labels["k"] = bad;
    Refusal(s, "labels").IgnoreError();
    s = Valid();
    s.node_labels["k"] = bad;
    Refusal(s, "node_labels").IgnoreError();
  }
}

// Label values are data: any byte but NUL, CR and LF is kept as given (the store keeps
// them too: store_jobs_test.cc).
TEST(SpecValidationTest, LabelValuesKeepUnitSeparatorsAndEqualsSigns) {
  JobSpec s = Valid();
  s.labels["note"] =
      "a=b\x1f"
      "c=d\t\xc3\xa9";
  s.node_labels["rack"] = "r1\x1fgpu=h100";
  ASSERT_TRUE(NormalizeAndValidateSpec(s).ok());
  EXPECT_EQ(s.labels["note"],
            "a=b\x1f"
            "c=d\t\xc3\xa9");
  EXPECT_EQ(s.node_labels["rack"], "r1\x1fgpu=h100");
}

TEST(SpecValidationTest, MessageCarriesTheCliFlag) {
  JobSpec s = Valid();
  s.batch_size = 0;
  absl::Status status = NormalizeAndValidateSpec(s);
  EXPECT_NE(status.message().find("--bs"), std::string::npos);
}

// Real data: a folder for imagefolder and coco (absolute, bounded, no control bytes), none
// for synthetic; each model's data kind decides which folder it reads; loader threads
// 0..256.
TEST(SpecValidationTest, RealDataNeedsAnAbsolutePathOfTheModelsKind) {
  JobSpec s = Valid();
  s.data = "imagefolder";
  s.data_path = "/data/imagenet/train";
  s.loader_threads = 8;
  EXPECT_TRUE(NormalizeAndValidateSpec(s).ok());

  s.data_path = "";
  EXPECT_TRUE(Contains(Refusal(s, "data_path"), "needs the folder"));
  s.data_path = "data/imagenet";
  EXPECT_TRUE(Contains(Refusal(s, "data_path"), "\"data/imagenet\" is relative"));
  s.data_path = "/data/a\nb";
  EXPECT_TRUE(Contains(Refusal(s, "data_path"), "control byte"));
  s.data_path = "/" + std::string(kMaxDataPathBytes, 'p');
  EXPECT_TRUE(Contains(Refusal(s, "data_path"), "1024 bytes"));
  s.data_path = "/" + std::string(kMaxDataPathBytes - 1, 'p');
  EXPECT_TRUE(NormalizeAndValidateSpec(s).ok());
  s.data_vs_compute = true;  // real data against synthetic: fine
  EXPECT_TRUE(NormalizeAndValidateSpec(s).ok());
  s.data = "synthetic";
  s.data_path = "";
  EXPECT_TRUE(Contains(Refusal(s, "data_vs_compute"), "--data-vs-compute"));

  s = Valid();
  s.data_path = "/data/imagenet/train";  // synthetic reads none
  absl::Status refusal = Refusal(s, "data_path");
  EXPECT_TRUE(Contains(refusal, "--data-path")) << refusal.message();
  EXPECT_TRUE(Contains(refusal, "synthetic data reads no folder")) << refusal.message();

  s = Valid();
  s.loader_threads = -1;
  EXPECT_TRUE(Contains(Refusal(s, "loader_threads"), "--loader-threads"));
  s.loader_threads = kMaxLoaderThreads + 1;
  EXPECT_TRUE(Contains(Refusal(s, "loader_threads"), "between 0"));
  s.loader_threads = kMaxLoaderThreads;
  EXPECT_TRUE(NormalizeAndValidateSpec(s).ok());

  s = Valid();
  s.data = "imagenet";
  EXPECT_TRUE(Contains(Refusal(s, "data"), "(known: synthetic, imagefolder or coco)"));

  // Every registered model takes the folder of its kind and refuses the other.
  for (const ModelInfo& model : kModels) {
    const bool detection = model.data_kind == DataKind::kDetection;
    s = Valid();
    s.model = model.name;
    s.image_size = model.default_image_size;
    s.data_path = "/data/set";
    s.data = detection ? "coco" : "imagefolder";
    EXPECT_TRUE(NormalizeAndValidateSpec(s).ok()) << model.name;
    s.data = detection ? "imagefolder" : "coco";
    refusal = Refusal(s, "data");
    EXPECT_TRUE(Contains(refusal, detection ? "is a detection model" : "is a classification model"))
        << refusal.message();
  }
}

}  // namespace
}  // namespace bench
