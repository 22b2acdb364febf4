#include "report/grid.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/grid_test_cells.h"

namespace bench::report {
namespace {

using benchfleet::v1::PRECISION_AMP;
using benchfleet::v1::PRECISION_FP32;
using benchfleet::v1::ResultCell;
using ::testing::HasSubstr;
using ::testing::Not;

// Deliberately shuffled: AMP before FP32, large batches first, 8 GPUs before 1.
std::vector<ResultCell> Cells() {
  return {
      Cell("resnet50", 8, PRECISION_AMP, 256, 10440.0),
      Cell("resnet50", 1, PRECISION_AMP, 128, 1316.7),
      Cell("resnet50", 8, PRECISION_FP32, 256, 2987.9),
      Cell("resnet50", 1, PRECISION_FP32, 256, 384.72),
      Cell("resnet50", 1, PRECISION_FP32, 128, 381.46),
      Cell("resnet50", 8, PRECISION_FP32, 128, 2948.2),
      Cell("resnet50", 1, PRECISION_AMP, 256, 1412.0),
      // 8 GPUs, AMP bs128 missing.
  };
}

TEST(GridTest, BuildsOrderedColumnsAndRows) {
  auto grids = BuildGrids(Cells());
  ASSERT_EQ(grids.size(), 1u);
  const Grid& grid = grids[0];
  EXPECT_EQ(grid.model, "resnet50");
  ASSERT_EQ(grid.columns.size(), 4u);
  EXPECT_EQ(grid.columns[0].header, "FP32 bs128");
  EXPECT_EQ(grid.columns[1].header, "FP32 bs256");
  EXPECT_EQ(grid.columns[2].header, "AMP bs128");
  EXPECT_EQ(grid.columns[3].header, "AMP bs256");
  ASSERT_EQ(grid.rows.size(), 2u);
  EXPECT_EQ(grid.rows[0].devices, 1);
  EXPECT_EQ(grid.rows[1].devices, 8);
  EXPECT_EQ(grid.rows[1].median[2], std::nullopt);
  EXPECT_EQ(grid.rows[1].median[3], 10440.0);
}

TEST(GridTest, BatchSizesSortNumerically) {
  auto grids = BuildGrids({Cell("m", 1, PRECISION_FP32, 1024, 1),
                           Cell("m", 1, PRECISION_FP32, 64, 2)});
  ASSERT_EQ(grids.size(), 1u);
  EXPECT_EQ(grids[0].columns[0].header, "FP32 bs64");
  EXPECT_EQ(grids[0].columns[1].header, "FP32 bs1024");
}

TEST(GridTest, Table) {
  EXPECT_EQ(RenderGridsTable(BuildGrids(Cells())),
            "resnet50 (cuda): median images/s\n"
            "GPUs                   FP32 bs128                   FP32 bs256                    "
            "AMP bs128                       AMP bs256\n"
            "   1     381.5 (380.5–382.5, n=3)     384.7 (383.7–385.7, n=3)  "
            "1316.7 (1315.7–1317.7, n=3)     1412.0 (1411.0–1413.0, n=3)\n"
            "   8  2948.2 (2947.2–2949.2, n=3)  2987.9 (2986.9–2988.9, n=3)                      "
            "no data  10440.0 (10439.0–10441.0, n=3)\n"
            "\n"
            "resnet50 (cuda): speedup and scaling efficiency vs 1 GPU\n"
            "GPUs     FP32 bs128     FP32 bs256  AMP bs128      AMP bs256\n"
            "   8  7.73x (96.6%)  7.77x (97.1%)    no data  7.39x (92.4%)\n");
}

TEST(GridTest, Markdown) {
  EXPECT_EQ(RenderGridsMarkdown(BuildGrids(Cells())),
            "### resnet50 (cuda): median images/s\n"
            "\n"
            "| GPUs |                  FP32 bs128 |                  FP32 bs256 |"
            "                   AMP bs128 |                      AMP bs256 |\n"
            "|-----:|----------------------------:|----------------------------:|"
            "----------------------------:|-------------------------------:|\n"
            "|    1 |    381.5 (380.5–382.5, n=3) |    384.7 (383.7–385.7, n=3) |"
            " 1316.7 (1315.7–1317.7, n=3) |    1412.0 (1411.0–1413.0, n=3) |\n"
            "|    8 | 2948.2 (2947.2–2949.2, n=3) | 2987.9 (2986.9–2988.9, n=3) |"
            "                     no data | 10440.0 (10439.0–10441.0, n=3) |\n"
            "\n"
            "### resnet50 (cuda): speedup and scaling efficiency vs 1 GPU\n"
            "\n"
            "| GPUs |    FP32 bs128 |    FP32 bs256 | AMP bs128 |     AMP bs256 |\n"
            "|-----:|--------------:|--------------:|----------:|--------------:|\n"
            "|    8 | 7.73x (96.6%) | 7.77x (97.1%) |   no data | 7.39x (92.4%) |\n");
}

const char kCsvHeader[] =
    "model,device_kind,devices,precision,batch_size,median_images_per_second,min,max,runs,"
    "energy_per_image_j,images_per_second_per_watt,power_w,sm_clock_mhz,temperature_c,"
    "failed_runs,pending_runs,ci95_low,ci95_high,cv,speedup,scaling_efficiency,"
    "baseline_ratio,baseline_verdict,gpu_model,image_size\n";

TEST(GridTest, Csv) {
  EXPECT_EQ(RenderCellsCsv(Cells()),
            std::string(kCsvHeader) +
                "resnet50,cuda,1,fp32,128,381.5,380.5,382.5,3,,,,,,0,0,,,,,,,,,\n"
                "resnet50,cuda,1,fp32,256,384.7,383.7,385.7,3,,,,,,0,0,,,,,,,,,\n"
                "resnet50,cuda,1,amp,128,1316.7,1315.7,1317.7,3,,,,,,0,0,,,,,,,,,\n"
                "resnet50,cuda,1,amp,256,1412.0,1411.0,1413.0,3,,,,,,0,0,,,,,,,,,\n"
                "resnet50,cuda,8,fp32,128,2948.2,2947.2,2949.2,3,,,,,,0,0,,,,7.729,0.966,,,,\n"
                "resnet50,cuda,8,fp32,256,2987.9,2986.9,2988.9,3,,,,,,0,0,,,,7.766,0.971,,,,\n"
                "resnet50,cuda,8,amp,256,10440.0,10439.0,10441.0,3,,,,,,0,0,,,,7.394,0.924,,,,\n");
  EXPECT_THAT(RenderCellsCsv({Cell("odd,\"name\"", 1, PRECISION_FP32, 1, 1)}),
              HasSubstr("\n\"odd,\"\"name\"\"\",cuda,1,"));
}

TEST(GridTest, TelemetryMetricFillsTheGridAndMissingCellsSayNoData) {
  std::vector<ResultCell> cells = {Cell("resnet50", 1, PRECISION_AMP, 256, 1412.0),
                                   Cell("resnet50", 8, PRECISION_AMP, 256, 10440.0)};
  cells[0].set_median_energy_per_image_j(0.2125);
  cells[0].set_median_images_per_second_per_watt(4.70588);
  cells[0].set_median_sm_clock_mhz(1980.4);
  std::string table = RenderGridsTable(BuildGrids(cells, GridMetric::kEnergyPerImage));
  EXPECT_THAT(table, HasSubstr("resnet50 (cuda): median energy per image (J)"));
  EXPECT_THAT(table, HasSubstr("0.212"));
  EXPECT_THAT(table, HasSubstr("no data"));  // the 8-GPU cell has no telemetry
  EXPECT_THAT(table, Not(HasSubstr("10440")));
  EXPECT_THAT(RenderGridsTable(BuildGrids(cells, GridMetric::kSmClock)), HasSubstr("1980"));
  EXPECT_THAT(RenderCellsCsv(cells), HasSubstr(",3,0.212,4.706,,1980,,0,0,"));
  EXPECT_EQ(ParseGridMetric("images_per_watt").value(), GridMetric::kImagesPerWatt);
  EXPECT_THAT(std::string(ParseGridMetric("watts").status().message()),
              HasSubstr("--metric: unknown metric \"watts\""));
}

TEST(GridTest, Json) {
  std::string json = RenderCellsJson(Cells());
  EXPECT_EQ(json.front(), '[');
  EXPECT_THAT(json, HasSubstr("\"median_images_per_second\":10440"));
  EXPECT_THAT(json, HasSubstr("\"batch_size\":128"));
  EXPECT_THAT(json, HasSubstr("\"precision\":\"PRECISION_AMP\""));
  EXPECT_THAT(json, HasSubstr("\"job_ids\":[\"j-8\"]"));
  // Ordered like the CSV: the 1-GPU FP32 bs128 cell comes first.
  EXPECT_LT(json.find("381.46"), json.find("10440"));
  EXPECT_EQ(RenderCellsJson({}), "[]\n");
}

TEST(GridTest, OneGridPerModel) {
  auto cells = Cells();
  cells.push_back(Cell("ssd", 4, PRECISION_AMP, 32, 800.31));
  cells.push_back(Cell("cpu-net", 2, PRECISION_FP32, 8, 12.0, "cpu"));
  auto grids = BuildGrids(cells);
  ASSERT_EQ(grids.size(), 3u);
  EXPECT_EQ(grids[0].model, "cpu-net");
  EXPECT_EQ(grids[1].model, "resnet50");
  EXPECT_EQ(grids[2].model, "ssd");
  std::string table = RenderGridsTable(grids);
  EXPECT_THAT(table, HasSubstr("cpu-net (cpu): median images/s\n"
                               "CPU slots               FP32 bs8\n"
                               "        2  12.0 (11.0–13.0, n=3)\n"
                               "cpu-net (cpu): speedup and scaling efficiency vs 1 CPU slot: "
                               "no data (no 1-CPU slot cell)\n"));
  EXPECT_THAT(table, HasSubstr("\n\nssd (cuda): median images/s\nGPUs                  AMP bs32\n"
                               "   4  800.3 (799.3–801.3, n=3)\n"
                               "ssd (cuda): speedup and scaling efficiency vs 1 GPU: no data "
                               "(no 1-GPU cell)\n"));
  EXPECT_THAT(RenderGridsMarkdown(grids), HasSubstr("### ssd (cuda)"));
}

// Simulated cells (bench-sim-train, issue 26) get grids of their own, titled "simulated",
// and the JSON says so of each cell; a request selects one kind, never both.
TEST(GridTest, SimulatedCellsAreAGridOfTheirOwnTitledSimulated) {
  std::vector<ResultCell> cells = {Cell("resnet50", 1, PRECISION_FP32, 256, 384.72),
                                   Cell("resnet50", 1, PRECISION_FP32, 256, 999.0)};
  cells[1].set_simulated(true);
  const auto grids = BuildGrids(cells);
  ASSERT_EQ(grids.size(), 2u);
  EXPECT_FALSE(grids[0].simulated);
  EXPECT_TRUE(grids[1].simulated);
  const std::string table = RenderGridsTable(grids);
  EXPECT_THAT(table, HasSubstr("resnet50 (cuda): median images/s\n"));
  EXPECT_THAT(table, HasSubstr("resnet50 (cuda, simulated): median images/s\n"));
  EXPECT_THAT(RenderGridsMarkdown(grids), HasSubstr("### resnet50 (cuda, simulated)"));
  EXPECT_THAT(RenderCellsJson({cells[1]}), HasSubstr("\"simulated\":true"));

  benchfleet::v1::ResultsResponse response;
  *response.add_cells() = cells[0];
  *response.add_cells() = cells[1];
  benchfleet::v1::ResultsRequest real;
  ASSERT_EQ(CellsMatching(real, response).size(), 1u);
  EXPECT_FALSE(CellsMatching(real, response)[0].simulated());
  benchfleet::v1::ResultsRequest simulated;
  simulated.set_simulated(true);
  ASSERT_EQ(CellsMatching(simulated, response).size(), 1u);
  EXPECT_TRUE(CellsMatching(simulated, response)[0].simulated());
}

TEST(GridTest, NoResults) {
  EXPECT_EQ(RenderGridsTable({}), "no results yet\n");
  EXPECT_EQ(RenderGridsMarkdown({}), "no results yet\n");
  EXPECT_EQ(RenderCellsCsv({}), kCsvHeader);
}

TEST(GridTest, MissingCellIsNeverZero) {
  auto grids = BuildGrids({Cell("m", 1, PRECISION_FP32, 32, 10), Cell("m", 2, PRECISION_AMP, 32, 20)});
  std::string table = RenderGridsTable(grids);
  EXPECT_THAT(table, Not(HasSubstr(" 0.0")));
  EXPECT_THAT(table, HasSubstr("   1  10.0 (9.0–11.0, n=3)                no data\n"));
  EXPECT_THAT(table, HasSubstr("   2               no data  20.0 (19.0–21.0, n=3)\n"));
  // The 2-device AMP cell has no 1-device AMP cell to scale against.
  EXPECT_THAT(table, HasSubstr("   2    no data   no data\n"));
}

// A cell with runs whose checks failed ends in "!", and the grids get the footnote.
TEST(GridTest, RunsWithFailingChecksAreMarkedWithAFootnote) {
  ResultCell cell = Cell("m", 1, PRECISION_AMP, 256, 1412.0);
  ResultCell other = Cell("m", 2, PRECISION_AMP, 256, 2800.0);
  EXPECT_EQ(FailingChecksFootnote({cell, other}), "");
  cell.set_failing_check_runs(2);
  other.set_failing_check_runs(1);
  EXPECT_EQ(FormatCellText(cell).back(), '!');
  EXPECT_EQ(FormatCellText(cell), "1412.0 (1411.0–1413.0, n=3)!");
  EXPECT_EQ(FailingChecksFootnote({cell, other}),
            "\n! 3 runs with failing checks; --strict leaves them out\n");
  other.set_failing_check_runs(0);
  EXPECT_EQ(FailingChecksFootnote({cell}).find("! 2 runs"), 1u);
  cell.set_failing_check_runs(1);
  EXPECT_EQ(FailingChecksFootnote({cell}),
            "\n! 1 run with failing checks; --strict leaves them out\n");
}

TEST(GridTest, CellTextShowsSpreadCountsAndHonestGaps) {
  ResultCell cell = Cell("m", 1, PRECISION_AMP, 256, 1412.0);
  cell.set_min_images_per_second(1400.1);
  cell.set_max_images_per_second(1420.3);
  EXPECT_EQ(FormatCellText(cell), "1412.0 (1400.1–1420.3, n=3)");
  cell.set_failed_runs(1);
  EXPECT_EQ(FormatCellText(cell), "1412.0 (1400.1–1420.3, n=3; 1 failed)");
  cell.set_pending_runs(2);
  EXPECT_EQ(FormatCellText(cell), "1412.0 (1400.1–1420.3, n=3; 1 failed; 2 pending)");

  ResultCell ci = Cell("m", 1, PRECISION_AMP, 256, 1412.0);
  ci.set_runs(8);
  ci.set_ci95_low_images_per_second(1405.25);
  ci.set_ci95_high_images_per_second(1418.0);
  EXPECT_EQ(FormatCellText(ci), "1412.0 (95% CI 1405.2–1418.0, n=8)");

  ResultCell one = Cell("m", 1, PRECISION_AMP, 256, 1412.0);
  one.set_runs(1);
  EXPECT_EQ(FormatCellText(one), "1412.0 (n=1)");

  // No successful run: never a number.
  ResultCell none = Cell("m", 1, PRECISION_AMP, 256, 0);
  none.set_runs(0);
  none.set_min_images_per_second(0);
  none.set_max_images_per_second(0);
  EXPECT_EQ(FormatCellText(none), "no data");
  none.set_failed_runs(1);
  EXPECT_EQ(FormatCellText(none), "no data (1 failed)");
  none.set_failed_runs(0);
  none.set_pending_runs(1);
  EXPECT_EQ(FormatCellText(none), "no data (1 pending)");
  EXPECT_EQ(CellValue(none, GridMetric::kImagesPerSecond), std::nullopt);
  const std::string csv = RenderCellsCsv({none});
  EXPECT_THAT(csv, HasSubstr("\nm,cuda,1,amp,256,,,,0,,,,,,0,1,,,,,,,,,\n"));
}

TEST(GridTest, BaselineVerdictsFlagTheGridAndGetTheirOwnTable) {
  std::vector<ResultCell> cells = {Cell("m", 1, PRECISION_AMP, 256, 1300.0),
                                   Cell("m", 8, PRECISION_AMP, 256, 11000.0),
                                   Cell("m", 1, PRECISION_FP32, 256, 380.0)};
  cells[0].mutable_baseline()->set_verdict(benchfleet::v1::BASELINE_VERDICT_BELOW);
  cells[0].mutable_baseline()->set_ratio(0.9207);
  cells[0].mutable_baseline()->set_baseline_images_per_second(1412.0);
  cells[1].mutable_baseline()->set_verdict(benchfleet::v1::BASELINE_VERDICT_ABOVE);
  cells[1].mutable_baseline()->set_ratio(1.0536);
  cells[2].mutable_baseline()->set_verdict(benchfleet::v1::BASELINE_VERDICT_WITHIN);
  cells[2].mutable_baseline()->set_ratio(1.01);
  const std::string table = RenderGridsTable(BuildGrids(cells));
  EXPECT_THAT(table, HasSubstr("1300.0 (1299.0–1301.0, n=3) REGRESSION"));
  EXPECT_THAT(table, HasSubstr("11000.0 (10999.0–11001.0, n=3) ABOVE"));
  EXPECT_THAT(table, HasSubstr("m (cuda): median vs baseline\n"
                               "GPUs    FP32 bs256         AMP bs256\n"
                               "   1  1.01x within  0.92x REGRESSION\n"
                               "   8             -       1.05x ABOVE\n"));
  EXPECT_THAT(table, HasSubstr("   8     no data  8.46x (105.8%)\n"));
  const std::string csv = RenderCellsCsv(cells);
  EXPECT_THAT(csv, HasSubstr(",0.921,below,,\n"));
  EXPECT_THAT(csv, HasSubstr(",8.462,1.058,1.054,above,,\n"));
  EXPECT_EQ(FormatBaselineComparison({}), "-");
}

TEST(GridTest, OneGridPerGpuModelAndScalingWithinIt) {
  std::vector<ResultCell> cells = {Cell("m", 1, PRECISION_AMP, 256, 1000.0),
                                   Cell("m", 8, PRECISION_AMP, 256, 7000.0),
                                   Cell("m", 8, PRECISION_AMP, 256, 16000.0)};
  cells[0].set_gpu_model("V100");
  cells[1].set_gpu_model("V100");
  cells[2].set_gpu_model("H100");  // no 1-GPU H100 cell
  auto grids = BuildGrids(cells);
  ASSERT_EQ(grids.size(), 2u);
  EXPECT_EQ(grids[0].gpu_model, "H100");
  EXPECT_EQ(grids[1].gpu_model, "V100");
  ASSERT_TRUE(grids[1].rows[1].scaling[0].has_value());
  EXPECT_DOUBLE_EQ(grids[1].rows[1].scaling[0]->speedup, 7.0);
  EXPECT_DOUBLE_EQ(grids[1].rows[1].scaling[0]->efficiency, 0.875);
  EXPECT_FALSE(grids[0].rows[0].scaling[0].has_value());
  EXPECT_FALSE(ScalingOf(cells[2], cells).has_value());
  EXPECT_DOUBLE_EQ(ScalingOf(cells[1], cells)->speedup, 7.0);
  const std::string table = RenderGridsTable(grids);
  EXPECT_THAT(table, HasSubstr("m (cuda, H100): median images/s\n"));
  EXPECT_THAT(table, HasSubstr("m (cuda, H100): speedup and scaling efficiency vs 1 GPU: no data"));
  EXPECT_THAT(table, HasSubstr("m (cuda, V100): speedup and scaling efficiency vs 1 GPU\n"
                               "GPUs      AMP bs256\n"
                               "   8  7.00x (87.5%)\n"));
  const std::string json = RenderCellsJson(cells);
  EXPECT_THAT(json, HasSubstr("\"speedup\":7,\"scaling_efficiency\":0.875}"));
  EXPECT_THAT(json, HasSubstr("\"speedup\":null,\"scaling_efficiency\":null}"));
}

// Cells are told apart by their whole configuration (common/configuration_key.h): image
// size and device kind make grids of their own, and scaling divides by the 1-device
// cell of the same configuration. Grids list device kinds by name, the CSV by image size
// before devices.
TEST(GridTest, GridsAndScalingFollowTheWholeConfiguration) {
  std::vector<ResultCell> cells = {
      Cell("m", 8, PRECISION_AMP, 256, 8000.0),      Cell("m", 1, PRECISION_AMP, 256, 1000.0),
      Cell("m", 8, PRECISION_AMP, 256, 6000.0),      Cell("m", 1, PRECISION_AMP, 256, 2000.0),
      Cell("m", 2, PRECISION_AMP, 256, 30.0, "cpu"), Cell("m", 1, PRECISION_AMP, 256, 20.0, "cpu")};
  for (ResultCell& cell : cells) cell.set_image_size(224);
  cells[2].set_image_size(160);
  cells[3].set_image_size(160);
  auto grids = BuildGrids(cells);
  ASSERT_EQ(grids.size(), 3u);
  EXPECT_EQ(grids[0].device_kind, "cpu");
  EXPECT_EQ(grids[1].device_kind, "cuda");
  EXPECT_EQ(grids[1].image_size, 160);
  EXPECT_EQ(grids[2].device_kind, "cuda");
  EXPECT_EQ(grids[2].image_size, 224);
  ASSERT_EQ(grids[2].rows.size(), 2u);
  ASSERT_TRUE(grids[2].rows[1].scaling[0].has_value());
  EXPECT_DOUBLE_EQ(grids[2].rows[1].scaling[0]->speedup, 8.0);
  ASSERT_TRUE(grids[1].rows[1].scaling[0].has_value());
  EXPECT_DOUBLE_EQ(grids[1].rows[1].scaling[0]->speedup, 3.0);
  EXPECT_DOUBLE_EQ(ScalingOf(cells[0], cells)->speedup, 8.0);
  EXPECT_DOUBLE_EQ(ScalingOf(cells[2], cells)->speedup, 3.0);
  EXPECT_DOUBLE_EQ(ScalingOf(cells[4], cells)->speedup, 1.5);
  const std::string csv = RenderCellsCsv(cells);
  const std::vector<std::string> lines = absl::StrSplit(csv, '\n');
  ASSERT_EQ(lines.size(), 8u);  // header, six cells, ""
  EXPECT_THAT(lines[1], ::testing::StartsWith("m,cuda,1,amp,256,2000.0,"));
  EXPECT_THAT(lines[2], ::testing::StartsWith("m,cuda,8,amp,256,6000.0,"));
  EXPECT_THAT(lines[3], ::testing::StartsWith("m,cpu,1,amp,256,20.0,"));
  EXPECT_THAT(lines[4], ::testing::StartsWith("m,cuda,1,amp,256,1000.0,"));
  EXPECT_THAT(lines[5], ::testing::StartsWith("m,cpu,2,amp,256,30.0,"));
  EXPECT_THAT(lines[6], ::testing::StartsWith("m,cuda,8,amp,256,8000.0,"));
}

TEST(GridTest, FailedRepeatAndRunningCellInTheGrid) {
  std::vector<ResultCell> cells = {Cell("m", 1, PRECISION_AMP, 256, 1412.0),
                                   Cell("m", 8, PRECISION_AMP, 256, 0)};
  cells[0].set_failed_runs(1);
  cells[1].set_runs(0);
  cells[1].set_pending_runs(1);
  const std::string table = RenderGridsTable(BuildGrids(cells));
  EXPECT_THAT(table, HasSubstr("   1  1412.0 (1411.0–1413.0, n=3; 1 failed)\n"));
  EXPECT_THAT(table, HasSubstr("   8                    no data (1 pending)\n"));
  EXPECT_THAT(table, HasSubstr("   8    no data\n"));  // no speedup from a running cell
  EXPECT_THAT(table, Not(HasSubstr("0.0x")));
}

}  // namespace
}  // namespace bench::report
