#include "ctl/args.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bench::ctl {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<CliOptions> Parse(std::vector<std::string> args, std::string env = "") {
  return ParseArgs(args, env);
}

std::string Error(std::vector<std::string> args) {
  auto parsed = Parse(std::move(args));
  EXPECT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

TEST(ArgsTest, SubmitDefaults) {
  auto parsed = Parse({"submit", "--gpus", "8", "--bs", "256"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->command, Command::kSubmit);
  EXPECT_EQ(parsed->server, "127.0.0.1:7600");
  const auto& spec = parsed->submit.spec;
  EXPECT_EQ(spec.devices(), 8);
  EXPECT_EQ(spec.batch_size(), 256);
  EXPECT_EQ(spec.model(), "resnet50");
  EXPECT_EQ(spec.precision(), benchfleet::v1::PRECISION_FP32);
  EXPECT_EQ(spec.iterations(), 100);
  EXPECT_EQ(spec.warmup_iterations(), 10);
  EXPECT_EQ(spec.image_size(), 224);
  EXPECT_FALSE(parsed->submit.wait);
}

TEST(ArgsTest, SubmitAllFlagsBothSyntaxes) {
  auto parsed = Parse({"--server", "h:1", "submit", "--gpus=2", "--amp", "--bs", "64",
                       "--model=resnet50", "--iters", "500", "--warmup=50", "--image-size",
                       "64", "--name", "my run", "--label", "gpu=v100", "--label=site=a=b",
                       "--request-id", "r1", "--wait"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->server, "h:1");
  const auto& spec = parsed->submit.spec;
  EXPECT_EQ(spec.devices(), 2);
  EXPECT_EQ(spec.precision(), benchfleet::v1::PRECISION_AMP);
  EXPECT_EQ(spec.batch_size(), 64);
  EXPECT_EQ(spec.iterations(), 500);
  EXPECT_EQ(spec.warmup_iterations(), 50);
  EXPECT_EQ(spec.image_size(), 64);
  EXPECT_EQ(spec.name(), "my run");
  EXPECT_EQ(spec.labels().at("gpu"), "v100");
  EXPECT_EQ(spec.labels().at("site"), "a=b");
  EXPECT_EQ(spec.request_id(), "r1");
  EXPECT_TRUE(parsed->submit.wait);
}

TEST(ArgsTest, PrecisionFlag) {
  auto parsed = Parse({"submit", "--gpus", "1", "--bs", "1", "--precision", "AMP"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->submit.spec.precision(), benchfleet::v1::PRECISION_AMP);
  parsed = Parse({"submit", "--gpus", "1", "--bs", "1", "--amp", "--precision=amp"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(Error({"submit", "--gpus", "1", "--bs", "1", "--amp", "--precision", "fp32"}),
              HasSubstr("conflicts"));
  EXPECT_THAT(Error({"submit", "--gpus", "1", "--bs", "1", "--precision", "fp16"}),
              HasSubstr("--precision"));
}

TEST(ArgsTest, RangesAreLeftToTheServer) {
  auto parsed =
      Parse({"submit", "--gpus", "0", "--bs", "0", "--iters", "-5", "--warmup", "200"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->submit.spec.devices(), 0);
  EXPECT_EQ(parsed->submit.spec.batch_size(), 0);
  EXPECT_EQ(parsed->submit.spec.iterations(), -5);
  EXPECT_EQ(parsed->submit.spec.warmup_iterations(), 200);
}

TEST(ArgsTest, BadIntegersNameTheFlag) {
  EXPECT_THAT(Error({"submit", "--gpus", "x", "--bs", "1"}), HasSubstr("--gpus"));
  EXPECT_THAT(Error({"submit", "--gpus", "1", "--bs=1.5"}), HasSubstr("--bs"));
  EXPECT_THAT(Error({"submit", "--gpus", "1", "--bs", "1", "--iters", "9999999999"}),
              HasSubstr("--iters"));
  EXPECT_THAT(Error({"submit", "--gpus", "1", "--bs", "1", "--image-size", ""}),
              HasSubstr("--image-size"));
}

TEST(ArgsTest, SyntaxErrors) {
  EXPECT_THAT(Error({}), HasSubstr("missing command"));
  EXPECT_THAT(Error({"frobnicate"}), HasSubstr("frobnicate"));
  EXPECT_THAT(Error({"submit", "--gpus", "1", "--bs", "1", "--fast"}),
              HasSubstr("unknown flag --fast"));
  EXPECT_THAT(Error({"submit", "--gpus", "1", "--bs"}), HasSubstr("--bs: missing value"));
  EXPECT_THAT(Error({"submit", "--bs", "1"}), HasSubstr("--gpus"));
  EXPECT_THAT(Error({"submit", "--gpus", "1"}), HasSubstr("--bs"));
  EXPECT_THAT(Error({"submit", "--gpus", "1", "--bs", "1", "--label", "novalue"}),
              HasSubstr("--label"));
  EXPECT_THAT(Error({"submit", "--gpus", "1", "--bs", "1", "--wait=maybe"}),
              HasSubstr("--wait"));
  EXPECT_THAT(Error({"list", "--format", "xml"}), HasSubstr("--format"));
  EXPECT_THAT(Error({"results", "--format", "text"}), HasSubstr("--format"));
  EXPECT_THAT(Error({"list", "--gpus", "1"}), HasSubstr("unknown flag --gpus"));
  EXPECT_THAT(Error({"status"}), HasSubstr("missing JOB"));
  EXPECT_THAT(Error({"cancel", "a", "b"}), HasSubstr("\"b\""));
  EXPECT_THAT(Error({"list", "extra"}), HasSubstr("extra"));
  EXPECT_THAT(Error({"-x", "list"}), HasSubstr("-x"));
}

TEST(ArgsTest, ServerFromFlagEnvOrDefault) {
  EXPECT_EQ(Parse({"list"})->server, "127.0.0.1:7600");
  EXPECT_EQ(Parse({"list"}, "env:1")->server, "env:1");
  EXPECT_EQ(Parse({"--server=flag:2", "list"}, "env:1")->server, "flag:2");
  EXPECT_EQ(Parse({"list", "--server", "after:3"}, "env:1")->server, "after:3");
}

TEST(ArgsTest, Help) {
  EXPECT_EQ(Parse({"--help"})->command, Command::kHelp);
  EXPECT_EQ(Parse({"help"})->command, Command::kHelp);
  EXPECT_EQ(Parse({"submit", "-h"})->command, Command::kHelp);
  EXPECT_THAT(UsageText(), HasSubstr("usage: benchctl"));
}

TEST(ArgsTest, ResultsMetric) {
  auto results = Parse({"results", "--metric", "energy_per_image", "--format", "csv"});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ(results->metric, GridMetric::kEnergyPerImage);
  auto bad = Parse({"results", "--metric=joules"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("--metric"));
  EXPECT_FALSE(Parse({"list", "--metric", "power"}).ok()) << "results only";
}

TEST(ArgsTest, OtherCommands) {
  auto status = Parse({"status", "j-1", "--format", "json"});
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->command, Command::kStatus);
  EXPECT_EQ(status->job_id, "j-1");
  EXPECT_EQ(status->format, OutputFormat::kJson);

  auto cancel = Parse({"cancel", "j-2"});
  ASSERT_TRUE(cancel.ok());
  EXPECT_EQ(cancel->command, Command::kCancel);
  EXPECT_EQ(cancel->job_id, "j-2");

  auto list = Parse({"list"});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->format, OutputFormat::kText);

  auto agents = Parse({"agents", "--format=json"});
  ASSERT_TRUE(agents.ok());
  EXPECT_EQ(agents->command, Command::kAgents);
  EXPECT_EQ(agents->format, OutputFormat::kJson);

  auto results = Parse({"results"});
  ASSERT_TRUE(results.ok());
  EXPECT_EQ(results->format, OutputFormat::kTable);
  results = Parse({"results", "--model", "resnet50", "--format", "markdown"});
  ASSERT_TRUE(results.ok());
  EXPECT_EQ(results->model, "resnet50");
  EXPECT_EQ(results->format, OutputFormat::kMarkdown);
  EXPECT_EQ(Parse({"results", "--format", "csv"})->format, OutputFormat::kCsv);
  EXPECT_EQ(Parse({"results", "--format", "json"})->format, OutputFormat::kJson);
}

}  // namespace
}  // namespace bench::ctl
