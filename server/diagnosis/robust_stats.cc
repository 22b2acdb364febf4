#include "server/diagnosis/robust_stats.h"

#include <algorithm>
#include <cstddef>

namespace bench::diagnosis {

double MedianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

double MadOf(const std::vector<double>& values) {
  if (values.empty()) return 0;
  const double median = MedianOf(values);
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) deviations.push_back(v > median ? v - median : median - v);
  return MedianOf(std::move(deviations));
}

double TheilSenSlope(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  std::vector<double> bx, by;
  if (n > static_cast<size_t>(kTheilSenMaxPoints)) {
    const size_t block = (n + kTheilSenMaxPoints - 1) / kTheilSenMaxPoints;
    for (size_t start = 0; start < n; start += block) {
      const size_t end = std::min(n, start + block);
      bx.push_back(MedianOf(std::vector<double>(x.begin() + start, x.begin() + end)));
      by.push_back(MedianOf(std::vector<double>(y.begin() + start, y.begin() + end)));
    }
  } else {
    bx.assign(x.begin(), x.begin() + n);
    by.assign(y.begin(), y.begin() + n);
  }
  std::vector<double> slopes;
  slopes.reserve(bx.size() * (bx.size() - (bx.empty() ? 0 : 1)) / 2);
  for (size_t i = 0; i < bx.size(); ++i) {
    for (size_t j = i + 1; j < bx.size(); ++j) {
      if (bx[j] != bx[i]) slopes.push_back((by[j] - by[i]) / (bx[j] - bx[i]));
    }
  }
  return MedianOf(std::move(slopes));
}

}  // namespace bench::diagnosis
