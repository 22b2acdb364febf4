#include "worker/agent/labels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bench::agent {
namespace {

using ::testing::HasSubstr;

TEST(LabelsTest, ParsesKeyValuePairs) {
  auto labels = ParseLabels({"zone=eu-1", "gpu.model=H100", "note=a=b", "empty="});
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_EQ(*labels, (std::map<std::string, std::string>{
                         {"zone", "eu-1"}, {"gpu.model", "H100"}, {"note", "a=b"}, {"empty", ""}}));
  EXPECT_TRUE(ParseLabels({})->empty());
}

TEST(LabelsTest, BadSyntaxNamesTheFlagAndTheSpec) {
  for (const char* bad : {"zone", "=x", "-zone=x", "zo ne=x", "zone=a\tb"}) {
    SCOPED_TRACE(bad);
    auto labels = ParseLabels({bad});
    ASSERT_FALSE(labels.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(labels.status()));
    EXPECT_THAT(std::string(labels.status().message()), HasSubstr("--label '"));
    EXPECT_THAT(std::string(labels.status().message()), HasSubstr(bad));
  }
  EXPECT_THAT(std::string(ParseLabels({"zone"}).status().message()), HasSubstr("KEY=VALUE"));
}

TEST(LabelsTest, AKeyGivenTwiceIsAnError) {
  auto labels = ParseLabels({"zone=a", "zone=b"});
  ASSERT_FALSE(labels.ok());
  EXPECT_THAT(std::string(labels.status().message()), HasSubstr("given twice"));
}

TEST(LabelsTest, ExtractsEveryOccurrenceOfTheFlag) {
  std::vector<std::string> args = {"bench-agent", "--label", "a=1",   "--controller=x:1",
                                   "--label=b=2", "-label",  "c=3",   "--name",
                                   "n",           "--",      "--label", "d=4"};
  auto values = ExtractRepeatedFlag("label", &args);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(*values, (std::vector<std::string>{"a=1", "b=2", "c=3"}));
  EXPECT_EQ(args, (std::vector<std::string>{"bench-agent", "--controller=x:1", "--name", "n",
                                            "--", "--label", "d=4"}));
}

TEST(LabelsTest, AFlagWithoutAValueIsAnError) {
  std::vector<std::string> args = {"bench-agent", "--label"};
  auto values = ExtractRepeatedFlag("label", &args);
  ASSERT_FALSE(values.ok());
  EXPECT_THAT(std::string(values.status().message()), HasSubstr("--label"));
}

}  // namespace
}  // namespace bench::agent
