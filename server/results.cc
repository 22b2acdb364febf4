#include "server/results.h"

#include <algorithm>
#include <tuple>

#include "server/telemetry.h"

namespace bench {

std::optional<double> JobThroughput(const std::map<int, RankSummary>& summaries,
                                    int world_size) {
  if (world_size < 1) return std::nullopt;
  int64_t images = 0;
  double window = 0;
  for (int rank = 0; rank < world_size; ++rank) {
    auto it = summaries.find(rank);
    if (it == summaries.end()) return std::nullopt;
    const RankSummary& summary = it->second;
    if (summary.window_s <= 0 || summary.measured_images <= 0) return std::nullopt;
    images += summary.measured_images;
    window = std::max(window, summary.window_s);
  }
  return static_cast<double>(images) / window;
}

namespace {

// Per job of one cell, the telemetry figures it has.
struct TelemetryFigures {
  std::vector<double> energy_per_image_j;
  std::vector<double> images_per_second_per_watt;
  std::vector<double> power_w;
  std::vector<double> sm_clock_mhz;
  std::vector<double> temperature_c;
};

void AddMeanOfMedians(const std::vector<GpuTelemetry>& gpus,
                      const Percentiles GpuTelemetry::*field, std::vector<double>& out) {
  double sum = 0;
  int n = 0;
  for (const GpuTelemetry& gpu : gpus) {
    const Percentiles& p = gpu.*field;
    if (p.count == 0) continue;
    sum += p.p50;
    ++n;
  }
  if (n > 0) out.push_back(sum / n);
}

void AddTelemetry(const Job& job, TelemetryFigures& figures) {
  if (std::optional<double> energy = JobEnergyPerImage(job); energy && *energy > 0) {
    figures.energy_per_image_j.push_back(*energy);
    figures.images_per_second_per_watt.push_back(1 / *energy);
  }
  AddMeanOfMedians(job.gpu_telemetry, &GpuTelemetry::power_w, figures.power_w);
  AddMeanOfMedians(job.gpu_telemetry, &GpuTelemetry::sm_clock_mhz, figures.sm_clock_mhz);
  AddMeanOfMedians(job.gpu_telemetry, &GpuTelemetry::temperature_c, figures.temperature_c);
}

std::optional<double> MedianOrNone(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  return Median(values);
}

}  // namespace

bool Matches(const Job& job, const ResultsFilter& filter) {
  if (!filter.model.empty() && job.spec.model != filter.model) return false;
  if (!filter.gpu_model.empty() && GpuModelOf(job) != filter.gpu_model) return false;
  if (!filter.node.empty() &&
      std::none_of(job.placements.begin(), job.placements.end(),
                   [&](const Placement& p) { return p.agent == filter.node; })) {
    return false;
  }
  if (job.created < filter.since || job.created >= filter.until) return false;
  for (const auto& [key, value] : filter.labels) {
    auto it = job.spec.labels.find(key);
    if (it == job.spec.labels.end() || it->second != value) return false;
  }
  return true;
}

std::vector<ResultCell> BuildResultCells(const std::vector<Job>& jobs,
                                         const std::string& model_filter) {
  ResultsFilter filter;
  filter.model = model_filter;
  return BuildResultCells(jobs, filter);
}

std::vector<ResultCell> BuildResultCells(const std::vector<Job>& jobs,
                                         const ResultsFilter& filter,
                                         const Baselines& baselines) {
  std::map<CellKey, ResultCell> cells;
  std::map<CellKey, std::vector<double>> values;
  std::map<CellKey, TelemetryFigures> telemetry;
  for (const Job& job : jobs) {
    if (job.state == JobState::kCancelled || !Matches(job, filter)) continue;
    CellKey key = ConfigurationOf(job);
    ResultCell& cell = cells[key];
    cell.key = key;
    switch (job.state) {
      case JobState::kQueued:
      case JobState::kRunning: ++cell.pending_runs; continue;
      case JobState::kFailed: ++cell.failed_runs; continue;
      case JobState::kCancelled: continue;
      case JobState::kSucceeded: break;
    }
    std::optional<double> throughput = JobThroughput(job.summaries, job.spec.devices);
    if (!throughput) {
      ++cell.unmeasured_runs;
      continue;
    }
    values[key].push_back(*throughput);
    cell.job_ids.push_back(job.id);
    AddTelemetry(job, telemetry[key]);
  }
  std::vector<ResultCell> out;
  for (auto& [key, cell] : cells) {
    const std::vector<double>& runs = values[key];
    if (!runs.empty()) {
      cell.median_images_per_second = Median(runs);
      cell.min_images_per_second = *std::min_element(runs.begin(), runs.end());
      cell.max_images_per_second = *std::max_element(runs.begin(), runs.end());
      cell.ci95 = MedianCi95(runs);
      cell.cv = CoefficientOfVariation(runs);
      cell.baseline = CompareWithBaselines(cell.median_images_per_second, key, baselines);
    }
    const TelemetryFigures& figures = telemetry[key];
    cell.median_energy_per_image_j = MedianOrNone(figures.energy_per_image_j);
    cell.median_images_per_second_per_watt = MedianOrNone(figures.images_per_second_per_watt);
    cell.median_power_w = MedianOrNone(figures.power_w);
    cell.median_sm_clock_mhz = MedianOrNone(figures.sm_clock_mhz);
    cell.median_temperature_c = MedianOrNone(figures.temperature_c);
    out.push_back(std::move(cell));
  }
  return out;
}

}  // namespace bench
