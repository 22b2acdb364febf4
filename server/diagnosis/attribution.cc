#include "server/diagnosis/attribution.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "server/diagnosis/robust_stats.h"
#include "server/diagnosis/window.h"

namespace bench::diagnosis {
namespace {

constexpr size_t kCauseCount = static_cast<size_t>(Cause::kUnexplained) + 1;

// The clock-event cause of one reading taken while the SM clock was below its maximum, in
// the documented order; kClockBelowMax when it gave no reason.
Cause ReadingCause(const GpuReading& reading) {
  const uint64_t bits = reading.throttle_reasons.value_or(0);
  if (bits & kReasonHwThermal) return Cause::kHwThermal;
  if (bits & kReasonSwThermal) return Cause::kSwThermal;
  if (bits & kReasonHwPowerBrake) return Cause::kHwPowerBrake;
  if (bits & kReasonHwSlowdown) return Cause::kHwSlowdown;
  if (bits & kReasonSwPowerCap) return Cause::kPowerCap;
  return Cause::kClockBelowMax;
}

bool CappedAtFullClock(const GpuReading& reading) {
  return (reading.throttle_reasons.value_or(0) & kReasonSwPowerCap) != 0 && reading.sm_clock_mhz &&
         reading.max_sm_clock_mhz && !ClockBelowMax(reading, kClockBelowMaxRatio);
}

// The readings of a rank's GPU that overlap its iteration (none without an end time).
std::vector<const GpuReading*> IterationReadings(const PreparedRank& rank,
                                                 const IterationTiming& it) {
  if (it.end_unix_ns == 0 || rank.readings.empty()) return {};
  const int64_t start = it.end_unix_ns - static_cast<int64_t>(it.step_time_s * 1e9);
  return ReadingsOverlapping(rank.readings, start, it.end_unix_ns, kNearestReadingNs);
}

}  // namespace

ExcessReport AttributeExcess(const JobInputs& job) {
  ExcessReport report;
  const std::vector<PreparedRank> ranks = PrepareRanks(job);
  const std::vector<int> window = CommonIterations(ranks);
  if (ranks.empty() || window.empty()) {
    report.reason = ranks.empty() ? "no rank reported an iteration"
                                  : "no measured iteration common to every rank";
    return report;
  }
  const size_t n = window.size();
  const size_t r_count = ranks.size();
  const bool multi_rank = r_count > 1;
  // rows[r][i]: rank r's iteration window[i].
  std::vector<std::vector<const IterationTiming*>> rows(r_count,
                                                        std::vector<const IterationTiming*>(n));
  for (size_t r = 0; r < r_count; ++r) {
    for (size_t i = 0; i < n; ++i) rows[r][i] = FindIteration(ranks[r], window[i]);
  }

  // The job's step per iteration, the ideal step (Google's goodput rule).
  std::vector<double> step(n), allreduce(n), column(r_count);
  bool any_allreduce = false;
  for (size_t i = 0; i < n; ++i) {
    for (size_t r = 0; r < r_count; ++r) column[r] = rows[r][i]->step_time_s;
    step[i] = MedianOf(column);
    for (size_t r = 0; r < r_count; ++r) {
      const auto& wait = rows[r][i]->allreduce_wait_time_s;
      const bool usable = wait && std::isfinite(*wait) && *wait >= 0;
      any_allreduce = any_allreduce || usable;
      column[r] = usable ? *wait : 0;
    }
    allreduce[i] = MedianOf(column);
  }
  report.applicable = true;
  report.iterations = static_cast<int>(n);
  report.median_step_s = MedianOf(step);
  report.mad_step_s = MadOf(step);
  const double cutoff = report.median_step_s + 3 * report.mad_step_s;
  double ideal_sum = 0;
  int ideal_count = 0;
  for (double s : step) {
    report.total_step_s += s;
    if (s <= cutoff) {
      ideal_sum += s;
      ++ideal_count;
    }
  }
  report.ideal_step_s = ideal_count > 0 ? ideal_sum / ideal_count : report.median_step_s;

  // Typical values: each rank's median data time, the job's median compute, the median
  // all-reduce wait.
  std::vector<double> typical_data(r_count);
  std::vector<double> all_compute;
  all_compute.reserve(r_count * n);
  for (size_t r = 0; r < r_count; ++r) {
    std::vector<double> data(n);
    for (size_t i = 0; i < n; ++i) {
      data[i] = rows[r][i]->data_time_s;
      all_compute.push_back(rows[r][i]->ComputeSeconds());
    }
    typical_data[r] = MedianOf(std::move(data));
  }
  const double typical_compute = MedianOf(std::move(all_compute));
  const double typical_allreduce = any_allreduce ? MedianOf(allreduce) : 0;

  std::array<double, kCauseCount> by_cause{};
  std::map<std::pair<size_t, Cause>, double> by_rank;  // (rank position, cause): ordered
  auto blame = [&](size_t r, Cause cause, double seconds) {
    if (seconds <= 0) return;
    by_cause[static_cast<size_t>(cause)] += seconds;
    if (r < r_count) by_rank[{r, cause}] += seconds;
  };
  std::vector<int> capped_iterations(r_count, 0);

  for (size_t i = 0; i < n; ++i) {
    // Power caps at full clock: noted, never blamed.
    for (size_t r = 0; r < r_count; ++r) {
      for (const GpuReading* reading : IterationReadings(ranks[r], *rows[r][i])) {
        if (CappedAtFullClock(*reading)) {
          ++capped_iterations[r];
          break;
        }
      }
    }
    double left = step[i] - report.ideal_step_s;
    if (left <= 0) continue;
    report.excess_s += left;

    // 1. Data wait: the rank that waited longest above its typical data time.
    size_t data_rank = 0;
    double data_excess = 0;
    for (size_t r = 0; r < r_count; ++r) {
      const double excess = rows[r][i]->data_time_s - typical_data[r];
      if (excess > data_excess) {
        data_excess = excess;
        data_rank = r;
      }
    }
    const double data_part = std::min(left, data_excess);
    blame(data_rank, Cause::kDataWait, data_part);
    left -= data_part;

    // 2. The critical rank's compute above the job's typical compute, by its telemetry.
    size_t critical = 0;
    for (size_t r = 1; r < r_count; ++r) {
      if (rows[r][i]->ComputeSeconds() > rows[critical][i]->ComputeSeconds()) critical = r;
    }
    const double compute_part =
        std::min(left, std::max(0.0, rows[critical][i]->ComputeSeconds() - typical_compute));
    if (compute_part > 0) {
      std::array<int, kCauseCount> counts{};
      int below = 0;
      for (const GpuReading* reading : IterationReadings(ranks[critical], *rows[critical][i])) {
        if (!ClockBelowMax(*reading, kClockBelowMaxRatio)) continue;
        ++counts[static_cast<size_t>(ReadingCause(*reading))];
        ++below;
      }
      if (below > 0) {
        for (size_t c = 0; c < kCauseCount; ++c) {
          if (counts[c] > 0) {
            blame(critical, static_cast<Cause>(c), compute_part * counts[c] / below);
          }
        }
      } else if (multi_rank) {
        blame(critical, Cause::kWaitingForRank, compute_part);
      } else {
        blame(r_count, Cause::kUnexplained, compute_part);
      }
      left -= compute_part;
    }

    // 3. All-reduce wait above typical: communication.
    if (multi_rank && any_allreduce) {
      const double comm_part = std::min(left, std::max(0.0, allreduce[i] - typical_allreduce));
      blame(r_count, Cause::kWaitingForRank, comm_part);
      left -= comm_part;
    }

    // 4. The rest.
    blame(r_count, Cause::kUnexplained, left);
  }

  if (report.total_step_s > 0) report.excess_fraction = report.excess_s / report.total_step_s;
  const double denominator = report.excess_s > 0 ? report.excess_s : 1;
  for (size_t c = 0; c < kCauseCount; ++c) {
    if (by_cause[c] <= 0) continue;
    report.by_cause.push_back({static_cast<Cause>(c), by_cause[c], by_cause[c] / denominator});
  }
  for (const auto& [key, seconds] : by_rank) {
    const PreparedRank& rank = ranks[key.first];
    report.by_rank.push_back({rank.rank, rank.node, rank.gpu_index, rank.gpu_uuid, key.second,
                              seconds, seconds / denominator});
  }
  for (size_t r = 0; r < r_count; ++r) {
    if (capped_iterations[r] == 0) continue;
    report.capped_without_cost.push_back({ranks[r].rank, ranks[r].node, ranks[r].gpu_index,
                                          ranks[r].gpu_uuid, capped_iterations[r]});
  }
  return report;
}

const char* CauseName(Cause cause) {
  switch (cause) {
    case Cause::kDataWait: return "data_wait";
    case Cause::kHwThermal: return "hw_thermal";
    case Cause::kSwThermal: return "sw_thermal";
    case Cause::kHwPowerBrake: return "hw_power_brake";
    case Cause::kHwSlowdown: return "hw_slowdown";
    case Cause::kPowerCap: return "power_cap";
    case Cause::kClockBelowMax: return "clock_below_max";
    case Cause::kWaitingForRank: return "waiting_for_rank";
    case Cause::kUnexplained: return "unexplained";
  }
  return "unexplained";
}

const char* CauseDescription(Cause cause) {
  switch (cause) {
    case Cause::kDataWait: return "data wait";
    case Cause::kHwThermal: return "hardware thermal";
    case Cause::kSwThermal: return "software thermal";
    case Cause::kHwPowerBrake: return "power brake";
    case Cause::kHwSlowdown: return "hardware slowdown";
    case Cause::kPowerCap: return "power cap";
    case Cause::kClockBelowMax: return "clock below maximum, no reason given";
    case Cause::kWaitingForRank: return "waiting for another rank";
    case Cause::kUnexplained: return "unexplained";
  }
  return "unexplained";
}

bool IsThrottleCause(Cause cause) {
  switch (cause) {
    case Cause::kHwThermal:
    case Cause::kSwThermal:
    case Cause::kHwPowerBrake:
    case Cause::kHwSlowdown:
    case Cause::kPowerCap:
    case Cause::kClockBelowMax: return true;
    default: return false;
  }
}

bool CauseTime::operator==(const CauseTime& o) const {
  return std::tie(cause, seconds, fraction) == std::tie(o.cause, o.seconds, o.fraction);
}

bool RankCauseTime::operator==(const RankCauseTime& o) const {
  return std::tie(rank, node, gpu_index, gpu_uuid, cause, seconds, fraction) ==
         std::tie(o.rank, o.node, o.gpu_index, o.gpu_uuid, o.cause, o.seconds, o.fraction);
}

bool CappedWithoutCost::operator==(const CappedWithoutCost& o) const {
  return std::tie(rank, node, gpu_index, gpu_uuid, iterations) ==
         std::tie(o.rank, o.node, o.gpu_index, o.gpu_uuid, o.iterations);
}

double ExcessReport::SecondsFor(Cause cause) const {
  for (const CauseTime& c : by_cause) {
    if (c.cause == cause) return c.seconds;
  }
  return 0;
}

double ExcessReport::ThrottleSeconds() const {
  double total = 0;
  for (const CauseTime& c : by_cause) {
    if (IsThrottleCause(c.cause)) total += c.seconds;
  }
  return total;
}

bool ExcessReport::operator==(const ExcessReport& o) const {
  return std::tie(applicable, reason, ideal_rule, iterations, median_step_s, mad_step_s,
                  ideal_step_s, total_step_s, excess_s, excess_fraction, by_cause, by_rank,
                  capped_without_cost) ==
         std::tie(o.applicable, o.reason, o.ideal_rule, o.iterations, o.median_step_s, o.mad_step_s,
                  o.ideal_step_s, o.total_step_s, o.excess_s, o.excess_fraction, o.by_cause,
                  o.by_rank, o.capped_without_cost);
}

}  // namespace bench::diagnosis
