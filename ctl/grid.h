// The results grid: ResultCells (one per model, devices, precision, batch size) arranged
// like published throughput tables, and rendered as text, markdown, CSV or JSON.
// Pure functions, no I/O.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchfleet/v1/types.pb.h"

namespace bench::ctl {

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
// The cell's figure for `metric`; nullopt: no data.
std::optional<double> CellValue(const benchfleet::v1::ResultCell& cell, GridMetric metric);
// As shown in tables: images/s one decimal, J and images/W three, W and °C one, MHz none.
std::string FormatMetricValue(GridMetric metric, double value);

struct GridColumn {
  benchfleet::v1::Precision precision;
  int batch_size;
  std::string header;  // "FP32 bs128", "AMP bs256"
};

struct GridRow {
  int devices;
  std::vector<std::optional<double>> median;  // per column; nullopt: no cell ("no data")
};

// One grid per (model, device kind); a model is measured on one kind in practice.
struct Grid {
  GridMetric metric = GridMetric::kImagesPerSecond;
  std::string model;
  std::string device_kind;  // "cuda", "cpu" or "" (unknown)
  std::vector<GridColumn> columns;  // FP32 before AMP (then others), each by batch ascending
  std::vector<GridRow> rows;        // devices ascending
};

// Grids ordered by model then device kind. A later cell with the same key replaces an
// earlier one.
// Cells without the metric's figure read "no data".
std::vector<Grid> BuildGrids(const std::vector<benchfleet::v1::ResultCell>& cells,
                             GridMetric metric = GridMetric::kImagesPerSecond);

// The images/s figure as shown in tables: one decimal place ("1316.7").
std::string FormatRate(double images_per_second);
// The first column's header: "GPUs" (cuda or unknown) or "CPU slots" (cpu).
std::string DevicesHeader(const std::string& device_kind);

// Each grid under a title line ("resnet50 (cuda): median images/s"), grids separated by
// a blank line; missing cells read "no data". Without cells: "no results yet\n".
std::string RenderGridsTable(const std::vector<Grid>& grids);
// The same as GitHub markdown, numeric columns right-aligned, titles as "### " headings.
std::string RenderGridsMarkdown(const std::vector<Grid>& grids);

// Long form, one line per cell, ordered by model, devices, precision, batch size:
// model,device_kind,devices,precision,batch_size,median_images_per_second,min,max,runs,
// energy_per_image_j,images_per_second_per_watt,power_w,sm_clock_mhz,temperature_c
// (precision as "fp32"/"amp"; rates with one decimal; a telemetry field is empty where
// there is no data). Header only when empty.
std::string RenderCellsCsv(const std::vector<benchfleet::v1::ResultCell>& cells);
// A JSON array of the cells (proto JSON, proto field names, all fields), same order.
std::string RenderCellsJson(const std::vector<benchfleet::v1::ResultCell>& cells);

}  // namespace bench::ctl
