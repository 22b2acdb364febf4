#include "server/diagnosis/attribution.h"

#include <tuple>

namespace bench::diagnosis {

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
