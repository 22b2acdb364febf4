#include "report/grid_view.h"

#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "report/json_output.h"

namespace bench::report {
namespace {

using benchfleet::v1::ResultCell;

std::string OptionalNumber(const std::optional<double>& value) {
  return value ? JsonNumber(*value) : "null";
}

std::string StringArray(const std::vector<std::string>& texts) {
  std::vector<std::string> quoted;
  quoted.reserve(texts.size());
  for (const std::string& text : texts) quoted.push_back(JsonQuote(text));
  return absl::StrCat("[", absl::StrJoin(quoted, ","), "]");
}

const char* KindName(GridSectionKind kind) {
  switch (kind) {
    case GridSectionKind::kMetric: return "metric";
    case GridSectionKind::kScaling: return "scaling";
    case GridSectionKind::kBaseline: return "baseline";
  }
  return "";
}

std::string CellJson(const ResultCell& cell) {
  ResultCell copy = cell;
  copy.clear_job_ids();
  std::string json = ToJson(copy);
  json.pop_back();  // '\n'
  return json;
}

// The figures behind one cell's text; `c` indexes the grid's columns.
std::string CellFigures(GridSectionKind kind, const GridRow& row, size_t c,
                        const std::string& text) {
  const std::optional<ResultCell>& cell = c < row.cells.size() ? row.cells[c] : std::nullopt;
  JsonObject out;
  out.Add("text", text);
  switch (kind) {
    case GridSectionKind::kMetric:
      out.AddRaw("value", OptionalNumber(c < row.median.size() ? row.median[c] : std::nullopt));
      out.AddRaw("cell", cell ? CellJson(*cell) : "null");
      break;
    case GridSectionKind::kScaling: {
      const std::optional<Scaling> scaling = c < row.scaling.size() ? row.scaling[c] : std::nullopt;
      out.AddOptional("speedup", scaling ? std::optional<double>(scaling->speedup) : std::nullopt);
      out.AddOptional("scaling_efficiency",
                      scaling ? std::optional<double>(scaling->efficiency) : std::nullopt);
      break;
    }
    case GridSectionKind::kBaseline: {
      const bool ratio = cell && cell->baseline().has_ratio();
      out.AddOptional("ratio",
                      ratio ? std::optional<double>(cell->baseline().ratio()) : std::nullopt);
      out.Add("verdict", benchfleet::v1::BaselineVerdict_Name(
                             cell ? cell->baseline().verdict()
                                  : benchfleet::v1::BASELINE_VERDICT_UNSPECIFIED));
      break;
    }
  }
  return out.Build();
}

std::string SectionJson(const Grid& grid, const GridSection& section) {
  std::vector<std::string> rows;
  for (size_t r = 0; r < section.table.rows.size() && r < section.rows.size(); ++r) {
    const std::vector<std::string>& line = section.table.rows[r];
    const GridRow& row = grid.rows[section.rows[r]];
    std::vector<std::string> cells;
    for (size_t c = 0; c + 1 < line.size(); ++c) {
      cells.push_back(CellFigures(section.kind, row, c, line[c + 1]));
    }
    rows.push_back(JsonObject()
                       .Add("header", line.empty() ? std::string() : line[0])
                       .Add("devices", row.devices)
                       .AddRaw("cells", absl::StrCat("[", absl::StrJoin(cells, ","), "]"))
                       .Build());
  }
  return JsonObject()
      .Add("kind", KindName(section.kind))
      .Add("title", section.title)
      .Add("note", section.note)
      .AddRaw("header", StringArray(section.table.header))
      .AddRaw("rows", absl::StrCat("[", absl::StrJoin(rows, ","), "]"))
      .Build();
}

std::string GridJson(const Grid& grid) {
  std::vector<std::string> columns;
  for (const GridColumn& column : grid.columns) {
    columns.push_back(JsonObject()
                          .Add("header", column.header)
                          .Add("precision", benchfleet::v1::Precision_Name(column.precision))
                          .Add("batch_size", column.batch_size)
                          .Build());
  }
  std::vector<std::string> tables;
  const std::vector<GridSection> sections = GridSections(grid);
  for (const GridSection& section : sections) tables.push_back(SectionJson(grid, section));
  // The grid's name: its first title without the metric's (": median images/s"; no metric
  // title holds ": ").
  const std::string& title = sections.front().title;
  return JsonObject()
      .Add("model", grid.model)
      .Add("device_kind", grid.device_kind)
      .Add("gpu_model", grid.gpu_model)
      .Add("image_size", grid.image_size)
      .Add("simulated", grid.simulated)
      .Add("name", title.substr(0, title.rfind(": ")))
      .AddRaw("columns", absl::StrCat("[", absl::StrJoin(columns, ","), "]"))
      .AddRaw("tables", absl::StrCat("[", absl::StrJoin(tables, ","), "]"))
      .Build();
}

}  // namespace

std::string RenderGridsViewJson(const std::vector<Grid>& grids, GridMetric metric,
                                const std::string& footnote) {
  std::vector<std::string> items;
  items.reserve(grids.size());
  for (const Grid& grid : grids) items.push_back(GridJson(grid));
  return absl::StrCat(JsonObject()
                          .Add("metric", GridMetricName(metric))
                          .AddRaw("grids", absl::StrCat("[", absl::StrJoin(items, ","), "]"))
                          .Add("footnote", std::string(absl::StripAsciiWhitespace(footnote)))
                          .Build(),
                      "\n");
}

std::string RenderResultsGridsJson(const benchfleet::v1::ResultsRequest& request,
                                   const benchfleet::v1::ResultsResponse& response,
                                   GridMetric metric) {
  const std::vector<benchfleet::v1::ResultCell> cells = CellsMatching(request, response);
  return RenderGridsViewJson(BuildGrids(cells, metric), metric, FailingChecksFootnote(cells));
}

}  // namespace bench::report
