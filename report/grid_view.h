// The results grids as data for a page to lay out (GET /api/v1/results/grids,
// docs/web-api.md): each grid's tables with their titles, headers and every cell's text
// exactly as `benchctl results` prints it (report/grid.h GridSections: one renderer), and
// beside each text the figures it was made from, so that a page can sort and colour cells
// without computing or formatting a figure of its own. Pure functions, no I/O.
#pragma once

#include <string>
#include <vector>

#include "benchfleet/v1/controller.pb.h"
#include "report/grid.h"

namespace bench::report {

// One JSON object and '\n', the web API's convention (report/json_output.h):
//   {"metric":"images_per_second","grids":[{"model","device_kind","gpu_model","image_size",
//    "name" (the titles' common part: "resnet50 224px (cuda, NVIDIA H100 80GB HBM3)"),
//    "columns":[{"header","precision","batch_size"}],
//    "tables":[{"kind":"metric"|"scaling"|"baseline","title","note","header":[...],
//               "rows":[{"header","devices","cells":[CELL...]}]}]}]}
// A metric CELL is {"text","value" (the figure shown, null: no data),"cell" (the
// ResultCell, proto JSON, job_ids emptied; null where the grid has no cell)}; a scaling
// CELL {"text","speedup","scaling_efficiency"} (null: no data); a baseline CELL
// {"text","ratio" (null: none),"verdict" (a BaselineVerdict name)}. A table with a
// `note` (the line benchctl prints instead, e.g. no 1-GPU cell) has no header and no rows.
// `metric`: the grids' (BuildGrids's argument), named in "metric" even without a grid.
// "footnote": grid.h's FailingChecksFootnote without its line breaks ("" when none).
std::string RenderGridsViewJson(const std::vector<Grid>& grids, GridMetric metric,
                                const std::string& footnote = "");

// The grids view of a Results answer: BuildGrids(CellsMatching(request, response), metric),
// the cells `benchctl results --metric M` lays out for the same request.
std::string RenderResultsGridsJson(const benchfleet::v1::ResultsRequest& request,
                                   const benchfleet::v1::ResultsResponse& response,
                                   GridMetric metric);

}  // namespace bench::report
