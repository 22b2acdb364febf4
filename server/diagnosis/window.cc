#include "server/diagnosis/window.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace bench::diagnosis {
namespace {

bool ValidIteration(const IterationTiming& it) {
  return std::isfinite(it.step_time_s) && it.step_time_s > 0;
}

}  // namespace

std::vector<PreparedRank> PrepareRanks(const JobInputs& job) {
  std::vector<const RankInputs*> order;
  order.reserve(job.ranks.size());
  for (const RankInputs& r : job.ranks) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(),
                   [](const RankInputs* a, const RankInputs* b) { return a->rank < b->rank; });
  std::vector<PreparedRank> out;
  for (const RankInputs* r : order) {
    if (!out.empty() && out.back().rank == r->rank) continue;  // a duplicate rank
    PreparedRank p;
    p.rank = r->rank;
    p.node = r->node;
    p.gpu_index = r->gpu_index;
    p.gpu_uuid = r->gpu_uuid;
    for (const IterationTiming& it : r->iterations) {
      if (it.warmup || !ValidIteration(it)) continue;
      IterationTiming copy = it;
      if (!std::isfinite(copy.data_time_s) || copy.data_time_s < 0) copy.data_time_s = 0;
      p.measured.push_back(copy);
    }
    std::stable_sort(p.measured.begin(), p.measured.end(),
                     [](const IterationTiming& a, const IterationTiming& b) {
                       return a.iteration < b.iteration;
                     });
    p.measured.erase(std::unique(p.measured.begin(), p.measured.end(),
                                 [](const IterationTiming& a, const IterationTiming& b) {
                                   return a.iteration == b.iteration;
                                 }),
                     p.measured.end());
    p.readings = r->readings;
    std::stable_sort(
        p.readings.begin(), p.readings.end(),
        [](const GpuReading& a, const GpuReading& b) { return a.time_unix_ns < b.time_unix_ns; });
    p.readings.erase(std::unique(p.readings.begin(), p.readings.end(),
                                 [](const GpuReading& a, const GpuReading& b) {
                                   return a.time_unix_ns == b.time_unix_ns;
                                 }),
                     p.readings.end());
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<int> CommonIterations(const std::vector<PreparedRank>& ranks) {
  if (ranks.empty()) return {};
  std::vector<int> common;
  for (const IterationTiming& it : ranks.front().measured) common.push_back(it.iteration);
  for (size_t i = 1; i < ranks.size(); ++i) {
    std::vector<int> mine, both;
    for (const IterationTiming& it : ranks[i].measured) mine.push_back(it.iteration);
    std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(),
                          std::back_inserter(both));
    common.swap(both);
  }
  return common;
}

const IterationTiming* FindIteration(const PreparedRank& rank, int iteration) {
  auto it =
      std::lower_bound(rank.measured.begin(), rank.measured.end(), iteration,
                       [](const IterationTiming& a, int value) { return a.iteration < value; });
  if (it == rank.measured.end() || it->iteration != iteration) return nullptr;
  return &*it;
}

std::vector<const GpuReading*> ReadingsOverlapping(const std::vector<GpuReading>& readings,
                                                   int64_t from_ns, int64_t to_ns,
                                                   int64_t nearest_ns) {
  std::vector<const GpuReading*> out;
  auto first =
      std::lower_bound(readings.begin(), readings.end(), from_ns,
                       [](const GpuReading& r, int64_t value) { return r.time_unix_ns < value; });
  for (auto it = first; it != readings.end() && it->time_unix_ns <= to_ns; ++it) {
    out.push_back(&*it);
  }
  if (!out.empty()) return out;
  // None inside: the nearest on either side, if close enough (the earlier on a tie).
  const GpuReading* best = nullptr;
  int64_t best_distance = 0;
  if (first != readings.begin()) {
    const GpuReading& before = *(first - 1);
    best = &before;
    best_distance = from_ns - before.time_unix_ns;
  }
  if (first != readings.end()) {
    const int64_t distance = first->time_unix_ns - to_ns;
    if (best == nullptr || distance < best_distance) {
      best = &*first;
      best_distance = distance;
    }
  }
  if (best != nullptr && best_distance <= nearest_ns) out.push_back(best);
  return out;
}

bool ClockBelowMax(const GpuReading& reading, double ratio) {
  return reading.sm_clock_mhz && reading.max_sm_clock_mhz && *reading.max_sm_clock_mhz > 0 &&
         *reading.sm_clock_mhz < ratio * *reading.max_sm_clock_mhz;
}

}  // namespace bench::diagnosis
