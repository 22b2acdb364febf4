#include "server/results/statistics.h"

#include <algorithm>
#include <cmath>

namespace bench {

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

std::optional<std::pair<int, int>> MedianCi95Ranks(int n) {
  if (n < 1) return std::nullopt;
  // P(B = i) = C(n, i) / 2^n, in logs so that large n neither overflows nor underflows.
  const double log_half_n = n * std::log(0.5);
  const double log_n_factorial = std::lgamma(n + 1.0);
  double below = 0;  // P(B < k), for the k under consideration
  int k = 0;
  for (int i = 0; i <= n / 2; ++i) {
    double p = std::exp(log_n_factorial - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) +
                        log_half_n);
    // Taking k = i + 1 makes P(B < k) = below + p.
    if (below + p > 0.025 * (1 + 1e-12)) break;
    below += p;
    k = i + 1;
  }
  if (k < 1) return std::nullopt;
  return std::make_pair(k, n + 1 - k);
}

std::optional<Interval> MedianCi95(std::vector<double> values) {
  std::optional<std::pair<int, int>> ranks = MedianCi95Ranks(static_cast<int>(values.size()));
  if (!ranks) return std::nullopt;
  std::sort(values.begin(), values.end());
  return Interval{values[ranks->first - 1], values[ranks->second - 1]};
}

std::optional<double> CoefficientOfVariation(const std::vector<double>& values) {
  if (values.size() < 2) return std::nullopt;
  double mean = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(values.size());
  if (mean == 0) return std::nullopt;
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  double stddev = std::sqrt(squares / static_cast<double>(values.size() - 1));
  return stddev / std::abs(mean);
}

}  // namespace bench
