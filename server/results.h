// Turns finished jobs into throughput figures and the results grid: pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/job.h"

namespace bench {

// A job's throughput as ARCHITECTURE.md defines it: the images of all ranks in the
// measured window divided by the window's wall time, Σ images / max window. nullopt
// ("no data") unless every one of `world_size` ranks has a summary with a positive
// window and at least one measured image.
std::optional<double> JobThroughput(const std::map<int, RankSummary>& summaries,
                                    int world_size);

// The key of one grid cell.
struct CellKey {
  std::string model;
  int devices = 0;
  Precision precision = Precision::kUnspecified;
  int batch_size = 0;
  DeviceKind device_kind = DeviceKind::kNone;
  bool operator<(const CellKey& o) const;
};

struct ResultCell {
  CellKey key;
  double median_images_per_second = 0;
  double min_images_per_second = 0;
  double max_images_per_second = 0;
  std::vector<std::string> job_ids;
  // Medians over the cell's jobs that have the figure (GPU telemetry); unset: no data.
  // A job's power, clock and temperature are the means of its GPUs' medians.
  std::optional<double> median_energy_per_image_j;
  std::optional<double> median_images_per_second_per_watt;
  std::optional<double> median_power_w;
  std::optional<double> median_sm_clock_mhz;
  std::optional<double> median_temperature_c;
};

double Median(std::vector<double> values);  // values must not be empty

// Groups the SUCCEEDED jobs that have a throughput into cells (optionally only those
// of `model_filter`); each cell's figure is the median over its jobs. Sorted by key.
std::vector<ResultCell> BuildResultCells(const std::vector<Job>& jobs,
                                         const std::string& model_filter);

}  // namespace bench
