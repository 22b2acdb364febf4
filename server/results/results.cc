#include "server/results/results.h"

#include <algorithm>

#include "server/results/job_diagnosis.h"
#include "server/results/telemetry.h"

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

std::optional<double> SyntheticThroughput(const Job& job) {
  if (!job.spec.data_vs_compute || job.spec.devices < 1) return std::nullopt;
  double sum = 0;
  for (int rank = 0; rank < job.spec.devices; ++rank) {
    auto it = job.summaries.find(rank);
    if (it == job.summaries.end() || !(it->second.synthetic_images_per_second > 0)) {
      return std::nullopt;
    }
    sum += it->second.synthetic_images_per_second;
  }
  return sum;
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

std::optional<double> MeanOfMedians(const std::vector<GpuTelemetry>& gpus,
                                    const Percentiles GpuTelemetry::*field) {
  double sum = 0;
  int n = 0;
  for (const GpuTelemetry& gpu : gpus) {
    const Percentiles& p = gpu.*field;
    if (p.count == 0) continue;
    sum += p.p50;
    ++n;
  }
  if (n > 0) return sum / n;
  return std::nullopt;
}

void AddTelemetry(const ResultRow& row, TelemetryFigures& figures) {
  if (row.energy_per_image_j) {
    figures.energy_per_image_j.push_back(*row.energy_per_image_j);
    figures.images_per_second_per_watt.push_back(1 / *row.energy_per_image_j);
  }
  if (row.power_w) figures.power_w.push_back(*row.power_w);
  if (row.sm_clock_mhz) figures.sm_clock_mhz.push_back(*row.sm_clock_mhz);
  if (row.temperature_c) figures.temperature_c.push_back(*row.temperature_c);
}

std::optional<double> MedianOrNone(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  return Median(values);
}

}  // namespace

bool Matches(const Job& job, const ResultsFilter& filter) {
  // Always asked, even of an empty filter: it tells real jobs from simulated ones.
  if (!filter.configuration.Matches(ConfigurationOf(job))) {
    return false;
  }
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
  if (filter.strict && HasFailingChecks(job)) return false;
  return true;
}

bool HasFailingChecks(const Job& job) {
  if (job.released_ranks != nullptr) return job.released_ranks->failing_checks > 0;
  return job.diagnosis != nullptr && job.diagnosis->FailingChecks() > 0;
}

std::vector<ResultCell> BuildResultCells(const std::vector<Job>& jobs,
                                         const std::string& model_filter) {
  ResultsFilter filter;
  if (!model_filter.empty()) filter.configuration.model = model_filter;
  return BuildResultCells(jobs, filter);
}

std::optional<double> ThroughputOf(const Job& job) {
  if (job.released_ranks != nullptr) return job.released_ranks->throughput;
  return JobThroughput(job.summaries, job.spec.devices);
}

ResultRow ResultRowOf(const Job& job) {
  ResultRow row;
  row.key = ConfigurationOf(job);
  row.state = job.state;
  row.id = job.id;
  row.failing_checks = HasFailingChecks(job);
  if (job.state != JobState::kSucceeded) return row;
  row.throughput = ThroughputOf(job);
  if (!row.throughput) return row;
  if (const ReleasedRanks* released = job.released_ranks.get(); released != nullptr) {
    row.energy_per_image_j = released->energy_per_image_j;
    row.power_w = released->power_w;
    row.sm_clock_mhz = released->sm_clock_mhz;
    row.temperature_c = released->temperature_c;
    return row;
  }
  if (std::optional<double> energy = JobEnergyPerImage(job); energy && *energy > 0) {
    row.energy_per_image_j = energy;
  }
  row.power_w = MeanOfMedians(job.gpu_telemetry, &GpuTelemetry::power_w);
  row.sm_clock_mhz = MeanOfMedians(job.gpu_telemetry, &GpuTelemetry::sm_clock_mhz);
  row.temperature_c = MeanOfMedians(job.gpu_telemetry, &GpuTelemetry::temperature_c);
  return row;
}

std::vector<ResultCell> BuildResultCells(const std::vector<Job>& jobs,
                                         const ResultsFilter& filter,
                                         const Baselines& baselines) {
  std::vector<ResultRow> rows;
  for (const Job& job : jobs) {
    if (job.state != JobState::kCancelled && Matches(job, filter)) {
      rows.push_back(ResultRowOf(job));
    }
  }
  return BuildResultCells(rows, baselines);
}

std::vector<ResultCell> BuildResultCells(const std::vector<ResultRow>& rows,
                                         const Baselines& baselines) {
  // One lookup per row: the cell's index into cells / values / telemetry.
  std::map<ConfigurationKey, size_t> index;
  std::vector<ResultCell> cells;
  std::vector<std::vector<double>> values;
  std::vector<TelemetryFigures> telemetry;
  for (const ResultRow& row : rows) {
    if (row.state == JobState::kCancelled) continue;
    auto [it, added] = index.try_emplace(row.key, cells.size());
    if (added) {
      cells.emplace_back();
      cells.back().key = row.key;
      values.emplace_back();
      telemetry.emplace_back();
    }
    const size_t at = it->second;
    ResultCell& cell = cells[at];
    switch (row.state) {
      case JobState::kQueued:
      case JobState::kRunning: ++cell.pending_runs; continue;
      case JobState::kFailed: ++cell.failed_runs; continue;
      case JobState::kCancelled: continue;
      case JobState::kSucceeded: break;
    }
    if (!row.throughput) {
      ++cell.unmeasured_runs;
      continue;
    }
    values[at].push_back(*row.throughput);
    cell.job_ids.push_back(row.id);
    if (row.failing_checks) ++cell.failing_check_runs;
    AddTelemetry(row, telemetry[at]);
  }
  std::vector<ResultCell> out;
  for (const auto& [key, at] : index) {  // sorted by key
    ResultCell& cell = cells[at];
    const std::vector<double>& runs = values[at];
    if (!runs.empty()) {
      cell.median_images_per_second = Median(runs);
      cell.min_images_per_second = *std::min_element(runs.begin(), runs.end());
      cell.max_images_per_second = *std::max_element(runs.begin(), runs.end());
      cell.ci95 = MedianCi95(runs);
      cell.cv = CoefficientOfVariation(runs);
      cell.baseline = CompareWithBaselines(cell.median_images_per_second, key, baselines);
    }
    const TelemetryFigures& figures = telemetry[at];
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
