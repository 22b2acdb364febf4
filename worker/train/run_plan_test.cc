// PlanPrecision, a pure function of the requested precision, the device and its compute
// capability: its CUDA branch checked on the CPU for every precision on capabilities 6.0 to
// 9.0 (no GPU needed: a c10::Device names a CUDA device without opening it), its CPU branch,
// and names it does not know.
#include "worker/train/run_plan.h"

#include <gtest/gtest.h>

#include <string>

namespace bench_train {
namespace {

const c10::Device kCuda(c10::kCUDA, 0);
const c10::Device kCpu(c10::kCPU);

struct Expected {
  std::string name;
  bool autocast;
  c10::ScalarType dtype;
  bool loss_scaling;
  bool tf32;
};

void ExpectPlan(const std::string& precision, const c10::Device& device, int capability,
                const Expected& expected) {
  SCOPED_TRACE(precision + " on " + device.str() + " capability " + std::to_string(capability));
  const StatusOr<PrecisionPlan> plan = PlanPrecision(precision, device, capability);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->name, expected.name);
  EXPECT_EQ(plan->autocast, expected.autocast);
  if (expected.autocast) {
    EXPECT_EQ(plan->autocast_dtype, expected.dtype);
  }
  EXPECT_EQ(plan->loss_scaling, expected.loss_scaling);
  EXPECT_EQ(plan->tf32, expected.tf32);
}

void ExpectRefused(const std::string& precision, const c10::Device& device, int capability,
                   const std::string& message) {
  SCOPED_TRACE(precision + " on " + device.str() + " capability " + std::to_string(capability));
  const StatusOr<PrecisionPlan> plan = PlanPrecision(precision, device, capability);
  ASSERT_FALSE(plan.ok()) << "planned as " << plan->name;
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(plan.status().message(), message);
}

const Expected kFp32{"fp32", false, c10::kFloat, false, false};
const Expected kTf32{"tf32", false, c10::kFloat, false, true};
const Expected kAmpFp16{"amp_fp16", true, c10::kHalf, true, false};
const Expected kAmpBf16{"amp_bf16", true, c10::kBFloat16, false, false};

TEST(PlanPrecisionTest, Fp32IsPlainFp32WithTf32OffOnEveryCapability) {
  for (int capability : {6, 7, 8, 9}) ExpectPlan("fp32", kCuda, capability, kFp32);
}

TEST(PlanPrecisionTest, AmpIsFp16AutocastWithLossScalingOnEveryCapability) {
  for (int capability : {6, 7, 8, 9}) ExpectPlan("amp", kCuda, capability, kAmpFp16);
}

TEST(PlanPrecisionTest, Tf32AndBf16NeedAmpereAndAreRefusedBelowIt) {
  for (int capability : {8, 9}) {
    ExpectPlan("tf32", kCuda, capability, kTf32);
    ExpectPlan("bf16", kCuda, capability, kAmpBf16);
  }
  for (int capability : {6, 7}) {
    const std::string has = "cuda:0 has " + std::to_string(capability) + ".x";
    ExpectRefused("tf32", kCuda, capability,
                  "--precision tf32 needs compute capability >= 8.0 (Ampere or newer); " + has);
    ExpectRefused("bf16", kCuda, capability,
                  "--precision bf16 needs compute capability >= 8.0 (Ampere or newer); " + has);
  }
}

TEST(PlanPrecisionTest, OnTheCpuAmpAndBf16AreBf16AutocastAndTf32IsRefused) {
  // The capability is ignored on the CPU.
  for (int capability : {0, 9}) {
    ExpectPlan("fp32", kCpu, capability, kFp32);
    ExpectPlan("amp", kCpu, capability, kAmpBf16);
    ExpectPlan("bf16", kCpu, capability, kAmpBf16);
    ExpectRefused("tf32", kCpu, capability,
                  "--precision tf32 needs a CUDA device (TF32 is a tensor-core mode of Ampere "
                  "and newer GPUs; on the CPU use fp32)");
  }
}

// Flag parsing refuses these first; the plan must not make one of them an fp16 or bf16 run.
TEST(PlanPrecisionTest, AnUnknownNameIsRefusedNamingIt) {
  for (const std::string name : {"fp16", "FP32", "", "amp_fp16"}) {
    const std::string message = "unknown --precision '" + name + "' (known: fp32, tf32, amp, bf16)";
    ExpectRefused(name, kCuda, 9, message);
    ExpectRefused(name, kCpu, 0, message);
  }
}

}  // namespace
}  // namespace bench_train
