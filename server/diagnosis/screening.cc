#include "server/diagnosis/screening.h"

#include <tuple>

namespace bench::diagnosis {

const char* ScreenCauseName(ScreenCause cause) {
  switch (cause) {
    case ScreenCause::kXidErrors: return "xid_errors";
    case ScreenCause::kEccErrors: return "ecc_errors";
    case ScreenCause::kPcieLink: return "pcie_link";
    case ScreenCause::kThermal: return "thermal";
    case ScreenCause::kPowerBrake: return "power_brake";
    case ScreenCause::kHwSlowdown: return "hw_slowdown";
    case ScreenCause::kPowerCapped: return "power_capped";
    case ScreenCause::kLowMemoryClock: return "low_memory_clock";
    case ScreenCause::kClockBelowMax: return "clock_below_max";
    case ScreenCause::kSlowAtFullClock: return "slow_at_full_clock";
  }
  return "slow_at_full_clock";
}

const char* ScreenCauseDescription(ScreenCause cause) {
  switch (cause) {
    case ScreenCause::kXidErrors: return "XID errors";
    case ScreenCause::kEccErrors: return "uncorrected ECC errors";
    case ScreenCause::kPcieLink: return "PCIe link below its maximum";
    case ScreenCause::kThermal: return "thermal";
    case ScreenCause::kPowerBrake: return "power brake";
    case ScreenCause::kHwSlowdown: return "hardware slowdown";
    case ScreenCause::kPowerCapped: return "power capped";
    case ScreenCause::kLowMemoryClock: return "low memory clock";
    case ScreenCause::kClockBelowMax: return "clock below maximum, no reason given";
    case ScreenCause::kSlowAtFullClock: return "slow at full clock";
  }
  return "slow at full clock";
}

bool GpuVerdict::operator==(const GpuVerdict& o) const {
  return std::tie(job_id, node, gpu_index, gpu_uuid, gpu_name, configuration, flagged, slow, fault,
                  failed, failure_reason, median_step_s, slow_pct, causes, evidence) ==
         std::tie(o.job_id, o.node, o.gpu_index, o.gpu_uuid, o.gpu_name, o.configuration, o.flagged,
                  o.slow, o.fault, o.failed, o.failure_reason, o.median_step_s, o.slow_pct,
                  o.causes, o.evidence);
}

bool ConfigurationSummary::operator==(const ConfigurationSummary& o) const {
  return std::tie(configuration, gpus, fleet_median_step_s, spread_mad_pct, threshold_pct,
                  flagged) == std::tie(o.configuration, o.gpus, o.fleet_median_step_s,
                                       o.spread_mad_pct, o.threshold_pct, o.flagged);
}

bool NodeVerdict::operator==(const NodeVerdict& o) const {
  return std::tie(node, gpus, ok, flagged_gpu_indexes) ==
         std::tie(o.node, o.gpus, o.ok, o.flagged_gpu_indexes);
}

bool ScreeningReport::operator==(const ScreeningReport& o) const {
  return std::tie(configurations, gpus, nodes, any_flagged) ==
         std::tie(o.configurations, o.gpus, o.nodes, o.any_flagged);
}

}  // namespace bench::diagnosis
