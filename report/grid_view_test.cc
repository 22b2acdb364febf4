// The grids view: laid out as a page would (titles, headers, rows, notes) it is
// `benchctl results`' text table character for character, for grids with missing cells,
// without a 1-device row, with baselines and on CPU slots; and each cell carries the
// figures its text came from.
#include "report/grid_view.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "report/grid_test_cells.h"
#include "report/text_table.h"

namespace bench::report {
namespace {

using benchfleet::v1::PRECISION_AMP;
using benchfleet::v1::PRECISION_FP32;
using benchfleet::v1::ResultCell;
using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

// Every case the text table has: a missing cell, scaling, a baseline verdict, a cell
// without a successful run, a grid without a 1-device row (its note), CPU slots.
std::vector<ResultCell> Cells() {
  std::vector<ResultCell> cells = {
      Cell("resnet50", 8, PRECISION_AMP, 256, 10440.0),
      Cell("resnet50", 1, PRECISION_AMP, 128, 1316.7),
      Cell("resnet50", 8, PRECISION_FP32, 256, 2987.9),
      Cell("resnet50", 1, PRECISION_FP32, 256, 384.72),
      Cell("resnet50", 1, PRECISION_AMP, 256, 1412.0),
      Cell("resnet18", 2, PRECISION_FP32, 64, 900.0),
      Cell("resnet18", 4, PRECISION_FP32, 64, 1700.0),
      Cell("resnet50", 2, PRECISION_FP32, 2, 12.25, "cpu"),
      Cell("resnet50", 1, PRECISION_FP32, 2, 6.5, "cpu"),
  };
  cells[0].mutable_baseline()->set_verdict(benchfleet::v1::BASELINE_VERDICT_BELOW);
  cells[0].mutable_baseline()->set_ratio(0.9207);
  cells[2].set_runs(0);
  cells[2].set_failed_runs(1);
  return cells;
}

Struct Parse(const std::string& json) {
  Struct parsed;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  return parsed;
}

const Value& At(const Struct& s, const std::string& key) {
  static const Value kMissing;
  auto it = s.fields().find(key);
  EXPECT_NE(it, s.fields().end()) << key;
  return it == s.fields().end() ? kMissing : it->second;
}

const ListValue& List(const Struct& s, const std::string& key) { return At(s, key).list_value(); }

// The view laid out as RenderGridsTable lays out its grids: each table under its title,
// a note after the table before it, parts separated by a blank line.
std::string LayOut(const Struct& view) {
  std::vector<std::string> parts;
  for (const Value& grid : List(view, "grids").values()) {
    for (const Value& item : List(grid.struct_value(), "tables").values()) {
      const Struct& table = item.struct_value();
      if (!At(table, "note").string_value().empty()) {
        parts.back() += At(table, "note").string_value() + "\n";
        continue;
      }
      TextTable text;
      for (const Value& header : List(table, "header").values()) {
        text.header.push_back(header.string_value());
        text.align.push_back(Align::kRight);
      }
      for (const Value& row : List(table, "rows").values()) {
        std::vector<std::string> line = {At(row.struct_value(), "header").string_value()};
        for (const Value& cell : List(row.struct_value(), "cells").values()) {
          line.push_back(At(cell.struct_value(), "text").string_value());
        }
        text.rows.push_back(std::move(line));
      }
      parts.push_back(At(table, "title").string_value() + "\n" + RenderPlainTable(text));
    }
  }
  return absl::StrJoin(parts, "\n");
}

TEST(GridViewTest, LaidOutItIsTheTextTableCharacterForCharacter) {
  for (GridMetric metric : {GridMetric::kImagesPerSecond, GridMetric::kEnergyPerImage}) {
    const std::vector<Grid> grids = BuildGrids(Cells(), metric);
    const std::string table = RenderGridsTable(grids);
    if (metric == GridMetric::kImagesPerSecond) {
      ASSERT_NE(table.find("no data (no 1-GPU cell)"), std::string::npos) << table;
    }
    EXPECT_EQ(LayOut(Parse(RenderGridsViewJson(grids, metric))), table);
  }
}

TEST(GridViewTest, CellsCarryTheFiguresOfTheirText) {
  const Struct view = Parse(RenderGridsViewJson(BuildGrids(Cells()), GridMetric::kImagesPerSecond));
  EXPECT_EQ(At(view, "metric").string_value(), "images_per_second");
  ASSERT_EQ(List(view, "grids").values_size(), 3);  // resnet18 cuda, resnet50 cpu, resnet50 cuda
  const Struct& cuda = List(view, "grids").values(2).struct_value();
  EXPECT_EQ(At(cuda, "name").string_value(), "resnet50 (cuda)");
  EXPECT_EQ(At(cuda, "device_kind").string_value(), "cuda");
  const ListValue& columns = List(cuda, "columns");
  ASSERT_EQ(columns.values_size(), 3);
  EXPECT_EQ(At(columns.values(0).struct_value(), "header").string_value(), "FP32 bs256");
  EXPECT_EQ(At(columns.values(0).struct_value(), "precision").string_value(), "PRECISION_FP32");
  EXPECT_EQ(At(columns.values(0).struct_value(), "batch_size").number_value(), 256);

  const ListValue& tables = List(cuda, "tables");
  ASSERT_EQ(tables.values_size(), 3);
  const Struct& medians = tables.values(0).struct_value();
  EXPECT_EQ(At(medians, "kind").string_value(), "metric");
  EXPECT_EQ(At(medians, "title").string_value(), "resnet50 (cuda): median images/s");
  const Struct& eight = List(medians, "rows").values(1).struct_value();
  EXPECT_EQ(At(eight, "header").string_value(), "8");
  EXPECT_EQ(At(eight, "devices").number_value(), 8);
  const Struct& failed = List(eight, "cells").values(0).struct_value();
  EXPECT_EQ(At(failed, "text").string_value(), "no data (1 failed)");
  EXPECT_EQ(At(failed, "value").kind_case(), Value::kNullValue);
  EXPECT_EQ(At(At(failed, "cell").struct_value(), "failed_runs").number_value(), 1);
  EXPECT_EQ(At(List(eight, "cells").values(1).struct_value(), "cell").kind_case(),
            Value::kNullValue);  // no AMP bs128 cell on 8 GPUs
  const Struct& below = List(eight, "cells").values(2).struct_value();
  EXPECT_EQ(At(below, "text").string_value(), "10440.0 (10439.0–10441.0, n=3) REGRESSION");
  EXPECT_EQ(At(below, "value").number_value(), 10440.0);
  EXPECT_EQ(List(At(below, "cell").struct_value(), "job_ids").values_size(), 0);

  const Struct& scaling = tables.values(1).struct_value();
  EXPECT_EQ(At(scaling, "kind").string_value(), "scaling");
  ASSERT_EQ(List(scaling, "rows").values_size(), 1);  // the 8-GPU row only
  const Struct& speedup =
      List(List(scaling, "rows").values(0).struct_value(), "cells").values(2).struct_value();
  EXPECT_EQ(At(speedup, "text").string_value(), "7.39x (92.4%)");
  EXPECT_NEAR(At(speedup, "speedup").number_value(), 10440.0 / 1412.0, 1e-6);
  EXPECT_NEAR(At(speedup, "scaling_efficiency").number_value(), 10440.0 / 1412.0 / 8, 1e-6);

  const Struct& baseline = tables.values(2).struct_value();
  EXPECT_EQ(At(baseline, "kind").string_value(), "baseline");
  const Struct& ratio =
      List(List(baseline, "rows").values(1).struct_value(), "cells").values(2).struct_value();
  EXPECT_EQ(At(ratio, "text").string_value(), "0.92x REGRESSION");
  EXPECT_DOUBLE_EQ(At(ratio, "ratio").number_value(), 0.9207);
  EXPECT_EQ(At(ratio, "verdict").string_value(), "BASELINE_VERDICT_BELOW");

  const Struct& no_one = List(view, "grids").values(0).struct_value();
  const Struct& note = List(no_one, "tables").values(1).struct_value();
  EXPECT_EQ(At(note, "note").string_value(),
            "resnet18 (cuda): speedup and scaling efficiency vs 1 GPU: no data (no 1-GPU cell)");
  EXPECT_EQ(List(note, "rows").values_size(), 0);
}

TEST(GridViewTest, TheRequestFiltersAndTheMetricIsNamedWithoutGrids) {
  benchfleet::v1::ResultsResponse response;
  for (const ResultCell& cell : Cells()) *response.add_cells() = cell;
  benchfleet::v1::ResultsRequest request;
  request.set_model("resnet18");
  const Struct view = Parse(RenderResultsGridsJson(request, response, GridMetric::kPower));
  EXPECT_EQ(At(view, "metric").string_value(), "power");
  ASSERT_EQ(List(view, "grids").values_size(), 1);
  EXPECT_EQ(At(List(view, "grids").values(0).struct_value(), "model").string_value(), "resnet18");
  EXPECT_EQ(RenderResultsGridsJson(request, {}, GridMetric::kSmClock),
            "{\"metric\": \"sm_clock\", \"grids\": [], \"footnote\": \"\"}\n");
}

}  // namespace
}  // namespace bench::report
