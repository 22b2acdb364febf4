#include "server/results.h"

#include <algorithm>
#include <tuple>

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

std::vector<ResultCell> BuildResultCells(const std::vector<Job>& jobs,
                                         const std::string& model_filter) {
  std::map<CellKey, std::vector<std::pair<double, std::string>>> grouped;
  for (const Job& job : jobs) {
    if (job.state != JobState::kSucceeded) continue;
    if (!model_filter.empty() && job.spec.model != model_filter) continue;
    std::optional<double> throughput = JobThroughput(job.summaries, job.spec.devices);
    if (!throughput) continue;
    CellKey key{job.spec.model, job.spec.devices, job.spec.precision, job.spec.batch_size,
                job.device_kind};
    grouped[key].emplace_back(*throughput, job.id);
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
    cells.push_back(std::move(cell));
  }
  return cells;
}

}  // namespace bench
