#include "report/grid.h"

#include <algorithm>
#include <functional>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/configuration_key.h"
#include "common/spec_names.h"
#include "report/json_output.h"
#include "report/text_table.h"

namespace bench::report {
namespace {

using benchfleet::v1::ResultCell;

// The cell's configuration as benchd keyed it (common/configuration_key.h). A precision
// or device kind this build does not know reads as unspecified or "".
ConfigurationKey KeyOf(const ResultCell& cell) {
  ConfigurationKey key;
  key.model = cell.model();
  key.devices = cell.devices();
  key.precision =
      PrecisionFromText(PrecisionName(cell.precision())).value_or(bench::Precision::kUnspecified);
  key.batch_size = cell.batch_size();
  key.device_kind = DeviceKindFromText(cell.device_kind());
  key.gpu_model = cell.gpu_model();
  key.image_size = cell.image_size();
  key.simulated = cell.simulated();
  return key;
}

// The grid a configuration is shown in: the same key without what its rows (devices)
// and columns (precision, batch size) tell apart.
ConfigurationKey GridKeyOf(ConfigurationKey key) {
  key.devices = 0;
  key.precision = bench::Precision::kUnspecified;
  key.batch_size = 0;
  return key;
}

// FP32, TF32, AMP, BF16, then unspecified: the columns' order.
int PrecisionRank(bench::Precision precision) {
  switch (precision) {
    case bench::Precision::kFp32: return 0;
    case bench::Precision::kTf32: return 1;
    case bench::Precision::kAmp: return 2;
    case bench::Precision::kBf16: return 3;
    case bench::Precision::kUnspecified: break;
  }
  return 4;
}

std::string PrecisionHeader(bench::Precision precision) {
  return absl::AsciiStrToUpper(PrecisionText(precision));  // "UNSPECIFIED" when unset
}

// How the tables list configurations, which is not the key's own order: grids by model,
// device kind by name ("" < "cpu" < "cuda"), GPU model, image size; the CSV and JSON
// cells by model, image size, devices, precision (PrecisionRank), batch size, device kind
// by name, GPU model.
struct GridOrder {
  bool operator()(const ConfigurationKey& a, const ConfigurationKey& b) const {
    return std::forward_as_tuple(a.model, std::string_view(DeviceKindText(a.device_kind)),
                                 a.gpu_model, a.image_size, a.simulated) <
           std::forward_as_tuple(b.model, std::string_view(DeviceKindText(b.device_kind)),
                                 b.gpu_model, b.image_size, b.simulated);
  }
};
bool ListedBefore(const ConfigurationKey& a, const ConfigurationKey& b) {
  auto listed = [](const ConfigurationKey& k) {
    return std::make_tuple(std::cref(k.model), k.image_size, k.devices, PrecisionRank(k.precision),
                           k.batch_size, std::string_view(DeviceKindText(k.device_kind)),
                           std::cref(k.gpu_model));
  };
  return listed(a) < listed(b);
}

std::vector<ResultCell> SortedCells(const std::vector<ResultCell>& cells) {
  std::vector<std::pair<ConfigurationKey, const ResultCell*>> keyed;
  keyed.reserve(cells.size());
  for (const ResultCell& cell : cells) keyed.emplace_back(KeyOf(cell), &cell);
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return ListedBefore(a.first, b.first); });
  std::vector<ResultCell> sorted;
  sorted.reserve(cells.size());
  for (const auto& [key, cell] : keyed) sorted.push_back(*cell);
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

std::string GridName(const Grid& grid) {
  std::string title = grid.model.empty() ? "(no model)" : grid.model;
  if (grid.image_size > 0) absl::StrAppend(&title, " ", grid.image_size, "px");
  std::vector<std::string> where;
  if (!grid.device_kind.empty()) where.push_back(grid.device_kind);
  if (!grid.gpu_model.empty()) where.push_back(grid.gpu_model);
  if (grid.simulated) where.push_back("simulated");
  if (!where.empty()) absl::StrAppend(&title, " (", absl::StrJoin(where, ", "), ")");
  return title;
}

std::string GridTitle(const Grid& grid) {
  return absl::StrCat(GridName(grid), ": ", MetricTitle(grid.metric));
}

std::string ScalingTitle(const Grid& grid) {
  return absl::StrCat(GridName(grid), ": speedup and scaling efficiency vs 1 ",
                      grid.device_kind == "cpu" ? "CPU slot" : "GPU");
}

std::string BaselineTitle(const Grid& grid) {
  return absl::StrCat(GridName(grid), ": median vs baseline");
}

bool HasScaling(const Grid& grid) {
  if (grid.metric != GridMetric::kImagesPerSecond) return false;
  for (const GridRow& row : grid.rows) {
    if (row.devices > 1) return true;
  }
  return false;
}

bool HasOneDeviceRow(const Grid& grid) {
  for (const GridRow& row : grid.rows) {
    if (row.devices == 1) return true;
  }
  return false;
}

std::string NoScalingLine(const Grid& grid) {
  return absl::StrCat(ScalingTitle(grid), ": no data (no 1-",
                      grid.device_kind == "cpu" ? "CPU slot" : "GPU", " cell)\n");
}

bool HasBaseline(const benchfleet::v1::ResultCell& cell) {
  return cell.baseline().verdict() != benchfleet::v1::BASELINE_VERDICT_UNSPECIFIED ||
         cell.baseline().has_ratio();
}

bool HasBaselines(const Grid& grid) {
  for (const GridRow& row : grid.rows) {
    for (const auto& cell : row.cells) {
      if (cell && HasBaseline(*cell)) return true;
    }
  }
  return false;
}

TextTable BaseTable(const Grid& grid) {
  TextTable table;
  table.header.push_back(DevicesHeader(grid.device_kind));
  table.align.push_back(Align::kRight);
  for (const GridColumn& column : grid.columns) {
    table.header.push_back(column.header);
    table.align.push_back(Align::kRight);
  }
  return table;
}

TextTable ScalingTable(const Grid& grid) {
  TextTable table = BaseTable(grid);
  for (const GridRow& row : grid.rows) {
    if (row.devices <= 1) continue;
    std::vector<std::string> line = {absl::StrCat(row.devices)};
    for (const auto& scaling : row.scaling) line.push_back(FormatScaling(scaling));
    table.rows.push_back(std::move(line));
  }
  return table;
}

TextTable BaselineTable(const Grid& grid) {
  TextTable table = BaseTable(grid);
  for (const GridRow& row : grid.rows) {
    std::vector<std::string> line = {absl::StrCat(row.devices)};
    for (const auto& cell : row.cells) {
      line.push_back(cell ? FormatBaselineComparison(cell->baseline()) : "-");
    }
    table.rows.push_back(std::move(line));
  }
  return table;
}

std::string OptionalField(GridMetric metric, const std::optional<double>& value) {
  return value ? FormatMetricValue(metric, *value) : "";
}

TextTable GridTable(const Grid& grid) {
  TextTable table = BaseTable(grid);
  for (const GridRow& row : grid.rows) {
    std::vector<std::string> line = {absl::StrCat(row.devices)};
    for (size_t c = 0; c < row.median.size(); ++c) {
      if (grid.metric == GridMetric::kImagesPerSecond && c < row.cells.size() && row.cells[c]) {
        line.push_back(FormatCellText(*row.cells[c]));
      } else {
        line.push_back(row.median[c] ? FormatMetricValue(grid.metric, *row.median[c])
                                     : "no data");
      }
    }
    table.rows.push_back(std::move(line));
  }
  return table;
}

std::optional<Scaling> ScalingBetween(const ResultCell& cell, const ResultCell* one) {
  if (one == nullptr || cell.devices() <= 1 || cell.runs() <= 0 || one->runs() <= 0 ||
      one->median_images_per_second() <= 0) {
    return std::nullopt;
  }
  Scaling scaling;
  scaling.speedup = cell.median_images_per_second() / one->median_images_per_second();
  scaling.efficiency = scaling.speedup / cell.devices();
  return scaling;
}

std::string Fixed(const char* format, const std::optional<double>& value) {
  return value ? absl::StrFormat(format, *value) : "";
}

}  // namespace

