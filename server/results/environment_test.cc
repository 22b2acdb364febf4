#include "server/results/environment.h"

#include <gtest/gtest.h>

namespace bench {
namespace {

TEST(EnvironmentTest, AgreeingVersionsAreOneValueAndDisagreeingOnesAreJoined) {
  Job job;
  job.agent_versions["dgx-a"] = {{"driver", "550.54.15"}, {"cuda_driver", "12.4"}};
  job.agent_versions["dgx-b"] = {{"driver", "535.104.05"}, {"cuda_driver", "12.4"},
                                 {"nvml", ""}};
  job.rank_versions[0] = {{"torch", "2.3.0"}, {"nccl", "2.20.5"}, {"bench_train", "abc123"}};
  job.rank_versions[1] = {{"torch", "2.3.0"}, {"nccl", "2.18.1"}, {"bench_train", "abc123"}};
  job.rank_devices = {{0, "dgx-b", "node-b", 0, "GPU-1", "H100"},
                      {1, "dgx-a", "node-a", 0, "GPU-2", "H100"},
                      {2, "dgx-a", "node-a", 1, "GPU-3", "H100"}};
  Environment env = MergeEnvironment(job);
  EXPECT_EQ(env.versions.at("cuda_driver"), "12.4");
  EXPECT_EQ(env.versions.at("torch"), "2.3.0");
  EXPECT_EQ(env.versions.at("bench_train"), "abc123");
  EXPECT_EQ(env.versions.at("driver"), "535.104.05 | 550.54.15");
  EXPECT_EQ(env.versions.at("nccl"), "2.18.1 | 2.20.5");
  EXPECT_EQ(env.versions.count("nvml"), 0u) << "an empty value is not a version";
  EXPECT_EQ(env.hostnames, (std::vector<std::string>{"node-a", "node-b"}));
}

TEST(EnvironmentTest, NothingReportedIsEmpty) {
  Environment env = MergeEnvironment(Job{});
  EXPECT_TRUE(env.versions.empty());
  EXPECT_TRUE(env.hostnames.empty());
}

TEST(EnvironmentTest, PrecisionInEffectAgainstTheRequest) {
  Job job;
  job.spec.precision = Precision::kAmp;
  EXPECT_EQ(MergePrecision(job).in_effect, "") << "no rank started";
  EXPECT_EQ(MergePrecision(job).mismatch, "");
  // amp is fp16 with loss scaling on CUDA and bf16 autocast on the CPU: both are amp.
  job.rank_precisions = {{0, "amp_fp16"}, {1, "amp_fp16"}};
  EXPECT_EQ(MergePrecision(job).in_effect, "amp_fp16");
  EXPECT_EQ(MergePrecision(job).mismatch, "");
  job.rank_precisions = {{0, "amp_bf16"}};
  EXPECT_EQ(MergePrecision(job).mismatch, "");
  // A job that asked for amp and ran fp32 says so, even when only one rank did.
  job.rank_precisions = {{0, "amp_fp16"}, {1, "fp32"}};
  EXPECT_EQ(MergePrecision(job).in_effect, "amp_fp16 | fp32");
  EXPECT_EQ(MergePrecision(job).mismatch, "requested amp, ran fp32");
  job.rank_precisions = {{0, "fp32"}};
  EXPECT_EQ(MergePrecision(job).mismatch, "requested amp, ran fp32");

  job.spec.precision = Precision::kFp32;
  EXPECT_EQ(MergePrecision(job).mismatch, "");
  job.rank_precisions = {{0, "tf32"}};  // TF32 math where strict fp32 was asked for
  EXPECT_EQ(MergePrecision(job).mismatch, "requested fp32, ran tf32");
  job.spec.precision = Precision::kUnspecified;  // the agent runs it as fp32
  EXPECT_EQ(MergePrecision(job).mismatch, "requested fp32, ran tf32");
  job.spec.precision = Precision::kTf32;
  EXPECT_EQ(MergePrecision(job).mismatch, "");
  job.spec.precision = Precision::kBf16;
  job.rank_precisions = {{0, "amp_bf16"}};
  EXPECT_EQ(MergePrecision(job).mismatch, "");
  job.rank_precisions = {{0, "amp_fp16"}};
  EXPECT_EQ(MergePrecision(job).mismatch, "requested bf16, ran amp_fp16");
}

}  // namespace
}  // namespace bench
