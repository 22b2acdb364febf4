#include "report/text_table.h"

#include "gtest/gtest.h"

namespace bench::report {
namespace {

TEST(TextTableTest, Plain) {
  TextTable table;
  table.header = {"NAME", "N"};
  table.align = {Align::kLeft, Align::kRight};
  table.rows = {{"a", "1000"}, {"longer", "2"}, {"short"}};
  EXPECT_EQ(RenderPlainTable(table),
            "NAME       N\n"
            "a       1000\n"
            "longer     2\n"
            "short\n");
}

TEST(TextTableTest, Markdown) {
  TextTable table;
  table.header = {"k", "value"};
  table.align = {Align::kLeft, Align::kRight};
  table.rows = {{"a|b", "1"}};
  EXPECT_EQ(RenderMarkdownTable(table),
            "| k    | value |\n"
            "|:-----|------:|\n"
            "| a\\|b |     1 |\n");
}

}  // namespace
}  // namespace bench::report
