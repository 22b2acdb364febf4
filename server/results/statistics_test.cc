#include "server/results/statistics.h"

#include <cmath>

#include <gtest/gtest.h>

namespace bench {
namespace {

TEST(StatisticsTest, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({7}), 7);
}

// Hand-computed from the binomial distribution with p = 1/2:
//   n = 5:  P(B = 0) = 1/32 = 0.03125 > 0.025 → no interval.
//   n = 6:  P(B < 1) = 1/64 = 0.0156; P(B < 2) = 7/64 = 0.109 → k = 1: (1, 6).
//   n = 10: P(B < 2) = 11/1024 = 0.0107; P(B < 3) = 56/1024 = 0.0547 → k = 2: (2, 9).
//   n = 20: P(B < 6) = 21700/1048576 = 0.0207; P(B < 7) = 60460/1048576 = 0.0577
//           → k = 6: (6, 15).
TEST(StatisticsTest, MedianCiRanksMatchTheBinomialTable) {
  EXPECT_FALSE(MedianCi95Ranks(0).has_value());
  EXPECT_FALSE(MedianCi95Ranks(1).has_value());
  EXPECT_FALSE(MedianCi95Ranks(5).has_value());
  EXPECT_EQ(MedianCi95Ranks(6), std::make_pair(1, 6));
  EXPECT_EQ(MedianCi95Ranks(10), std::make_pair(2, 9));
  EXPECT_EQ(MedianCi95Ranks(20), std::make_pair(6, 15));
  // Large n stays finite (no 2^-n underflow): close to n/2 ± 1.96·sqrt(n)/2.
  auto large = MedianCi95Ranks(10000);
  ASSERT_TRUE(large.has_value());
  EXPECT_NEAR(large->first, 5000 - 98, 2);
  EXPECT_EQ(large->second, 10001 - large->first);
}

TEST(StatisticsTest, MedianCiPicksTheOrderStatistics) {
  EXPECT_FALSE(MedianCi95({1, 2, 3, 4, 5}).has_value());
  auto six = MedianCi95({60, 10, 40, 20, 50, 30});
  ASSERT_TRUE(six.has_value());
  EXPECT_DOUBLE_EQ(six->low, 10);
  EXPECT_DOUBLE_EQ(six->high, 60);
  auto ten = MedianCi95({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  ASSERT_TRUE(ten.has_value());
  EXPECT_DOUBLE_EQ(ten->low, 2);
  EXPECT_DOUBLE_EQ(ten->high, 9);
}

// {2, 4, 4, 4, 5, 5, 7, 9}: mean 5, squared deviations sum to 32, sample variance
// 32/7, stddev 2.13809, cv 0.427618.
TEST(StatisticsTest, CoefficientOfVariationUsesTheSampleStddev) {
  auto cv = CoefficientOfVariation({2, 4, 4, 4, 5, 5, 7, 9});
  ASSERT_TRUE(cv.has_value());
  EXPECT_NEAR(*cv, std::sqrt(32.0 / 7.0) / 5.0, 1e-12);
  EXPECT_NEAR(*cv, 0.427618, 1e-6);
  auto two = CoefficientOfVariation({100, 110});  // stddev 7.0711, mean 105
  ASSERT_TRUE(two.has_value());
  EXPECT_NEAR(*two, 7.0710678 / 105, 1e-7);
  EXPECT_FALSE(CoefficientOfVariation({5}).has_value());
  EXPECT_FALSE(CoefficientOfVariation({}).has_value());
  EXPECT_FALSE(CoefficientOfVariation({0, 0}).has_value());
  EXPECT_DOUBLE_EQ(*CoefficientOfVariation({3, 3, 3}), 0);
}

}  // namespace
}  // namespace bench
