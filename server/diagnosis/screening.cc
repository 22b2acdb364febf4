#include "server/diagnosis/screening.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "server/diagnosis/robust_stats.h"
#include "server/diagnosis/window.h"

namespace bench::diagnosis {
namespace {

constexpr double kMadToSigma = 1.4826;
// A reading's SM clock is below its maximum under 99 % of it (as in attribution.h).
constexpr double kBelowMaxRatio = 0.99;

template <typename T>
std::optional<T> MaxOf(const std::vector<GpuReading>& readings,
                       std::optional<T> GpuReading::*field) {
  std::optional<T> best;
  for (const GpuReading& r : readings) {
    if ((r.*field) && (!best || *(r.*field) > *best)) best = r.*field;
  }
  return best;
}

std::string Mhz(double mhz) { return absl::StrFormat("%.0f", mhz); }

// The median SM clock and its maximum over the readings `pick` accepts, as
// "SM clock 1200 of 1980 MHz"; "" when they give none.
template <typename Pick>
std::string ClockText(const std::vector<GpuReading>& readings, Pick pick) {
  std::vector<double> clocks, maxima;
  for (const GpuReading& r : readings) {
    if (!pick(r) || !r.sm_clock_mhz || !r.max_sm_clock_mhz) continue;
    clocks.push_back(*r.sm_clock_mhz);
    maxima.push_back(*r.max_sm_clock_mhz);
  }
  if (clocks.empty()) return "";
  return absl::StrFormat("SM clock %s of %s MHz", Mhz(MedianOf(clocks)), Mhz(MedianOf(maxima)));
}

// The throttle class of a reading below its maximum clock.
ScreenCause ThrottleClass(const GpuReading& r) {
  const uint64_t bits = r.throttle_reasons.value_or(0);
  if (bits & (kReasonHwThermal | kReasonSwThermal)) return ScreenCause::kThermal;
  if (bits & kReasonHwPowerBrake) return ScreenCause::kPowerBrake;
  if (bits & kReasonHwSlowdown) return ScreenCause::kHwSlowdown;
  if (bits & kReasonSwPowerCap) return ScreenCause::kPowerCapped;
  return ScreenCause::kClockBelowMax;
}

// Fault causes (whatever the speed) with their evidence.
void FaultCauses(const std::vector<GpuReading>& readings, std::vector<ScreenCause>* causes,
                 std::vector<std::string>* evidence) {
  const auto xid = MaxOf(readings, &GpuReading::xid_errors);
  if (xid && *xid > 0) {
    causes->push_back(ScreenCause::kXidErrors);
    evidence->push_back(absl::StrFormat("%d XID errors", *xid));
  }
  const auto ecc = MaxOf(readings, &GpuReading::ecc_uncorrected);
  if (ecc && *ecc > 0) {
    causes->push_back(ScreenCause::kEccErrors);
    evidence->push_back(absl::StrFormat("%d uncorrected ECC errors", *ecc));
  }
  // The highest link seen: an idle GPU lowers its link generation to save power.
  const auto gen = MaxOf(readings, &GpuReading::pcie_gen);
  const auto gen_max = MaxOf(readings, &GpuReading::pcie_gen_max);
  const auto width = MaxOf(readings, &GpuReading::pcie_width);
  const auto width_max = MaxOf(readings, &GpuReading::pcie_width_max);
  const bool gen_low = gen && gen_max && *gen < *gen_max;
  const bool width_low = width && width_max && *width < *width_max;
  if (gen_low || width_low) {
    causes->push_back(ScreenCause::kPcieLink);
    evidence->push_back(absl::StrFormat(
        "PCIe gen %s of %s, x%s of x%s", gen ? std::to_string(*gen) : "?",
        gen_max ? std::to_string(*gen_max) : "?", width ? std::to_string(*width) : "?",
        width_max ? std::to_string(*width_max) : "?"));
  }
}

// What explains a slow GPU: clock events below its maximum clock, a low memory clock.
void SlowCauses(const std::vector<GpuReading>& readings, std::vector<ScreenCause>* causes,
                std::vector<std::string>* evidence) {
  const double total = static_cast<double>(readings.size());
  std::map<ScreenCause, int> counts;  // ordered: ties by enum order below
  for (const GpuReading& r : readings) {
    if (ClockBelowMax(r, kBelowMaxRatio)) ++counts[ThrottleClass(r)];
  }
  std::vector<std::pair<int, ScreenCause>> seen;
  for (const auto& [cause, count] : counts) {
    if (total > 0 && count >= kCauseReadingShare * total) seen.emplace_back(count, cause);
  }
  std::stable_sort(seen.begin(), seen.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [count, cause] : seen) {
    causes->push_back(cause);
    const std::string clock = ClockText(readings, [cause = cause](const GpuReading& r) {
      return ClockBelowMax(r, kBelowMaxRatio) && ThrottleClass(r) == cause;
    });
    evidence->push_back(absl::StrFormat("%s in %.0f %% of readings%s",
                                        ScreenCauseDescription(cause), 100 * count / total,
                                        clock.empty() ? "" : ", " + clock));
  }
  int low_memory = 0;
  std::vector<double> memory, memory_max;
  for (const GpuReading& r : readings) {
    if (!r.memory_clock_mhz || !r.max_memory_clock_mhz || *r.max_memory_clock_mhz <= 0) continue;
    memory.push_back(*r.memory_clock_mhz);
    memory_max.push_back(*r.max_memory_clock_mhz);
    if (*r.memory_clock_mhz < kLowMemoryClockRatio * *r.max_memory_clock_mhz) ++low_memory;
  }
  if (total > 0 && low_memory > 0 && low_memory >= kCauseReadingShare * total) {
    causes->push_back(ScreenCause::kLowMemoryClock);
    evidence->push_back(absl::StrFormat("memory clock %s of %s MHz in %.0f %% of readings",
                                        Mhz(MedianOf(memory)), Mhz(MedianOf(memory_max)),
                                        100 * low_memory / total));
  }
  if (causes->empty()) {
    causes->push_back(ScreenCause::kSlowAtFullClock);
    const std::string clock = ClockText(readings, [](const GpuReading&) { return true; });
    evidence->push_back(clock.empty() ? "no clock events; no clock readings"
                                      : "no clock events; " + clock);
  }
}

}  // namespace

ScreeningReport Screen(const std::vector<ScreenedGpu>& gpus) {
  ScreeningReport report;
  // Verdicts in output order, whatever the input order.
  std::vector<const ScreenedGpu*> order;
  for (const ScreenedGpu& g : gpus) order.push_back(&g);
  std::stable_sort(order.begin(), order.end(), [](const ScreenedGpu* a, const ScreenedGpu* b) {
    return std::tie(a->node, a->gpu_index, a->job_id) < std::tie(b->node, b->gpu_index, b->job_id);
  });
  std::vector<const std::vector<GpuReading>*> readings;
  for (const ScreenedGpu* g : order) {
    GpuVerdict v;
    v.job_id = g->job_id;
    v.node = g->node;
    v.gpu_index = g->gpu_index;
    v.gpu_uuid = g->gpu_uuid;
    v.gpu_name = g->gpu_name;
    v.configuration = g->configuration;
    std::vector<double> steps;
    for (double s : g->step_times_s) {
      if (std::isfinite(s) && s > 0) steps.push_back(s);
    }
    if (!g->succeeded) {
      v.failed = true;
      v.failure_reason = g->failure_reason.empty() ? "the job failed" : g->failure_reason;
    } else if (steps.empty()) {
      v.failed = true;
      v.failure_reason = "no measured iteration";
    } else {
      v.median_step_s = MedianOf(std::move(steps));
    }
    // Every figure taken from the readings (maxima, shares, medians) ignores their order.
    readings.push_back(&g->readings);
    report.gpus.push_back(std::move(v));
  }

  // Per configuration: the fleet median and the threshold above the natural spread.
  std::map<ConfigurationKey, std::vector<size_t>> by_configuration;
  for (size_t i = 0; i < report.gpus.size(); ++i) {
    by_configuration[report.gpus[i].configuration].push_back(i);
  }
  for (const auto& [key, members] : by_configuration) {
    ConfigurationSummary summary;
    summary.configuration = key;
    std::vector<double> medians;
    for (size_t i : members) {
      if (report.gpus[i].median_step_s) medians.push_back(*report.gpus[i].median_step_s);
    }
    summary.gpus = static_cast<int>(medians.size());
    summary.fleet_median_step_s = MedianOf(medians);
    std::vector<double> normalised;
    for (double m : medians) normalised.push_back(m / summary.fleet_median_step_s - 1);
    summary.spread_mad_pct = 100 * kMadToSigma * MadOf(normalised);
    summary.threshold_pct = std::max(kSlowFloorPct, kSlowMads * summary.spread_mad_pct);
    for (size_t i : members) {
      GpuVerdict& v = report.gpus[i];
      if (v.median_step_s && summary.fleet_median_step_s > 0) {
        v.slow_pct = 100 * (*v.median_step_s / summary.fleet_median_step_s - 1);
        v.slow = v.slow_pct > summary.threshold_pct;
      }
      std::vector<std::string> evidence;
      FaultCauses(*readings[i], &v.causes, &evidence);
      v.fault = !v.causes.empty();
      if (v.slow) SlowCauses(*readings[i], &v.causes, &evidence);
      if (v.failed) evidence.insert(evidence.begin(), v.failure_reason);
      v.flagged = v.slow || v.fault || v.failed;
      v.evidence = absl::StrJoin(evidence, "; ");
      if (v.flagged) ++summary.flagged;
    }
    report.configurations.push_back(std::move(summary));
  }

  std::map<std::string, NodeVerdict> nodes;
  for (const GpuVerdict& v : report.gpus) {
    NodeVerdict& node = nodes[v.node];
    node.node = v.node;
    ++node.gpus;
    if (v.flagged) {
      node.ok = false;
      node.flagged_gpu_indexes.push_back(v.gpu_index);
      report.any_flagged = true;
    }
  }
  for (auto& [name, node] : nodes) {
    std::sort(node.flagged_gpu_indexes.begin(), node.flagged_gpu_indexes.end());
    report.nodes.push_back(std::move(node));
  }
  return report;
}

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
