#include "ctl/grid.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/spec_names.h"
#include "ctl/json_output.h"
#include "ctl/text_table.h"

namespace bench::ctl {
namespace {

using benchfleet::v1::Precision;
using benchfleet::v1::ResultCell;

// FP32, TF32, AMP, BF16, then anything else.
int PrecisionRank(Precision precision) {
  switch (precision) {
    case benchfleet::v1::PRECISION_FP32: return 0;
    case benchfleet::v1::PRECISION_TF32: return 1;
    case benchfleet::v1::PRECISION_AMP: return 2;
    case benchfleet::v1::PRECISION_BF16: return 3;
    default: return 4 + static_cast<int>(precision);
  }
}

std::string PrecisionHeader(Precision precision) {
  if (precision == benchfleet::v1::PRECISION_UNSPECIFIED) return "UNSPECIFIED";
  return absl::AsciiStrToUpper(PrecisionName(precision));
}

std::vector<ResultCell> SortedCells(const std::vector<ResultCell>& cells) {
  std::vector<ResultCell> sorted = cells;
  std::stable_sort(sorted.begin(), sorted.end(), [](const ResultCell& a, const ResultCell& b) {
    return std::make_tuple(a.model(), a.devices(), PrecisionRank(a.precision()),
                           a.batch_size(), a.device_kind()) <
           std::make_tuple(b.model(), b.devices(), PrecisionRank(b.precision()),
                           b.batch_size(), b.device_kind());
  });
  return sorted;
}

const char* MetricTitle(GridMetric metric) {
  switch (metric) {
    case GridMetric::kImagesPerSecond: return "median images/s";
    case GridMetric::kEnergyPerImage: return "median energy per image (J)";
    case GridMetric::kImagesPerWatt: return "median images/s per watt";
    case GridMetric::kPower: return "median GPU power (W)";
    case GridMetric::kSmClock: return "median GPU SM clock (MHz)";
    case GridMetric::kTemperature: return "median GPU temperature (C)";
  }
  return "";
}

std::string GridTitle(const Grid& grid) {
  std::string title = grid.model.empty() ? "(no model)" : grid.model;
  if (!grid.device_kind.empty()) absl::StrAppend(&title, " (", grid.device_kind, ")");
  return absl::StrCat(title, ": ", MetricTitle(grid.metric));
}

std::string OptionalField(GridMetric metric, const std::optional<double>& value) {
  return value ? FormatMetricValue(metric, *value) : "";
}

TextTable GridTable(const Grid& grid) {
  TextTable table;
  table.header.push_back(DevicesHeader(grid.device_kind));
  table.align.push_back(Align::kRight);
  for (const GridColumn& column : grid.columns) {
    table.header.push_back(column.header);
    table.align.push_back(Align::kRight);
  }
  for (const GridRow& row : grid.rows) {
    std::vector<std::string> line = {absl::StrCat(row.devices)};
    for (const auto& median : row.median) {
      line.push_back(median ? FormatMetricValue(grid.metric, *median) : "no data");
    }
    table.rows.push_back(std::move(line));
  }
  return table;
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

}  // namespace

absl::StatusOr<GridMetric> ParseGridMetric(absl::string_view name) {
  static const std::pair<const char*, GridMetric> kNames[] = {
      {"images_per_second", GridMetric::kImagesPerSecond},
      {"energy_per_image", GridMetric::kEnergyPerImage},
      {"images_per_watt", GridMetric::kImagesPerWatt},
      {"power", GridMetric::kPower},
      {"sm_clock", GridMetric::kSmClock},
      {"temperature", GridMetric::kTemperature}};
  for (const auto& [text, metric] : kNames) {
    if (name == text) return metric;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--metric: unknown metric \"", name,
      "\" (expected images_per_second, energy_per_image, images_per_watt, power, sm_clock "
      "or temperature)"));
}

std::optional<double> CellValue(const ResultCell& cell, GridMetric metric) {
  switch (metric) {
    case GridMetric::kImagesPerSecond:
      return cell.runs() > 0 ? std::optional<double>(cell.median_images_per_second())
                             : std::nullopt;
    case GridMetric::kEnergyPerImage:
      if (cell.has_median_energy_per_image_j()) return cell.median_energy_per_image_j();
      return std::nullopt;
    case GridMetric::kImagesPerWatt:
      if (cell.has_median_images_per_second_per_watt()) {
        return cell.median_images_per_second_per_watt();
      }
      return std::nullopt;
    case GridMetric::kPower:
      if (cell.has_median_power_w()) return cell.median_power_w();
      return std::nullopt;
    case GridMetric::kSmClock:
      if (cell.has_median_sm_clock_mhz()) return cell.median_sm_clock_mhz();
      return std::nullopt;
    case GridMetric::kTemperature:
      if (cell.has_median_temperature_c()) return cell.median_temperature_c();
      return std::nullopt;
  }
  return std::nullopt;
}

std::string FormatMetricValue(GridMetric metric, double value) {
  switch (metric) {
    case GridMetric::kEnergyPerImage:
    case GridMetric::kImagesPerWatt:
      return absl::StrFormat("%.3f", value);
    case GridMetric::kSmClock:
      return absl::StrFormat("%.0f", value);
    case GridMetric::kPower:
    case GridMetric::kTemperature:
    case GridMetric::kImagesPerSecond:
      break;
  }
  return absl::StrFormat("%.1f", value);
}

std::string FormatRate(double images_per_second) {
  return absl::StrFormat("%.1f", images_per_second);
}

std::string DevicesHeader(const std::string& device_kind) {
  return device_kind == "cpu" ? "CPU slots" : "GPUs";
}

std::vector<Grid> BuildGrids(const std::vector<ResultCell>& cells, GridMetric metric) {
  using ColumnKey = std::pair<int, int>;  // (precision rank, batch size)
  struct Building {
    std::map<ColumnKey, Precision> columns;
    std::map<int, std::map<ColumnKey, double>> rows;  // devices -> column -> median
  };
  std::map<std::pair<std::string, std::string>, Building> by_grid;
  for (const ResultCell& cell : cells) {
    Building& building = by_grid[{cell.model(), cell.device_kind()}];
    ColumnKey key{PrecisionRank(cell.precision()), cell.batch_size()};
    building.columns[key] = cell.precision();
    std::optional<double> value = CellValue(cell, metric);
    auto& row = building.rows[cell.devices()];
    if (value) {
      row[key] = *value;
    } else {
      row.erase(key);  // a later cell with the same key replaces an earlier one
    }
  }
  std::vector<Grid> grids;
  for (const auto& [grid_key, building] : by_grid) {
    Grid grid;
    grid.metric = metric;
    grid.model = grid_key.first;
    grid.device_kind = grid_key.second;
    for (const auto& [key, precision] : building.columns) {
      grid.columns.push_back(
          {precision, key.second, absl::StrCat(PrecisionHeader(precision), " bs", key.second)});
    }
    for (const auto& [devices, medians] : building.rows) {
      GridRow row{devices, {}};
      for (const auto& [key, precision] : building.columns) {
        auto it = medians.find(key);
        row.median.push_back(it == medians.end() ? std::nullopt
                                                 : std::optional<double>(it->second));
      }
      grid.rows.push_back(std::move(row));
    }
    grids.push_back(std::move(grid));
  }
  return grids;
}

std::string RenderGridsTable(const std::vector<Grid>& grids) {
  if (grids.empty()) return "no results yet\n";
  std::vector<std::string> parts;
  for (const Grid& grid : grids) {
    parts.push_back(absl::StrCat(GridTitle(grid), "\n", RenderPlainTable(GridTable(grid))));
  }
  return absl::StrJoin(parts, "\n");
}

std::string RenderGridsMarkdown(const std::vector<Grid>& grids) {
  if (grids.empty()) return "no results yet\n";
  std::vector<std::string> parts;
  for (const Grid& grid : grids) {
    parts.push_back(
        absl::StrCat("### ", GridTitle(grid), "\n\n", RenderMarkdownTable(GridTable(grid))));
  }
  return absl::StrJoin(parts, "\n");
}

std::string RenderCellsCsv(const std::vector<ResultCell>& cells) {
  std::string out =
      "model,device_kind,devices,precision,batch_size,median_images_per_second,min,max,runs,"
      "energy_per_image_j,images_per_second_per_watt,power_w,sm_clock_mhz,temperature_c\n";
  for (const ResultCell& cell : SortedCells(cells)) {
    absl::StrAppend(&out, CsvField(cell.model()), ",", CsvField(cell.device_kind()), ",",
                    cell.devices(), ",",
                    PrecisionName(cell.precision()), ",", cell.batch_size(), ",",
                    FormatRate(cell.median_images_per_second()), ",",
                    FormatRate(cell.min_images_per_second()), ",",
                    FormatRate(cell.max_images_per_second()), ",", cell.runs(), ",",
                    OptionalField(GridMetric::kEnergyPerImage,
                                  CellValue(cell, GridMetric::kEnergyPerImage)),
                    ",",
                    OptionalField(GridMetric::kImagesPerWatt,
                                  CellValue(cell, GridMetric::kImagesPerWatt)),
                    ",", OptionalField(GridMetric::kPower, CellValue(cell, GridMetric::kPower)),
                    ",",
                    OptionalField(GridMetric::kSmClock, CellValue(cell, GridMetric::kSmClock)),
                    ",",
                    OptionalField(GridMetric::kTemperature,
                                  CellValue(cell, GridMetric::kTemperature)),
                    "\n");
  }
  return out;
}

std::string RenderCellsJson(const std::vector<ResultCell>& cells) {
  return ToJsonArray(SortedCells(cells));
}

}  // namespace bench::ctl
