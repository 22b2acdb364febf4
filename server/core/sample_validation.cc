#include "server/core/sample_validation.h"

#include <cmath>

namespace bench {
namespace {

bool TimeOk(double seconds) {
  return std::isfinite(seconds) && seconds >= 0 && seconds <= kMaxSampleSeconds;
}

// An optional time: unset (no data) or as TimeOk.
bool TimeOkOpt(const std::optional<double>& seconds) { return !seconds || TimeOk(*seconds); }

bool WithinOpt(const std::optional<double>& value, double low, double high) {
  return !value || (std::isfinite(*value) && *value >= low && *value <= high);
}

}  // namespace

std::optional<std::string_view> IterationSampleRejection(const IterationSample& sample,
                                                         const JobSpec& spec) {
  if (!TimeOk(sample.step_time_s) || !TimeOk(sample.data_time_s) || !TimeOk(sample.elapsed_s) ||
      !TimeOkOpt(sample.compute_time_s) || !TimeOkOpt(sample.forward_backward_time_s) ||
      !TimeOkOpt(sample.allreduce_wait_time_s) || !TimeOkOpt(sample.optimizer_time_s)) {
    return kBadTime;
  }
  if (sample.images <= 0 || sample.images > spec.batch_size) return kBadImages;
  if (sample.iteration < 1 || sample.iteration > spec.iterations) return kBadIteration;
  return std::nullopt;
}

std::optional<std::string_view> GpuSampleRejection(const GpuSample& sample, DeviceKind rank_device,
                                                   const Gpu* held) {
  if (rank_device != DeviceKind::kCuda) return kGpuOnCpuRank;
  // Another agent's GPU, or one of this agent's that the rank does not hold.
  if (held == nullptr || held->uuid.empty() || sample.gpu_uuid != held->uuid ||
      sample.gpu_index != held->index) {
    return kGpuNotHeld;
  }
  bool ok = sample.gpu_index >= 0 && WithinOpt(sample.power_w, 0, kMaxGpuPowerW) &&
            WithinOpt(sample.power_average_w, 0, kMaxGpuPowerW) &&
            WithinOpt(sample.energy_j, 0, kMaxGpuEnergyJ) &&
            WithinOpt(sample.sm_clock_mhz, 0, kMaxGpuClockMhz) &&
            WithinOpt(sample.memory_clock_mhz, 0, kMaxGpuClockMhz) &&
            WithinOpt(sample.temperature_c, -273.15, kMaxGpuTemperatureC) &&
            WithinOpt(sample.gpu_utilization_pct, 0, 100) &&
            WithinOpt(sample.memory_utilization_pct, 0, 100) &&
            (!sample.memory_used_bytes || *sample.memory_used_bytes >= 0);
  return ok ? std::nullopt : std::optional<std::string_view>(kBadGpuReading);
}

std::optional<std::string_view> SummaryRejection(const RankSummary& summary, const JobSpec& spec,
                                                 std::optional<double> fastest_step_s) {
  if (!TimeOk(summary.window_s) || !TimeOk(summary.step_time_median_s)) return kBadSummary;
  if (summary.measured_iterations < 0 || summary.measured_iterations > spec.iterations ||
      summary.measured_images < 0 || summary.skipped_steps < 0 || summary.nonfinite_losses < 0) {
    return kBadSummary;
  }
  if (summary.measured_images >
      static_cast<int64_t>(summary.measured_iterations) * std::max(spec.batch_size, 0)) {
    return kBadSummary;
  }
  if (summary.measured_images > 0) {
    // Iterations run one after another: the window holds them all.
    if (summary.window_s <= 0 ||
        summary.window_s < 0.5 * summary.measured_iterations * summary.step_time_median_s) {
      return kBadSummary;
    }
    // An agent sends a rank's summary after its samples: measured images with no measured
    // sample stored are figures nothing backs.
    if (!fastest_step_s || *fastest_step_s <= 0) return kBadSummary;
    // A rank cannot have measured much more than a full batch per its fastest stored step.
    if (static_cast<double>(summary.measured_images) / summary.window_s >
        2.0 * spec.batch_size / *fastest_step_s) {
      return kBadSummary;
    }
  }
  return std::nullopt;
}

}  // namespace bench
