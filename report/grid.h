// The results grid: ResultCells (one per model, devices, precision, batch size, GPU model) arranged
// like published throughput tables, and rendered as text, markdown, CSV or JSON.
// Pure functions, no I/O. benchctl results and GET /api/v1/results render through here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchfleet/v1/controller.pb.h"
#include "benchfleet/v1/types.pb.h"
#include "report/text_table.h"

namespace bench::report {

// Which figure of a cell fills the grid (benchctl results --metric).
enum class GridMetric {
  kImagesPerSecond,  // "images_per_second" (the default)
  kEnergyPerImage,   // "energy_per_image": joules per image over the measured window
  kImagesPerWatt,    // "images_per_watt": images per second per watt (= images per joule)
  kPower,            // "power": watts, median
  kSmClock,          // "sm_clock": MHz, median
  kTemperature,      // "temperature": °C, median
};
// INVALID_ARGUMENT naming the accepted names for anything else.
absl::StatusOr<GridMetric> ParseGridMetric(absl::string_view name);
// The name ParseGridMetric reads for `metric`: "images_per_second", "energy_per_image", ….
std::string GridMetricName(GridMetric metric);
// The cell's figure for `metric`; nullopt: no data.
std::optional<double> CellValue(const benchfleet::v1::ResultCell& cell, GridMetric metric);
// As shown in tables: images/s one decimal, J and images/W three, W and °C one, MHz none.
std::string FormatMetricValue(GridMetric metric, double value);

struct GridColumn {
  benchfleet::v1::Precision precision;
  int batch_size;
  std::string header;  // "FP32 bs128", "AMP bs256"
};

// Speedup and scaling efficiency of an N-device cell against the 1-device cell of the
// same configuration (common/configuration_key.h: model, precision, batch size, device
// kind, GPU model, image size), as DLPerf and NVIDIA's tables show them: speedup =
// median_N / median_1, efficiency = speedup / N.
struct Scaling {
  double speedup = 0;
  double efficiency = 0;  // a fraction: 0.92 is 92%
};
// nullopt: no data (either cell has no successful run, or there is no 1-device cell).
std::optional<Scaling> ScalingOf(const benchfleet::v1::ResultCell& cell,
                                 const std::vector<benchfleet::v1::ResultCell>& cells);

struct GridRow {
  int devices;
  std::vector<std::optional<double>> median;  // per column; nullopt: no figure ("no data")
  // Per column: the cell itself (nullopt: no cell at all), for spreads, counts and verdicts.
  std::vector<std::optional<benchfleet::v1::ResultCell>> cells;
  // Per column, images/s grids only: against the 1-device row of the same column.
  std::vector<std::optional<Scaling>> scaling;
};

// One grid per (model, device kind, GPU model, image size).
struct Grid {
  GridMetric metric = GridMetric::kImagesPerSecond;
  std::string model;
  std::string device_kind;  // "cuda", "cpu" or "" (unknown)
  std::string gpu_model;    // "" on CPU slots or when unknown
  int image_size = 0;       // pixels; 0 when unknown
  bool simulated = false;   // its cells are simulated (bench-sim-train): "simulated" in the title
  std::vector<GridColumn> columns;  // FP32 before AMP (then others), each by batch ascending
  std::vector<GridRow> rows;        // devices ascending
};

// Grids ordered by model, device kind (by name: "", "cpu", "cuda"), GPU model, image size.
// A later cell with the same configuration replaces an earlier one. Cells without the
// metric's figure read "no data".
std::vector<Grid> BuildGrids(const std::vector<benchfleet::v1::ResultCell>& cells,
                             GridMetric metric = GridMetric::kImagesPerSecond);

// The images/s figure as shown in tables: one decimal place ("1316.7").
std::string FormatRate(double images_per_second);
// The first column's header: "GPUs" (cuda or unknown) or "CPU slots" (cpu).
std::string DevicesHeader(const std::string& device_kind);

// One images/s cell as the grid shows it:
//   "1412.0 (n=1)", "1412.0 (1400.1–1420.3, n=3)", "1412.0 (95% CI 1400.1–1420.3, n=8)",
//   "1412.0 (1400.1–1420.3, n=3; 1 failed; 1 pending)", then " REGRESSION" when the
//   baseline verdict is BELOW and " ABOVE" when ABOVE, then "!" when some of its runs
//   failed a check (FailingChecksFootnote); without a successful run
//   "no data", "no data (1 failed)", "no data (2 pending)". Never a made-up zero.
std::string FormatCellText(const benchfleet::v1::ResultCell& cell);
// Where a cell's runs include some whose diagnosis has a failing check
// (failing_check_runs), FormatCellText ends in "!"; this is the footnote under the grids:
// "\n! 3 runs with failing checks; --strict leaves them out\n", "" when there is none.
std::string FailingChecksFootnote(const std::vector<benchfleet::v1::ResultCell>& cells);
// "7.39x (92.4%)", or "no data".
std::string FormatScaling(const std::optional<Scaling>& scaling);
// "0.93x REGRESSION", "1.01x within", "1.08x ABOVE"; "-" without a baseline.
std::string FormatBaselineComparison(const benchfleet::v1::BaselineComparison& baseline);
// "0.93x of 10440.0 images/s (job j-1): REGRESSION", "... : within bounds",
// "...: ABOVE"; "" when there is no baseline for the configuration.
std::string FormatBaselineVerdict(const benchfleet::v1::BaselineComparison& baseline);
// "below", "within", "above", or "" (no baseline).
std::string BaselineVerdictName(benchfleet::v1::BaselineVerdict verdict);

// One titled table of a grid, in the order RenderGridsTable prints them: the metric's grid
// (kMetric; rows: every grid row), then for images/s grids with multi-device rows the speedup
// and scaling-efficiency table (kScaling; rows: those with more than one device) or, without a
// 1-device row, only `note` ("<title>: no data (no 1-GPU cell)", no table), then where any
// cell has a baseline the "vs baseline" table (kBaseline; rows: every grid row). The cells'
// text is the text every renderer here prints; report/grid_view.h lays it out as JSON.
enum class GridSectionKind { kMetric, kScaling, kBaseline };
struct GridSection {
  GridSectionKind kind = GridSectionKind::kMetric;
  std::string title;
  TextTable table;           // header: devices header, then the columns' headers
  std::vector<size_t> rows;  // per table row, its index in grid.rows
  std::string note;          // a line printed instead of a table; "" otherwise
};
std::vector<GridSection> GridSections(const Grid& grid);

// Each grid under a title line ("resnet50 (cuda): median images/s"), then for images/s
// grids with multi-device rows a speedup / scaling-efficiency table, and where any cell
// has a baseline a "vs baseline" table; grids separated by a blank line; missing cells read
// "no data". Without cells: "no results yet\n".
std::string RenderGridsTable(const std::vector<Grid>& grids);
// The same as GitHub markdown, numeric columns right-aligned, titles as "### " headings.
std::string RenderGridsMarkdown(const std::vector<Grid>& grids);

// Long form, one line per cell, ordered by model, devices, precision, batch size:
// model,device_kind,devices,precision,batch_size,median_images_per_second,min,max,runs,
// energy_per_image_j,images_per_second_per_watt,power_w,sm_clock_mhz,temperature_c,
// failed_runs,pending_runs,ci95_low,ci95_high,cv,speedup,scaling_efficiency,
// baseline_ratio,baseline_verdict,gpu_model
// (precision as "fp32"/"amp"; rates with one decimal; a field is empty where there is no
// data, median/min/max included when the cell has no successful run). Header only when
// empty.
std::string RenderCellsCsv(const std::vector<benchfleet::v1::ResultCell>& cells);
// A JSON array of the cells (proto JSON, proto field names, all fields), same order, each
// with "speedup" and "scaling_efficiency" added (null where there is no data).
std::string RenderCellsJson(const std::vector<benchfleet::v1::ResultCell>& cells);

// The cells of a Results answer that match the request's model and gpu_model (an older
// benchd may answer with more), in the answer's order.
std::vector<benchfleet::v1::ResultCell> CellsMatching(
    const benchfleet::v1::ResultsRequest& request,
    const benchfleet::v1::ResultsResponse& response);
// `benchctl results --format json` and the web API's GET /api/v1/results, one function
// so that both print the same bytes: RenderCellsJson of CellsMatching.
std::string RenderResultsJson(const benchfleet::v1::ResultsRequest& request,
                              const benchfleet::v1::ResultsResponse& response);

}  // namespace bench::report
