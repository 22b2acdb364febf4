// Latency histogram of the load generators (tests/bench/load_generator.cc, fleet_sim):
// values in microseconds, 1 % wide logarithmic buckets (1 µs .. ~1000 s), quantiles at most
// 1 % high. Not thread-safe; merge per-thread histograms. Header-only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace bench::loadgen {

class Histogram {
 public:
  Histogram() : counts_(kBuckets, 0) {}
  void Add(double us) {
    int b = us <= 1 ? 0 : static_cast<int>(std::log(us) / kLogStep) + 1;
    ++counts_[std::min(b, kBuckets - 1)];
    ++n_;
    max_ = std::max(max_, us);
  }
  void Merge(const Histogram& other) {
    for (int i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
    n_ += other.n_;
    max_ = std::max(max_, other.max_);
  }
  int64_t count() const { return n_; }
  double max() const { return max_; }
  // Upper edge of the bucket holding the q-quantile (at most 1% high), in µs.
  double Quantile(double q) const {
    if (n_ == 0) return 0;
    int64_t rank = static_cast<int64_t>(std::ceil(q * static_cast<double>(n_)));
    int64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(max_, std::exp(i * kLogStep));
    }
    return max_;
  }

 private:
  static constexpr int kBuckets = 2200;
  static constexpr double kLogStep = 0.00995033;  // ln(1.01)
  std::vector<int64_t> counts_;
  int64_t n_ = 0;
  double max_ = 0;
};

}  // namespace bench::loadgen
