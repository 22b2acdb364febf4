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

bool CellKey::operator<(const CellKey& o) const {
  return std::tie(model, devices, precision, batch_size, device_kind) <
         std::tie(o.model, o.devices, o.precision, o.batch_size, o.device_kind);
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
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

std::vector<ResultCell> BuildResultCells(const std::vector<Job>& jobs,
                                         const std::string& model_filter) {
  std::map<CellKey, std::vector<std::pair<double, std::string>>> grouped;
  std::map<CellKey, TelemetryFigures> telemetry;
  for (const Job& job : jobs) {
    if (job.state != JobState::kSucceeded) continue;
    if (!model_filter.empty() && job.spec.model != model_filter) continue;
    std::optional<double> throughput = JobThroughput(job.summaries, job.spec.devices);
    if (!throughput) continue;
    CellKey key{job.spec.model, job.spec.devices, job.spec.precision, job.spec.batch_size,
                job.device_kind};
    grouped[key].emplace_back(*throughput, job.id);
    AddTelemetry(job, telemetry[key]);
  }
  std::vector<ResultCell> cells;
  for (auto& [key, runs] : grouped) {
    ResultCell cell;
    cell.key = key;
    std::vector<double> values;
    for (const auto& [value, id] : runs) {
      values.push_back(value);
      cell.job_ids.push_back(id);
    }
    cell.median_images_per_second = Median(values);
    cell.min_images_per_second = *std::min_element(values.begin(), values.end());
    cell.max_images_per_second = *std::max_element(values.begin(), values.end());
    const TelemetryFigures& figures = telemetry[key];
    cell.median_energy_per_image_j = MedianOrNone(figures.energy_per_image_j);
    cell.median_images_per_second_per_watt = MedianOrNone(figures.images_per_second_per_watt);
    cell.median_power_w = MedianOrNone(figures.power_w);
    cell.median_sm_clock_mhz = MedianOrNone(figures.sm_clock_mhz);
    cell.median_temperature_c = MedianOrNone(figures.temperature_c);
    cells.push_back(std::move(cell));
  }
  return cells;
}

}  // namespace bench
