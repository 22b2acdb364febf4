#include "server/diagnosis/stragglers.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <tuple>
#include <utility>

#include "server/diagnosis/robust_stats.h"
#include "server/diagnosis/window.h"

namespace bench::diagnosis {
namespace {

constexpr double kMadToSigma = 1.4826;
// Noise-free series (identical ranks) still split at a real shift.
constexpr double kSigmaFloor = 1e-6;

// The rank's noise: 1.4826 * MAD of successive differences / sqrt(2).
double NoiseSigma(const std::vector<double>& x) {
  if (x.size() < 3) return 0;
  std::vector<double> diffs;
  diffs.reserve(x.size() - 1);
  for (size_t i = 1; i < x.size(); ++i) diffs.push_back(x[i] - x[i - 1]);
  // MAD around the median difference (about 0): the spread of the differences.
  return kMadToSigma * MadOf(diffs) / std::sqrt(2.0);
}

// Binary segmentation of x[begin, end) by mean shifts: the split that minimises the two
// pieces' squared error (equivalently maximises |mean1 - mean2| * sqrt(n1 n2 / n)) is taken
// when that statistic, over sigma, reaches kShiftSigmas and both pieces have at least
// kMinPhaseIterations points. Appends the segment boundaries (the end of each segment).
void Segment(const std::vector<double>& prefix, size_t begin, size_t end, double sigma,
             std::vector<size_t>* ends) {
  const size_t n = end - begin;
  const size_t min_len = static_cast<size_t>(kMinPhaseIterations);
  if (n < 2 * min_len) {
    ends->push_back(end);
    return;
  }
  const double total = prefix[end] - prefix[begin];
  double best = -1;
  size_t best_k = 0;
  for (size_t k = begin + min_len; k + min_len <= end; ++k) {
    const double n1 = static_cast<double>(k - begin);
    const double n2 = static_cast<double>(end - k);
    const double s1 = prefix[k] - prefix[begin];
    const double diff = s1 / n1 - (total - s1) / n2;
    const double statistic = std::fabs(diff) * std::sqrt(n1 * n2 / static_cast<double>(n));
    if (statistic > best) {  // strict: the first of equal splits
      best = statistic;
      best_k = k;
    }
  }
  if (best / sigma < kShiftSigmas) {
    ends->push_back(end);
    return;
  }
  Segment(prefix, begin, best_k, sigma, ends);
  Segment(prefix, best_k, end, sigma, ends);
}

// The slow phases of one rank's ratio series, as [first, last] positions in the window.
std::vector<std::pair<size_t, size_t>> SlowRanges(const std::vector<double>& ratio) {
  std::vector<std::pair<size_t, size_t>> ranges;
  if (ratio.empty()) return ranges;
  const double sigma = NoiseSigma(ratio);
  std::vector<double> prefix(ratio.size() + 1, 0);
  for (size_t i = 0; i < ratio.size(); ++i) prefix[i + 1] = prefix[i] + ratio[i];
  std::vector<size_t> ends;
  Segment(prefix, 0, ratio.size(), std::max(sigma, kSigmaFloor), &ends);
  size_t begin = 0;
  for (size_t end : ends) {
    const double n = static_cast<double>(end - begin);
    const double excess = (prefix[end] - prefix[begin]) / n - 1;
    const double bound = std::max(kMinExcess, kNoiseSigmas * sigma / std::sqrt(n));
    if (excess >= bound) {
      if (!ranges.empty() && ranges.back().second + 1 == begin) {
        ranges.back().second = end - 1;  // adjacent slow segments: one phase
      } else {
        ranges.emplace_back(begin, end - 1);
      }
    }
    begin = end;
  }
  return ranges;
}

}  // namespace

StragglerReport FindStragglers(const JobInputs& job) {
  StragglerReport report;
  const std::vector<PreparedRank> ranks = PrepareRanks(job);
  report.ranks = static_cast<int>(ranks.size());
  if (ranks.size() < 2) {
    report.reason = "a job of one rank has no straggler";
    return report;
  }
  const std::vector<int> window = CommonIterations(ranks);
  if (window.empty()) {
    report.reason = "no measured iteration common to every rank";
    return report;
  }
  const size_t n = window.size();
  const size_t r_count = ranks.size();
  // compute[r][i], and per iteration the median compute and median step.
  std::vector<std::vector<double>> compute(r_count, std::vector<double>(n));
  std::vector<double> median_compute(n), median_step(n);
  std::vector<double> column(r_count), steps(r_count);
  for (size_t i = 0; i < n; ++i) {
    for (size_t r = 0; r < r_count; ++r) {
      const IterationTiming* it = FindIteration(ranks[r], window[i]);
      compute[r][i] = it->ComputeSeconds();
      column[r] = compute[r][i];
      steps[r] = it->step_time_s;
    }
    median_compute[i] = MedianOf(column);
    median_step[i] = MedianOf(steps);
  }

  report.applicable = true;
  report.iterations = static_cast<int>(n);
  report.first_iteration = window.front();
  report.last_iteration = window.back();
  for (double s : median_step) report.window_step_time_s += s;

  // Per iteration: the largest loss to a rank slow there (-1: no rank slow there).
  std::vector<double> iteration_loss(n, -1);
  std::vector<double> ratio(n);
  for (size_t r = 0; r < r_count; ++r) {
    for (size_t i = 0; i < n; ++i) {
      ratio[i] = median_compute[i] > 0 ? compute[r][i] / median_compute[i] : 1.0;
    }
    const auto ranges = SlowRanges(ratio);
    if (ranges.empty()) continue;
    Straggler straggler;
    straggler.rank = ranks[r].rank;
    straggler.node = ranks[r].node;
    straggler.gpu_index = ranks[r].gpu_index;
    straggler.gpu_uuid = ranks[r].gpu_uuid;
    double excess_sum = 0;
    size_t excess_count = 0;
    for (const auto& [first, last] : ranges) {
      SlowPhase phase;
      phase.first_iteration = window[first];
      phase.last_iteration = window[last];
      double phase_excess = 0;
      for (size_t i = first; i <= last; ++i) {
        const double loss = compute[r][i] - median_compute[i];
        phase.lost_s += loss;
        phase_excess += ratio[i] - 1;
        iteration_loss[i] = std::max(iteration_loss[i], std::max(0.0, loss));
      }
      const size_t length = last - first + 1;
      phase.mean_excess = phase_excess / static_cast<double>(length);
      excess_sum += phase_excess;
      excess_count += length;
      straggler.lost_s += phase.lost_s;
      straggler.phases.push_back(phase);
    }
    straggler.mean_excess = excess_sum / static_cast<double>(excess_count);
    report.stragglers.push_back(std::move(straggler));
  }
  for (size_t i = 0; i < n; ++i) {
    if (iteration_loss[i] >= 0) {
      report.lost_s += iteration_loss[i];
    } else {
      double slowest = median_compute[i];
      for (size_t r = 0; r < r_count; ++r) slowest = std::max(slowest, compute[r][i]);
      report.jitter_s += slowest - median_compute[i];
    }
  }
  if (report.window_step_time_s > 0) {
    report.lost_fraction = report.lost_s / report.window_step_time_s;
  }
  return report;
}

bool SlowPhase::operator==(const SlowPhase& o) const {
  return std::tie(first_iteration, last_iteration, mean_excess, lost_s) ==
         std::tie(o.first_iteration, o.last_iteration, o.mean_excess, o.lost_s);
}

bool Straggler::operator==(const Straggler& o) const {
  return std::tie(rank, node, gpu_index, gpu_uuid, phases, mean_excess, lost_s) ==
         std::tie(o.rank, o.node, o.gpu_index, o.gpu_uuid, o.phases, o.mean_excess, o.lost_s);
}

bool StragglerReport::operator==(const StragglerReport& o) const {
  return std::tie(applicable, reason, ranks, iterations, first_iteration, last_iteration,
                  stragglers, lost_s, lost_fraction, window_step_time_s,
                  jitter_s) == std::tie(o.applicable, o.reason, o.ranks, o.iterations,
                                        o.first_iteration, o.last_iteration, o.stragglers, o.lost_s,
                                        o.lost_fraction, o.window_step_time_s, o.jitter_s);
}

}  // namespace bench::diagnosis
