// Order statistics and dispersion for repeated benchmark runs: pure functions.
#pragma once

#include <optional>
#include <utility>
#include <vector>

namespace bench {

// The median: the middle value, or the mean of the two middle values. `values` must
// not be empty.
double Median(std::vector<double> values);

// A 95% distribution-free confidence interval of the median from order statistics.
// With B ~ Binomial(n, 1/2), k is the largest integer with P(B < k) <= 0.025; the
// interval is [x_(k), x_(n+1-k)] (1-based ranks of the sorted values) and covers the
// median with probability 1 − 2·P(B < k) >= 95%. k >= 1 exists only from n = 6
// (P(B = 0) = 1/64 for n = 6, but 1/32 for n = 5), so smaller samples have none.
// Examples: n = 6 → ranks (1, 6); n = 10 → (2, 9); n = 20 → (6, 15).
std::optional<std::pair<int, int>> MedianCi95Ranks(int n);

struct Interval {
  double low = 0;
  double high = 0;
};
// The interval above for `values` (any order); nullopt for fewer than 6 values.
std::optional<Interval> MedianCi95(std::vector<double> values);

// Sample standard deviation (n − 1 in the denominator) divided by the mean; nullopt for
// fewer than 2 values or a zero mean.
std::optional<double> CoefficientOfVariation(const std::vector<double>& values);

}  // namespace bench
