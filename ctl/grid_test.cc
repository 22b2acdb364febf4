#include "ctl/grid.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bench::ctl {
namespace {

using benchfleet::v1::PRECISION_AMP;
using benchfleet::v1::PRECISION_FP32;
using benchfleet::v1::ResultCell;
using ::testing::HasSubstr;
using ::testing::Not;

ResultCell Cell(const std::string& model, int devices, benchfleet::v1::Precision precision,
                int bs, double median, const std::string& kind = "cuda") {
  ResultCell cell;
  cell.set_model(model);
  cell.set_devices(devices);
  cell.set_precision(precision);
  cell.set_batch_size(bs);
  cell.set_median_images_per_second(median);
  cell.set_min_images_per_second(median - 1);
  cell.set_max_images_per_second(median + 1);
  cell.set_runs(3);
  cell.add_job_ids("j-" + std::to_string(devices));
  cell.set_device_kind(kind);
  return cell;
}

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
            "GPUs  FP32 bs128  FP32 bs256  AMP bs128  AMP bs256\n"
            "   1       381.5       384.7     1316.7     1412.0\n"
            "   8      2948.2      2987.9    no data    10440.0\n");
}

TEST(GridTest, Markdown) {
  EXPECT_EQ(RenderGridsMarkdown(BuildGrids(Cells())),
            "### resnet50 (cuda): median images/s\n"
            "\n"
            "| GPUs | FP32 bs128 | FP32 bs256 | AMP bs128 | AMP bs256 |\n"
            "|-----:|-----------:|-----------:|----------:|----------:|\n"
            "|    1 |      381.5 |      384.7 |    1316.7 |    1412.0 |\n"
            "|    8 |     2948.2 |     2987.9 |   no data |   10440.0 |\n");
}

TEST(GridTest, Csv) {
  EXPECT_EQ(RenderCellsCsv(Cells()),
            "model,device_kind,devices,precision,batch_size,median_images_per_second,min,max,runs,"
            "energy_per_image_j,images_per_second_per_watt,power_w,sm_clock_mhz,temperature_c\n"
            "resnet50,cuda,1,fp32,128,381.5,380.5,382.5,3,,,,,\n"
            "resnet50,cuda,1,fp32,256,384.7,383.7,385.7,3,,,,,\n"
            "resnet50,cuda,1,amp,128,1316.7,1315.7,1317.7,3,,,,,\n"
            "resnet50,cuda,1,amp,256,1412.0,1411.0,1413.0,3,,,,,\n"
            "resnet50,cuda,8,fp32,128,2948.2,2947.2,2949.2,3,,,,,\n"
            "resnet50,cuda,8,fp32,256,2987.9,2986.9,2988.9,3,,,,,\n"
            "resnet50,cuda,8,amp,256,10440.0,10439.0,10441.0,3,,,,,\n");
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
  EXPECT_THAT(RenderCellsCsv(cells), HasSubstr(",3,0.212,4.706,,1980,\n"));
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
  EXPECT_THAT(table, HasSubstr("cpu-net (cpu): median images/s\nCPU slots  FP32 bs8\n"));
  EXPECT_THAT(table, HasSubstr("\n\nssd (cuda): median images/s\nGPUs  AMP bs32\n"
                               "   4     800.3\n"));
  EXPECT_THAT(RenderGridsMarkdown(grids), HasSubstr("### ssd (cuda)"));
}

TEST(GridTest, NoResults) {
  EXPECT_EQ(RenderGridsTable({}), "no results yet\n");
  EXPECT_EQ(RenderGridsMarkdown({}), "no results yet\n");
  EXPECT_EQ(RenderCellsCsv({}),
            "model,device_kind,devices,precision,batch_size,median_images_per_second,min,max,runs,"
            "energy_per_image_j,images_per_second_per_watt,power_w,sm_clock_mhz,temperature_c\n");
}

TEST(GridTest, MissingCellIsNeverZero) {
  auto grids = BuildGrids({Cell("m", 1, PRECISION_FP32, 32, 10), Cell("m", 2, PRECISION_AMP, 32, 20)});
  std::string table = RenderGridsTable(grids);
  EXPECT_THAT(table, Not(HasSubstr(" 0.0")));
  EXPECT_THAT(table, HasSubstr("   1       10.0   no data\n"));
  EXPECT_THAT(table, HasSubstr("   2    no data      20.0\n"));
}

}  // namespace
}  // namespace bench::ctl
