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

std::string GridTitle(const Grid& grid) {
  std::string title = grid.model.empty() ? "(no model)" : grid.model;
  if (!grid.device_kind.empty()) absl::StrAppend(&title, " (", grid.device_kind, ")");
  return absl::StrCat(title, ": median images/s");
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
      line.push_back(median ? FormatRate(*median) : "no data");
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

std::string FormatRate(double images_per_second) {
  return absl::StrFormat("%.1f", images_per_second);
}

std::string DevicesHeader(const std::string& device_kind) {
  return device_kind == "cpu" ? "CPU slots" : "GPUs";
}

std::vector<Grid> BuildGrids(const std::vector<ResultCell>& cells) {
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
    building.rows[cell.devices()][key] = cell.median_images_per_second();
  }
  std::vector<Grid> grids;
  for (const auto& [grid_key, building] : by_grid) {
    Grid grid;
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
      "model,device_kind,devices,precision,batch_size,median_images_per_second,min,max,runs\n";
  for (const ResultCell& cell : SortedCells(cells)) {
    absl::StrAppend(&out, CsvField(cell.model()), ",", CsvField(cell.device_kind()), ",",
                    cell.devices(), ",",
                    PrecisionName(cell.precision()), ",", cell.batch_size(), ",",
                    FormatRate(cell.median_images_per_second()), ",",
                    FormatRate(cell.min_images_per_second()), ",",
                    FormatRate(cell.max_images_per_second()), ",", cell.runs(), "\n");
  }
  return out;
}

std::string RenderCellsJson(const std::vector<ResultCell>& cells) {
  return ToJsonArray(SortedCells(cells));
}

}  // namespace bench::ctl
