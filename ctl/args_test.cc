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

TEST(ArgsTest, CredentialFlagsBeforeOrAfterTheCommand) {
  auto parsed = Parse({"--tls-ca", "ca.pem", "--token-file=t", "cancel", "j-1", "--tls-cert",
                       "me.pem", "--tls-key=me.key"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->command, Command::kCancel);
  EXPECT_EQ(parsed->job_id, "j-1");
  EXPECT_EQ(parsed->connection.tls_ca, "ca.pem");
  EXPECT_EQ(parsed->connection.tls_cert, "me.pem");
  EXPECT_EQ(parsed->connection.tls_key, "me.key");
  EXPECT_EQ(parsed->connection.token_file, "t");
  EXPECT_EQ(Parse({"list"})->connection.tls_ca, "");
  EXPECT_FALSE(Parse({"list"})->connection.insecure);
  EXPECT_TRUE(Parse({"--insecure", "list"})->connection.insecure);
  EXPECT_TRUE(Parse({"list", "--insecure"})->connection.insecure);
  EXPECT_THAT(UsageText(), HasSubstr("--insecure"));
  EXPECT_THAT(Error({"list", "--tls-ca="}), HasSubstr("--tls-ca: empty path"));
  EXPECT_THAT(Error({"list", "--token-file"}), HasSubstr("--token-file"));
  EXPECT_THAT(UsageText(), HasSubstr("--token-file FILE"));
  EXPECT_THAT(UsageText(), HasSubstr("$BENCH_TOKEN"));
}

TEST(ArgsTest, Help) {
  EXPECT_EQ(Parse({"--help"})->command, Command::kHelp);
  EXPECT_EQ(Parse({"help"})->command, Command::kHelp);
  EXPECT_EQ(Parse({"submit", "-h"})->command, Command::kHelp);
  EXPECT_THAT(UsageText(), HasSubstr("usage: benchctl"));
}

TEST(ArgsTest, Version) {
  EXPECT_EQ(Parse({"--version"})->command, Command::kVersion);
  EXPECT_EQ(Parse({"version"})->command, Command::kVersion);
  EXPECT_EQ(Parse({"list", "--version"})->command, Command::kVersion);
  EXPECT_THAT(UsageText(), HasSubstr("\n  version "));
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
  // Real results unless --simulated asks for the simulated jobs' cells (issue 26).
  EXPECT_FALSE(Parse({"results"})->filter.simulated);
  EXPECT_TRUE(Parse({"results", "--simulated"})->filter.simulated);
}

TEST(ArgsTest, SweepLists) {
  auto parsed = Parse({"sweep", "--gpus", "1,8,32", "--precision=fp32,AMP", "--bs", "128,256",
                       "--repeat", "3", "--model", "resnet50", "--iters", "200", "--warmup",
                       "20", "--image-size", "128", "--name", "n", "--label", "a=b", "--wait",
                       "--again"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->command, Command::kSweep);
  const SweepOptions& sweep = parsed->sweep;
  EXPECT_EQ(sweep.gpus, (std::vector<int>{1, 8, 32}));
  EXPECT_EQ(sweep.precisions, (std::vector<benchfleet::v1::Precision>{
                                  benchfleet::v1::PRECISION_FP32, benchfleet::v1::PRECISION_AMP}));
  EXPECT_EQ(sweep.batch_sizes, (std::vector<int>{128, 256}));
  EXPECT_EQ(sweep.repeat, 3);
  EXPECT_TRUE(sweep.wait);
  EXPECT_TRUE(sweep.again);
  EXPECT_EQ(sweep.base.model(), "resnet50");
  EXPECT_EQ(sweep.base.iterations(), 200);
  EXPECT_EQ(sweep.base.warmup_iterations(), 20);
  EXPECT_EQ(sweep.base.image_size(), 128);
  EXPECT_EQ(sweep.base.name(), "n");
  EXPECT_EQ(sweep.base.labels().at("a"), "b");
  EXPECT_EQ(sweep.base.devices(), 0);
  EXPECT_EQ(sweep.base.batch_size(), 0);

  auto defaults = Parse({"sweep", "--gpus", "1", "--bs", "64"});
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->sweep.repeat, 1);
  EXPECT_EQ(defaults->sweep.precisions,
            (std::vector<benchfleet::v1::Precision>{benchfleet::v1::PRECISION_FP32}));
  EXPECT_FALSE(defaults->sweep.wait);
  EXPECT_FALSE(defaults->sweep.again);
  EXPECT_EQ(defaults->sweep.base.iterations(), 100);
}

TEST(ArgsTest, SweepErrorsNameTheFlag) {
  EXPECT_THAT(Error({"sweep", "--gpus", "1,,8", "--bs", "1"}),
              HasSubstr("--gpus: empty item in \"1,,8\""));
  EXPECT_THAT(Error({"sweep", "--gpus", "1,8,", "--bs", "1"}), HasSubstr("--gpus: empty item"));
  EXPECT_THAT(Error({"sweep", "--gpus", "", "--bs", "1"}), HasSubstr("--gpus: empty item"));
  EXPECT_THAT(Error({"sweep", "--gpus", "1,x", "--bs", "1"}),
              HasSubstr("--gpus: expected integers, got \"x\""));
  EXPECT_THAT(Error({"sweep", "--gpus", "8,1,8", "--bs", "1"}),
              HasSubstr("--gpus: 8 given twice"));
  EXPECT_THAT(Error({"sweep", "--gpus", "1", "--bs", "64,1.5"}), HasSubstr("--bs: expected"));
  EXPECT_THAT(Error({"sweep", "--gpus", "1", "--bs", "64,64"}), HasSubstr("--bs: 64 given twice"));
  EXPECT_THAT(Error({"sweep", "--gpus", "1", "--bs", "1", "--precision", "fp32,fp16"}),
              HasSubstr("--precision: expected fp32, tf32, amp or bf16, got \"fp16\""));
  EXPECT_THAT(Error({"sweep", "--gpus", "1", "--bs", "1", "--precision", "amp,AMP"}),
              HasSubstr("--precision: AMP given twice"));
  EXPECT_THAT(Error({"sweep", "--gpus", "1", "--bs", "1", "--precision", "amp,"}),
              HasSubstr("--precision: empty item"));
  EXPECT_THAT(Error({"sweep", "--gpus", "1", "--bs", "1", "--repeat", "0"}),
              HasSubstr("--repeat: must be at least 1"));
  EXPECT_THAT(Error({"sweep", "--gpus", "1", "--bs", "1", "--repeat", "two"}),
              HasSubstr("--repeat: expected an integer"));
  EXPECT_THAT(Error({"sweep", "--gpus", "1", "--bs", "1", "--amp"}),
              HasSubstr("--amp is not allowed in sweep"));
  EXPECT_THAT(Error({"sweep", "--gpus", "1", "--bs", "1", "--request-id", "x"}),
              HasSubstr("--request-id is not allowed in sweep"));
  EXPECT_THAT(Error({"sweep", "--bs", "1"}), HasSubstr("sweep: --gpus is required"));
  EXPECT_THAT(Error({"sweep", "--gpus", "1"}), HasSubstr("sweep: --bs is required"));
  EXPECT_THAT(Error({"sweep", "--gpus", "1", "--bs", "1", "extra"}), HasSubstr("\"extra\""));
  EXPECT_THAT(Error({"submit", "--gpus", "1,8", "--bs", "1"}), HasSubstr("--gpus"));
}

TEST(ArgsTest, ResultsFilters) {
  auto parsed = Parse({"results", "--model", "resnet50", "--gpu-model", "NVIDIA H100 80GB HBM3",
                       "--node", "dgx-1", "--since", "2026-11-21T10:00:00Z", "--until", "24h",
                       "--label", "site=a", "--label=run=nightly"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const ResultsFilter& filter = parsed->filter;
  EXPECT_EQ(parsed->model, "resnet50");
  EXPECT_EQ(filter.gpu_model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(filter.node, "dgx-1");
  ASSERT_TRUE(filter.since.at.has_value());
  EXPECT_EQ(absl::ToUnixSeconds(*filter.since.at), 1795255200);
  ASSERT_TRUE(filter.until.ago.has_value());
  EXPECT_EQ(*filter.until.ago, absl::Hours(24));
  EXPECT_EQ(filter.labels.at("site"), "a");
  EXPECT_EQ(filter.labels.at("run"), "nightly");
  EXPECT_TRUE(parsed->submit.spec.labels().empty());

  const absl::Time now = absl::FromUnixSeconds(1800000000);
  EXPECT_EQ(ResolveTimeBound(filter.since, now), 1795255200000);
  EXPECT_EQ(ResolveTimeBound(filter.until, now), (1800000000 - 86400) * 1000LL);
  EXPECT_EQ(ResolveTimeBound(TimeBound(), now), 0);
  auto days = Parse({"results", "--since", "7d"});
  ASSERT_TRUE(days.ok()) << days.status();
  EXPECT_EQ(*days->filter.since.ago, absl::Hours(24 * 7));
  auto offset = Parse({"results", "--since", "2026-11-21T12:00:00+02:00"});
  ASSERT_TRUE(offset.ok()) << offset.status();
  EXPECT_EQ(absl::ToUnixSeconds(*offset->filter.since.at), 1795255200);

  EXPECT_THAT(Error({"results", "--since", "yesterday"}), HasSubstr("--since: expected"));
  EXPECT_THAT(Error({"results", "--until", "-5h"}), HasSubstr("--until: expected"));
  EXPECT_THAT(Error({"results", "--since", "d"}), HasSubstr("--since"));
  EXPECT_THAT(Error({"results", "--label", "novalue"}), HasSubstr("--label"));
  EXPECT_THAT(Error({"results", "--node"}), HasSubstr("--node: missing value"));
}

TEST(ArgsTest, GpusBaselinesCompareLogs) {
  auto gpus = Parse({"gpus", "--outliers", "--threshold", "7.5", "--model", "resnet50",
                     "--format", "json"});
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_EQ(gpus->command, Command::kGpus);
  EXPECT_TRUE(gpus->outliers);
  EXPECT_DOUBLE_EQ(gpus->threshold_pct, 7.5);
  EXPECT_EQ(gpus->model, "resnet50");
  EXPECT_EQ(gpus->format, OutputFormat::kJson);
  EXPECT_EQ(Parse({"gpus"})->format, OutputFormat::kText);
  EXPECT_THAT(Error({"gpus", "--threshold", "five"}), HasSubstr("--threshold: expected a number"));
  EXPECT_THAT(Error({"gpus", "--format", "csv"}), HasSubstr("--format"));

  auto baseline = Parse({"baseline", "j-1", "--lower", "3", "--upper=10"});
  ASSERT_TRUE(baseline.ok()) << baseline.status();
  EXPECT_EQ(baseline->command, Command::kBaseline);
  EXPECT_EQ(baseline->job_id, "j-1");
  EXPECT_DOUBLE_EQ(*baseline->lower_pct, 3);
  EXPECT_DOUBLE_EQ(*baseline->upper_pct, 10);
  EXPECT_THAT(Error({"baseline"}), HasSubstr("baseline: missing JOB id"));
  EXPECT_THAT(Error({"baseline", "j-1", "--lower", "x"}), HasSubstr("--lower"));
  EXPECT_EQ(Parse({"baselines", "--format", "json"})->command, Command::kBaselines);

  auto compare = Parse({"compare", "j-1", "j-2", "--format", "json"});
  ASSERT_TRUE(compare.ok()) << compare.status();
  EXPECT_EQ(compare->command, Command::kCompare);
  EXPECT_EQ(compare->job_id, "j-1");
  EXPECT_EQ(compare->job_id_b, "j-2");
  EXPECT_THAT(Error({"compare", "j-1"}), HasSubstr("compare: expected two job ids"));
  EXPECT_THAT(Error({"compare", "a", "b", "c"}), HasSubstr("\"c\""));

  auto logs = Parse({"logs", "j-1"});
  ASSERT_TRUE(logs.ok()) << logs.status();
  EXPECT_EQ(logs->command, Command::kLogs);
  EXPECT_EQ(logs->format, OutputFormat::kDllogger);
  EXPECT_FALSE(logs->follow);
  auto follow = Parse({"logs", "j-1", "-f", "--format", "mllog"});
  ASSERT_TRUE(follow.ok()) << follow.status();
  EXPECT_TRUE(follow->follow);
  EXPECT_EQ(follow->format, OutputFormat::kMllog);
  EXPECT_EQ(Parse({"logs", "--follow", "j-1", "--format=jsonl"})->format, OutputFormat::kJsonl);
  EXPECT_TRUE(Parse({"logs", "--follow", "j-1"})->follow);
  EXPECT_THAT(Error({"logs", "j-1", "--format", "csv"}),
              HasSubstr("--format: unknown format \"csv\" (expected dllogger, mllog or jsonl)"));
  EXPECT_THAT(Error({"logs"}), HasSubstr("logs: missing JOB id"));
  EXPECT_THAT(Error({"list", "-f"}), HasSubstr("unknown flag -f"));
}

TEST(ArgsTest, SubmitShape) {
  auto both = Parse({"submit", "--nodes", "2", "--gpus-per-node", "8", "--bs", "64"});
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->submit.spec.devices(), 16);
  EXPECT_EQ(both->submit.spec.nodes(), 2);
  EXPECT_EQ(both->submit.spec.devices_per_node(), 8);

  auto agree = Parse({"submit", "--gpus=16", "--nodes=2", "--gpus-per-node=8", "--bs=64"});
  ASSERT_TRUE(agree.ok()) << agree.status();
  EXPECT_EQ(agree->submit.spec.devices(), 16);

  auto one = Parse({"submit", "--gpus", "16", "--gpus-per-node", "8", "--bs", "64"});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->submit.spec.devices(), 16);
  EXPECT_EQ(one->submit.spec.nodes(), 0);
  EXPECT_EQ(one->submit.spec.devices_per_node(), 8);

  auto plain = Parse({"submit", "--gpus", "8", "--bs", "64"});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->submit.spec.nodes(), 0);
  EXPECT_EQ(plain->submit.spec.devices_per_node(), 0);

  EXPECT_EQ(Error({"submit", "--gpus", "8", "--nodes", "2", "--gpus-per-node", "8", "--bs", "1"}),
            "--gpus 8 disagrees with --nodes 2 x --gpus-per-node 8 (= 16); give two of them, "
            "or make them agree");
  EXPECT_EQ(Error({"submit", "--gpus", "8", "--nodes", "3", "--bs", "1"}),
            "--gpus 8 is not a multiple of --nodes 3");
  EXPECT_EQ(Error({"submit", "--gpus", "8", "--gpus-per-node", "3", "--bs", "1"}),
            "--gpus 8 is not a multiple of --gpus-per-node 3");
  EXPECT_EQ(Error({"submit", "--nodes", "2", "--bs", "1"}),
            "submit: --gpus is required (or both --nodes and --gpus-per-node)");
  EXPECT_EQ(Error({"submit", "--gpus-per-node", "2", "--bs", "1"}),
            "submit: --gpus is required (or both --nodes and --gpus-per-node)");
  EXPECT_THAT(Error({"submit", "--bs", "1"}), HasSubstr("submit: --gpus is required"));
  EXPECT_THAT(Error({"submit", "--nodes", "x", "--gpus", "1", "--bs", "1"}),
              HasSubstr("--nodes: expected an integer, got \"x\""));
  EXPECT_THAT(Error({"submit", "--gpus-per-node", "--gpus", "1", "--bs", "1"}),
              HasSubstr("--gpus-per-node"));
  EXPECT_THAT(Error({"submit", "--nodes", "65536", "--gpus-per-node", "65536", "--bs", "1"}),
              HasSubstr("too many devices"));
}

TEST(ArgsTest, SubmitConstraints) {
  auto parsed = Parse({"submit", "--gpus", "8", "--bs", "64", "--node", "dgx-01", "--node=dgx-02",
                       "--node", "dgx-01", "--node-label", "gpu=h100", "--node-label=rack=a=b",
                       "--node-label", "empty="});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const auto& spec = parsed->submit.spec;
  EXPECT_THAT(spec.allowed_nodes(), ::testing::ElementsAre("dgx-01", "dgx-02"));
  EXPECT_EQ(spec.node_labels().size(), 3u);
  EXPECT_EQ(spec.node_labels().at("gpu"), "h100");
  EXPECT_EQ(spec.node_labels().at("rack"), "a=b");
  EXPECT_EQ(spec.node_labels().at("empty"), "");
  EXPECT_TRUE(spec.labels().empty());  // --label stays the job's own labels
  EXPECT_TRUE(parsed->filter.node.empty());

  EXPECT_EQ(Error({"submit", "--gpus", "1", "--bs", "1", "--node-label", "gpu"}),
            "--node-label: expected key=value, got \"gpu\"");
  EXPECT_EQ(Error({"submit", "--gpus", "1", "--bs", "1", "--node-label", "=h100"}),
            "--node-label: expected key=value, got \"=h100\"");
  EXPECT_EQ(Error({"submit", "--gpus", "1", "--bs", "1", "--node="}), "--node: empty agent name");
  EXPECT_THAT(Error({"submit", "--gpus", "1", "--bs", "1", "--node"}), HasSubstr("--node"));
  // results keeps its own --node filter.
  EXPECT_EQ(Parse({"results", "--node", "dgx-01"})->filter.node, "dgx-01");
  EXPECT_THAT(Error({"list", "--node-label", "a=b"}), HasSubstr("unknown flag --node-label"));
}

TEST(ArgsTest, SubmitData) {
  auto parsed = Parse({"submit", "--gpus", "2", "--bs", "4", "--data", "imagefolder", "--data-path",
                       "/data/imagenet/train", "--loader-threads", "6"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->submit.spec.data(), benchfleet::v1::DATA_SOURCE_IMAGEFOLDER);
  EXPECT_EQ(parsed->submit.spec.data_path(), "/data/imagenet/train");
  EXPECT_EQ(parsed->submit.spec.loader_threads(), 6);
  parsed = Parse({"submit", "--gpus", "1", "--bs", "1", "--data=COCO", "--data-path=/c"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->submit.spec.data(), benchfleet::v1::DATA_SOURCE_COCO);
  // Left out: unset, for benchd to fill (synthetic).
  parsed = Parse({"submit", "--gpus", "1", "--bs", "1"});
  EXPECT_EQ(parsed->submit.spec.data(), benchfleet::v1::DATA_SOURCE_UNSPECIFIED);
  EXPECT_EQ(Error({"submit", "--gpus", "1", "--bs", "1", "--data", "imagenet"}),
            "--data: expected synthetic, imagefolder or coco, got \"imagenet\"");
  EXPECT_THAT(Error({"submit", "--gpus", "1", "--bs", "1", "--loader-threads", "x"}),
              HasSubstr("--loader-threads"));
  // sweep shares them.
  parsed =
      Parse({"sweep", "--gpus", "1,2", "--bs", "4", "--data", "imagefolder", "--data-path", "/d"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->sweep.base.data_path(), "/d");
  // The help lists the models and the data sources from common/names.h.
  EXPECT_THAT(UsageText(), HasSubstr("--model resnet18|"));
  EXPECT_THAT(UsageText(), HasSubstr("--data synthetic|imagefolder|coco"));
}

TEST(ArgsTest, SubmitLimits) {
  auto parsed = Parse({"submit", "--gpus", "1", "--bs", "1", "--wall-time", "2h",
                       "--hang-timeout=90s"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->submit.spec.wall_time_limit_s(), 7200);
  EXPECT_EQ(parsed->submit.spec.hang_timeout_s(), 90);
  auto unset = Parse({"submit", "--gpus", "1", "--bs", "1"});
  EXPECT_EQ(unset->submit.spec.wall_time_limit_s(), 0);
  EXPECT_EQ(unset->submit.spec.hang_timeout_s(), 0);

  EXPECT_EQ(*ParseDurationSeconds("wall-time", "90s"), 90);
  EXPECT_EQ(*ParseDurationSeconds("wall-time", "30m"), 1800);
  EXPECT_EQ(*ParseDurationSeconds("wall-time", "2h"), 7200);
  EXPECT_EQ(*ParseDurationSeconds("wall-time", "1h30m"), 5400);
  EXPECT_EQ(*ParseDurationSeconds("wall-time", "1d"), 86400);
  EXPECT_EQ(*ParseDurationSeconds("wall-time", "600"), 600);

  const std::string expected = "expected a duration (90s, 30m, 2h, 1h30m, 1d) or seconds";
  EXPECT_EQ(Error({"submit", "--gpus", "1", "--bs", "1", "--wall-time", "soon"}),
            "--wall-time: " + expected + ", got \"soon\"");
  EXPECT_EQ(Error({"submit", "--gpus", "1", "--bs", "1", "--hang-timeout", "5x"}),
            "--hang-timeout: " + expected + ", got \"5x\"");
  EXPECT_EQ(Error({"submit", "--gpus", "1", "--bs", "1", "--wall-time", "0"}),
            "--wall-time: must be positive, got \"0\"");
  EXPECT_EQ(Error({"submit", "--gpus", "1", "--bs", "1", "--wall-time", "-5m"}),
            "--wall-time: must be positive, got \"-5m\"");
  EXPECT_EQ(Error({"submit", "--gpus", "1", "--bs", "1", "--hang-timeout", "1.5s"}),
            "--hang-timeout: expected whole seconds, got \"1.5s\"");
  EXPECT_EQ(Error({"submit", "--gpus", "1", "--bs", "1", "--wall-time", "inf"}),
            "--wall-time: " + expected + ", got \"inf\"");
  EXPECT_EQ(Error({"submit", "--gpus", "1", "--bs", "1", "--wall-time", "100000d"}),
            "--wall-time: too long, got \"100000d\"");
  EXPECT_THAT(Error({"submit", "--gpus", "1", "--bs", "1", "--wall-time", ""}),
              HasSubstr("--wall-time: expected a duration"));
}

TEST(ArgsTest, Queue) {
  auto parsed = Parse({"queue"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->command, Command::kQueue);
  EXPECT_EQ(parsed->format, OutputFormat::kTable);
  EXPECT_EQ(Parse({"queue", "--format", "json"})->format, OutputFormat::kJson);
  EXPECT_EQ(Parse({"queue", "--format=csv"})->format, OutputFormat::kCsv);
  EXPECT_EQ(Parse({"queue", "--format=table"})->format, OutputFormat::kTable);
  EXPECT_EQ(Error({"queue", "--format", "markdown"}),
            "--format: unknown format \"markdown\" (expected table, csv or json)");
  EXPECT_EQ(Error({"queue", "j-1"}), "queue: unexpected argument \"j-1\"");
  EXPECT_EQ(Error({"queue", "--gpus", "1"}), "unknown flag --gpus for queue");
}

TEST(ArgsTest, UsageNamesTheNewFlagsAndQueue) {
  const std::string usage = UsageText();
  for (const char* text : {"--nodes N", "--gpus-per-node N", "--node AGENT", "--node-label k=v",
                           "--wall-time D", "--hang-timeout D", "queue [--format table|csv|json]"}) {
    EXPECT_THAT(usage, HasSubstr(text));
  }
}

}  // namespace
}  // namespace bench::ctl
