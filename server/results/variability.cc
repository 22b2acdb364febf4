#include "server/results/variability.h"

#include <algorithm>

#include "server/results/statistics.h"
#include "server/results/telemetry.h"

namespace bench {

ConfigurationFilter VariabilityConfigurations() {
  ConfigurationFilter filter;
  filter.devices = 1;
  filter.device_kind = DeviceKind::kCuda;
  return filter;
}

std::map<int, RankDevice> RankDevicesOf(const Job& job, const std::vector<GpuSample>& gpu_samples) {
  std::map<int, RankDevice> devices;
  for (const RankDevice& device : job.rank_devices) devices[device.rank] = device;
  auto fill_uuid = [&](int rank, const std::string& uuid, int index, const std::string& agent) {
    RankDevice& device = devices[rank];
    device.rank = rank;
    if (!device.gpu_uuid.empty() || uuid.empty()) return;
    device.gpu_uuid = uuid;
    if (device.agent.empty()) {
      device.agent = agent;
      device.device_index = index;
    }
  };
  for (const GpuTelemetry& gpu : job.gpu_telemetry) {
    fill_uuid(gpu.rank, gpu.gpu_uuid, gpu.gpu_index, gpu.agent);
  }
  for (const GpuSample& sample : gpu_samples) {
    fill_uuid(sample.rank, sample.gpu_uuid, sample.gpu_index, "");
  }
  return devices;
}

void VariabilityBuilder::AddJob(const Job& job, const std::vector<IterationSample>& samples,
                                const std::vector<GpuSample>& gpu_samples) {
  if (job.state != JobState::kSucceeded) return;
  const ConfigurationKey config = ConfigurationOf(job);
  if (!VariabilityConfigurations().Matches(config)) return;

  const std::map<int, RankDevice> devices = RankDevicesOf(job, gpu_samples);

  std::map<int, std::vector<double>> measured;  // by rank
  for (const IterationSample& s : samples) {
    if (!s.warmup) measured[s.rank].push_back(s.step_time_s);
  }
  std::map<int, MeasuredWindow> windows = MeasuredWindows(samples);
  std::map<int, std::vector<const GpuSample*>> readings_by_rank;
  for (const GpuSample& s : gpu_samples) readings_by_rank[s.rank].push_back(&s);

  for (const auto& [rank, device] : devices) {
    if (device.gpu_uuid.empty()) continue;
    double median = 0;
    auto summary = job.summaries.find(rank);
    if (summary != job.summaries.end()) median = summary->second.step_time_median_s;
    auto steps = measured.find(rank);
    if (median <= 0 && steps != measured.end() && !steps->second.empty()) {
      median = Median(steps->second);
    }
    PerGpu& gpu = gpus_[device.gpu_uuid];
    if (median > 0) {
      gpu.entries.push_back({config, median});
      fleet_[config].push_back(median);
    }
    gpu.jobs.insert(job.id);
    if (steps != measured.end()) {
      std::vector<double>& into = gpu.step_times[config];
      into.insert(into.end(), steps->second.begin(), steps->second.end());
      gpu.iterations += static_cast<int64_t>(steps->second.size());
    }
    if (job.seq >= gpu.last_seq) {
      gpu.last_seq = job.seq;
      gpu.last_device = device;
    }
    auto window = windows.find(rank);
    auto readings = readings_by_rank.find(rank);
    if (window == windows.end() || readings == readings_by_rank.end()) continue;
    const PowerReading power_reading = PowerReading::For(readings->second);
    for (const GpuSample* s : readings->second) {
      double t = static_cast<double>(s->time_unix_ns) / 1e9;
      if (t < window->second.from_s || t > window->second.to_s) continue;
      if (s->sm_clock_mhz) gpu.sm_clock_mhz.push_back(*s->sm_clock_mhz);
      if (std::optional<double> watts = power_reading.Of(*s)) gpu.power_w.push_back(*watts);
      if (s->temperature_c) gpu.temperature_c.push_back(*s->temperature_c);
    }
  }
}

std::vector<GpuVariability> VariabilityBuilder::Finish(double threshold_pct) const {
  std::map<ConfigurationKey, double> fleet_median;
  for (const auto& [config, medians] : fleet_) fleet_median[config] = Median(medians);

  std::vector<GpuVariability> out;
  for (const auto& [uuid, gpu] : gpus_) {
    if (gpu.entries.empty()) continue;
    GpuVariability v;
    v.gpu_uuid = uuid;
    v.gpu_name = gpu.last_device.gpu_name;
    v.agent = gpu.last_device.agent;
    v.hostname = gpu.last_device.hostname;
    v.gpu_index = gpu.last_device.device_index;
    v.jobs = static_cast<int>(gpu.jobs.size());
    v.iterations = gpu.iterations;
    std::vector<double> ratios;
    for (const Entry& entry : gpu.entries) {
      ratios.push_back(entry.step_time_median_s / fleet_median.at(entry.config));
    }
    v.normalized_step_time = Median(ratios);
    std::vector<double> normalized_steps;
    for (const auto& [config, steps] : gpu.step_times) {
      auto fleet = fleet_median.find(config);
      if (fleet == fleet_median.end()) continue;  // no rank median in that configuration
      for (double step : steps) normalized_steps.push_back(step / fleet->second);
    }
    v.step_time_cv = CoefficientOfVariation(normalized_steps);
    v.sm_clock_mhz = PercentilesOf(gpu.sm_clock_mhz);
    v.power_w = PercentilesOf(gpu.power_w);
    v.temperature_c = PercentilesOf(gpu.temperature_c);
    v.outlier = v.normalized_step_time > 1 + threshold_pct / 100;
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [](const GpuVariability& a, const GpuVariability& b) {
    if (a.normalized_step_time != b.normalized_step_time) {
      return a.normalized_step_time > b.normalized_step_time;
    }
    return a.gpu_uuid < b.gpu_uuid;
  });
  return out;
}

}  // namespace bench
