// The results grid: ResultCells (one per model, devices, precision, batch size) arranged
// like published throughput tables, and rendered as text, markdown, CSV or JSON.
// Pure functions, no I/O.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "benchfleet/v1/types.pb.h"

namespace bench::ctl {

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
  std::string model;
  std::string device_kind;  // "cuda", "cpu" or "" (unknown)
  std::vector<GridColumn> columns;  // FP32 before AMP (then others), each by batch ascending
  std::vector<GridRow> rows;        // devices ascending
};

// Grids ordered by model then device kind. A later cell with the same key replaces an
// earlier one.
std::vector<Grid> BuildGrids(const std::vector<benchfleet::v1::ResultCell>& cells);

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
// model,device_kind,devices,precision,batch_size,median_images_per_second,min,max,runs
// (precision as "fp32"/"amp"; rates with one decimal). Header only when empty.
std::string RenderCellsCsv(const std::vector<benchfleet::v1::ResultCell>& cells);
// A JSON array of the cells (proto JSON, proto field names, all fields), same order.
std::string RenderCellsJson(const std::vector<benchfleet::v1::ResultCell>& cells);

}  // namespace bench::ctl