// Each metric's name, for ParseGridMetric and GridMetricName alike.
constexpr std::pair<const char*, GridMetric> kGridMetricNames[] = {
    {"images_per_second", GridMetric::kImagesPerSecond},
    {"energy_per_image", GridMetric::kEnergyPerImage},
    {"images_per_watt", GridMetric::kImagesPerWatt},
    {"power", GridMetric::kPower},
    {"sm_clock", GridMetric::kSmClock},
    {"temperature", GridMetric::kTemperature}};

absl::StatusOr<GridMetric> ParseGridMetric(absl::string_view name) {
  for (const auto& [text, metric] : kGridMetricNames) {
    if (name == text) return metric;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--metric: unknown metric \"", name,
      "\" (expected images_per_second, energy_per_image, images_per_watt, power, sm_clock "
      "or temperature)"));
}

std::string GridMetricName(GridMetric metric) {
  for (const auto& [text, named] : kGridMetricNames) {
    if (named == metric) return text;
  }
  return "";
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

std::optional<Scaling> ScalingOf(const ResultCell& cell, const std::vector<ResultCell>& cells) {
  // The 1-device cell of the same configuration (the last one, as BuildGrids keeps).
  ConfigurationKey one_key = KeyOf(cell);
  one_key.devices = 1;
  const ResultCell* one = nullptr;
  for (const ResultCell& other : cells) {
    if (other.devices() == 1 && KeyOf(other) == one_key) one = &other;
  }
  return ScalingBetween(cell, one);
}

std::string FormatCellText(const ResultCell& cell) {
  std::vector<std::string> notes;
  if (cell.failed_runs() > 0) notes.push_back(absl::StrCat(cell.failed_runs(), " failed"));
  if (cell.pending_runs() > 0) notes.push_back(absl::StrCat(cell.pending_runs(), " pending"));
  if (cell.runs() <= 0) {
    if (notes.empty()) return "no data";
    return absl::StrCat("no data (", absl::StrJoin(notes, ", "), ")");
  }
  std::string spread;
  if (cell.has_ci95_low_images_per_second() && cell.has_ci95_high_images_per_second()) {
    spread = absl::StrCat("95% CI ", FormatRate(cell.ci95_low_images_per_second()), "\u2013",
                          FormatRate(cell.ci95_high_images_per_second()), ", ");
  } else if (cell.runs() >= 2) {
    spread = absl::StrCat(FormatRate(cell.min_images_per_second()), "\u2013",
                          FormatRate(cell.max_images_per_second()), ", ");
  }
  std::string text = absl::StrCat(FormatRate(cell.median_images_per_second()), " (", spread,
                                  "n=", cell.runs());
  for (const std::string& note : notes) absl::StrAppend(&text, "; ", note);
  text += ")";
  switch (cell.baseline().verdict()) {
    case benchfleet::v1::BASELINE_VERDICT_BELOW: text += " REGRESSION"; break;
    case benchfleet::v1::BASELINE_VERDICT_ABOVE: text += " ABOVE"; break;
    default: break;
  }
  if (cell.failing_check_runs() > 0) text += "!";
  return text;
}

std::string FailingChecksFootnote(const std::vector<ResultCell>& cells) {
  int runs = 0;
  for (const ResultCell& cell : cells) runs += cell.failing_check_runs();
  if (runs == 0) return "";
  return absl::StrCat("\n! ", runs, runs == 1 ? " run" : " runs",
                      " with failing checks; --strict leaves them out\n");
}

std::string FormatScaling(const std::optional<Scaling>& scaling) {
  if (!scaling) return "no data";
  return absl::StrFormat("%.2fx (%.1f%%)", scaling->speedup, scaling->efficiency * 100);
}

std::string BaselineVerdictName(benchfleet::v1::BaselineVerdict verdict) {
  switch (verdict) {
    case benchfleet::v1::BASELINE_VERDICT_WITHIN: return "within";
    case benchfleet::v1::BASELINE_VERDICT_BELOW: return "below";
    case benchfleet::v1::BASELINE_VERDICT_ABOVE: return "above";
    default: return "";
  }
}

std::string FormatBaselineComparison(const benchfleet::v1::BaselineComparison& baseline) {
  const char* flag = nullptr;
  switch (baseline.verdict()) {
    case benchfleet::v1::BASELINE_VERDICT_WITHIN: flag = "within"; break;
    case benchfleet::v1::BASELINE_VERDICT_BELOW: flag = "REGRESSION"; break;
    case benchfleet::v1::BASELINE_VERDICT_ABOVE: flag = "ABOVE"; break;
    default: break;
  }
  if (!baseline.has_ratio()) return flag ? flag : "-";
  std::string text = absl::StrFormat("%.2fx", baseline.ratio());
  if (flag) absl::StrAppend(&text, " ", flag);
  return text;
}

std::string FormatBaselineVerdict(const benchfleet::v1::BaselineComparison& baseline) {
  const char* verdict = nullptr;
  switch (baseline.verdict()) {
    case benchfleet::v1::BASELINE_VERDICT_WITHIN: verdict = "within bounds"; break;
    case benchfleet::v1::BASELINE_VERDICT_BELOW: verdict = "REGRESSION (below the lower bound)"; break;
    case benchfleet::v1::BASELINE_VERDICT_ABOVE: verdict = "ABOVE (faster than the upper bound)"; break;
    default: break;
  }
  if (!verdict && !baseline.has_ratio()) return "";
  std::string text;
  if (baseline.has_ratio()) text = absl::StrFormat("%.3fx", baseline.ratio());
  if (baseline.has_baseline_images_per_second()) {
    absl::StrAppend(&text, text.empty() ? "" : " of ",
                    FormatRate(baseline.baseline_images_per_second()), " images/s");
  }
  if (!baseline.baseline_job_id().empty()) {
    absl::StrAppend(&text, text.empty() ? "" : " ", "(job ", baseline.baseline_job_id(), ")");
  }
  if (verdict) absl::StrAppend(&text, text.empty() ? "" : ": ", verdict);
  return text;
}

std::vector<Grid> BuildGrids(const std::vector<ResultCell>& cells, GridMetric metric) {
  using ColumnKey = std::pair<int, int>;  // (precision rank, batch size)
  struct Column {
    bench::Precision precision;
    benchfleet::v1::Precision wire;  // as the cell has it, for GridColumn
  };
  struct Building {
    std::map<ColumnKey, Column> columns;
    std::map<int, std::map<ColumnKey, ResultCell>> rows;  // devices -> column -> cell
  };
  std::map<ConfigurationKey, Building, GridOrder> by_grid;  // by GridKeyOf
  for (const ResultCell& cell : cells) {
    const ConfigurationKey cell_key = KeyOf(cell);
    Building& building = by_grid[GridKeyOf(cell_key)];
    ColumnKey key{PrecisionRank(cell_key.precision), cell_key.batch_size};
    building.columns[key] = {cell_key.precision, cell.precision()};
    building.rows[cell_key.devices][key] = cell;  // a later cell replaces an earlier one
  }
  std::vector<Grid> grids;
  for (const auto& [grid_key, building] : by_grid) {
    Grid grid;
    grid.metric = metric;
    grid.model = grid_key.model;
    grid.device_kind = DeviceKindText(grid_key.device_kind);
    grid.gpu_model = grid_key.gpu_model;
    grid.image_size = grid_key.image_size;
    grid.simulated = grid_key.simulated;
    for (const auto& [key, column] : building.columns) {
      grid.columns.push_back({column.wire, key.second,
                              absl::StrCat(PrecisionHeader(column.precision), " bs", key.second)});
    }
    const auto one_row = building.rows.find(1);
    for (const auto& [devices, by_column] : building.rows) {
      GridRow row{devices, {}, {}, {}};
      for (const auto& [key, column] : building.columns) {
        auto it = by_column.find(key);
        if (it == by_column.end()) {
          row.median.push_back(std::nullopt);
          row.cells.push_back(std::nullopt);
          row.scaling.push_back(std::nullopt);
          continue;
        }
        row.median.push_back(CellValue(it->second, metric));
        row.cells.push_back(it->second);
        const ResultCell* one = nullptr;
        if (one_row != building.rows.end()) {
          auto one_it = one_row->second.find(key);
          if (one_it != one_row->second.end()) one = &one_it->second;
        }
        row.scaling.push_back(ScalingBetween(it->second, one));
      }
      grid.rows.push_back(std::move(row));
    }
    grids.push_back(std::move(grid));
  }
  return grids;
}

std::vector<GridSection> GridSections(const Grid& grid) {
  std::vector<GridSection> sections;
  auto all_rows = [&grid] {
    std::vector<size_t> rows(grid.rows.size());
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
    return rows;
  };
  sections.push_back({GridSectionKind::kMetric, GridTitle(grid), GridTable(grid), all_rows(), ""});
  if (HasScaling(grid) && !HasOneDeviceRow(grid)) {
    std::string note = NoScalingLine(grid);
    note.pop_back();  // '\n'
    sections.push_back({GridSectionKind::kScaling, ScalingTitle(grid), {}, {}, std::move(note)});
  } else if (HasScaling(grid)) {
    std::vector<size_t> rows;
    for (size_t i = 0; i < grid.rows.size(); ++i) {
      if (grid.rows[i].devices > 1) rows.push_back(i);
    }
    sections.push_back(
        {GridSectionKind::kScaling, ScalingTitle(grid), ScalingTable(grid), std::move(rows), ""});
  }
  if (HasBaselines(grid)) {
    sections.push_back(
        {GridSectionKind::kBaseline, BaselineTitle(grid), BaselineTable(grid), all_rows(), ""});
  }
  return sections;
}

std::string RenderGridsTable(const std::vector<Grid>& grids) {
  if (grids.empty()) return "no results yet\n";
  std::vector<std::string> parts;
  for (const Grid& grid : grids) {
    for (const GridSection& section : GridSections(grid)) {
      if (!section.note.empty()) {
        absl::StrAppend(&parts.back(), section.note, "\n");
      } else {
        parts.push_back(absl::StrCat(section.title, "\n", RenderPlainTable(section.table)));
      }
    }
  }
  return absl::StrJoin(parts, "\n");
}

std::string RenderGridsMarkdown(const std::vector<Grid>& grids) {
  if (grids.empty()) return "no results yet\n";
  std::vector<std::string> parts;
  for (const Grid& grid : grids) {
    for (const GridSection& section : GridSections(grid)) {
      if (!section.note.empty()) {
        absl::StrAppend(&parts.back(), "\n", section.note, "\n");
      } else {
        parts.push_back(
            absl::StrCat("### ", section.title, "\n\n", RenderMarkdownTable(section.table)));
      }
    }
  }
  return absl::StrJoin(parts, "\n");
}

std::string RenderCellsCsv(const std::vector<ResultCell>& cells) {
  std::string out =
      "model,device_kind,devices,precision,batch_size,median_images_per_second,min,max,runs,"
      "energy_per_image_j,images_per_second_per_watt,power_w,sm_clock_mhz,temperature_c,"
      "failed_runs,pending_runs,ci95_low,ci95_high,cv,speedup,scaling_efficiency,"
      "baseline_ratio,baseline_verdict,gpu_model,image_size\n";
  for (const ResultCell& cell : SortedCells(cells)) {
    const bool data = cell.runs() > 0;
    auto rate = [data](double value) { return data ? FormatRate(value) : std::string(); };
    auto optional = [](bool has, double value) {
      return has ? std::optional<double>(value) : std::nullopt;
    };
    const std::optional<Scaling> scaling = ScalingOf(cell, cells);
    std::vector<std::string> fields = {
        CsvField(cell.model()),
        CsvField(cell.device_kind()),
        absl::StrCat(cell.devices()),
        PrecisionName(cell.precision()),
        absl::StrCat(cell.batch_size()),
        rate(cell.median_images_per_second()),
        rate(cell.min_images_per_second()),
        rate(cell.max_images_per_second()),
        absl::StrCat(cell.runs()),
        OptionalField(GridMetric::kEnergyPerImage, CellValue(cell, GridMetric::kEnergyPerImage)),
        OptionalField(GridMetric::kImagesPerWatt, CellValue(cell, GridMetric::kImagesPerWatt)),
        OptionalField(GridMetric::kPower, CellValue(cell, GridMetric::kPower)),
        OptionalField(GridMetric::kSmClock, CellValue(cell, GridMetric::kSmClock)),
        OptionalField(GridMetric::kTemperature, CellValue(cell, GridMetric::kTemperature)),
        absl::StrCat(cell.failed_runs()),
        absl::StrCat(cell.pending_runs()),
        Fixed("%.1f", optional(cell.has_ci95_low_images_per_second(),
                               cell.ci95_low_images_per_second())),
        Fixed("%.1f", optional(cell.has_ci95_high_images_per_second(),
                               cell.ci95_high_images_per_second())),
        Fixed("%.4f", optional(cell.has_cv(), cell.cv())),
        Fixed("%.3f", scaling ? std::optional<double>(scaling->speedup) : std::nullopt),
        Fixed("%.3f", scaling ? std::optional<double>(scaling->efficiency) : std::nullopt),
        Fixed("%.3f", optional(cell.baseline().has_ratio(), cell.baseline().ratio())),
        BaselineVerdictName(cell.baseline().verdict()),
        CsvField(cell.gpu_model()),
        cell.image_size() > 0 ? absl::StrCat(cell.image_size()) : "",
    };
    absl::StrAppend(&out, absl::StrJoin(fields, ","), "\n");
  }
  return out;
}

std::string RenderCellsJson(const std::vector<ResultCell>& cells) {
  const std::vector<ResultCell> sorted = SortedCells(cells);
  if (sorted.empty()) return "[]\n";
  std::string out = "[\n";
  for (size_t i = 0; i < sorted.size(); ++i) {
    std::string item = ToJson(sorted[i]);
    item.pop_back();  // '\n'
    item.pop_back();  // '}'
    const std::optional<Scaling> scaling = ScalingOf(sorted[i], cells);
    absl::StrAppend(&item, ",\"speedup\":",
                    scaling ? JsonNumber(scaling->speedup) : std::string("null"),
                    ",\"scaling_efficiency\":",
                    scaling ? JsonNumber(scaling->efficiency) : std::string("null"), "}");
    out += "  " + item + (i + 1 < sorted.size() ? ",\n" : "\n");
  }
  return out + "]\n";
}

std::vector<ResultCell> CellsMatching(const benchfleet::v1::ResultsRequest& request,
                                      const benchfleet::v1::ResultsResponse& response) {
  std::vector<ResultCell> cells;
  for (const ResultCell& cell : response.cells()) {
    if (!request.model().empty() && cell.model() != request.model()) continue;
    if (!request.gpu_model().empty() && cell.gpu_model() != request.gpu_model()) continue;
    if (cell.simulated() != request.simulated()) continue;  // never real and simulated mixed
    cells.push_back(cell);
  }
  return cells;
}

std::string RenderResultsJson(const benchfleet::v1::ResultsRequest& request,
                              const benchfleet::v1::ResultsResponse& response) {
  return RenderCellsJson(CellsMatching(request, response));
}

}  // namespace bench::report
