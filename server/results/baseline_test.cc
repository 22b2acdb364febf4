#include "server/results/baseline.h"

#include <cmath>

#include <gtest/gtest.h>

namespace bench {
namespace {

Baseline Reference(double images_per_second, double lower, double upper) {
  Baseline b;
  b.job_id = "job-000001";
  b.images_per_second = images_per_second;
  b.lower_tolerance_pct = lower;
  b.upper_tolerance_pct = upper;
  return b;
}

TEST(BaselineTest, VerdictsAgainstLowerAndUpperBounds) {
  Baseline b = Reference(1000, 5, 10);  // within [950, 1100]
  EXPECT_EQ(CompareWithBaseline(949.9, b).verdict, BaselineVerdict::kBelow);
  EXPECT_EQ(CompareWithBaseline(950, b).verdict, BaselineVerdict::kWithin);
  EXPECT_EQ(CompareWithBaseline(1000, b).verdict, BaselineVerdict::kWithin);
  EXPECT_EQ(CompareWithBaseline(1100, b).verdict, BaselineVerdict::kWithin);
  EXPECT_EQ(CompareWithBaseline(1100.1, b).verdict, BaselineVerdict::kAbove);
  BaselineComparison c = CompareWithBaseline(900, b);
  EXPECT_DOUBLE_EQ(c.ratio, 0.9);
  EXPECT_EQ(c.baseline_job_id, "job-000001");
  EXPECT_DOUBLE_EQ(c.baseline_images_per_second, 1000);
}

TEST(BaselineTest, TolerancesAreValidatedAndZeroMeansExact) {
  double lower = 0, upper = 0;
  ASSERT_TRUE(NormalizeTolerances(lower, upper).ok());
  EXPECT_EQ(lower, 0);
  EXPECT_EQ(upper, 0);
  lower = 2;
  upper = 250;  // an upper bound may exceed 100%
  ASSERT_TRUE(NormalizeTolerances(lower, upper).ok());
  EXPECT_EQ(lower, 2);
  EXPECT_EQ(upper, 250);
  for (auto [l, u, field] : std::vector<std::tuple<double, double, std::string>>{
           {-1, 5, "lower_tolerance_pct"},
           {100, 5, "lower_tolerance_pct"},
           {NAN, 5, "lower_tolerance_pct"},
           {5, -0.5, "upper_tolerance_pct"},
           {5, INFINITY, "upper_tolerance_pct"}}) {
    absl::Status status = NormalizeTolerances(l, u);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_NE(status.message().find(field), std::string::npos) << status;
  }
}

}  // namespace
}  // namespace bench
