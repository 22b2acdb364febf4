#include "ctl/sweep.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace bench::ctl {
namespace {

namespace v1 = benchfleet::v1;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

SweepOptions Parsed(std::vector<std::string> args) {
  args.insert(args.begin(), "sweep");
  auto parsed = ParseArgs(args, "");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? parsed->sweep : SweepOptions();
}

std::vector<std::string> Ids(const std::vector<SweepJob>& jobs) {
  std::vector<std::string> ids;
  for (const SweepJob& job : jobs) ids.push_back(job.spec.request_id());
  return ids;
}

TEST(SweepTest, ExpandsEveryCombinationInOrder) {
  auto jobs = ExpandSweep(Parsed({"--gpus", "1,8", "--precision", "fp32,amp", "--bs",
                                  "128,256", "--repeat", "2", "--iters", "50"}));
  ASSERT_EQ(jobs.size(), 16u);
  EXPECT_EQ(jobs[0].cell, "g1-fp32-bs128-r1");
  EXPECT_EQ(jobs[1].cell, "g1-fp32-bs128-r2");
  EXPECT_EQ(jobs[2].cell, "g1-fp32-bs256-r1");
  EXPECT_EQ(jobs[4].cell, "g1-amp-bs128-r1");
  EXPECT_EQ(jobs[15].cell, "g8-amp-bs256-r2");
  const v1::JobSpec& last = jobs[15].spec;
  EXPECT_EQ(last.devices(), 8);
  EXPECT_EQ(last.precision(), v1::PRECISION_AMP);
  EXPECT_EQ(last.batch_size(), 256);
  EXPECT_EQ(last.iterations(), 50);
  EXPECT_EQ(last.model(), "resnet50");
  EXPECT_THAT(last.request_id(), MatchesRegex("sweep-[0-9a-f]{16}-g8-amp-bs256-r2"));
  EXPECT_LE(last.request_id().size(), 64u);
  std::set<std::string> unique;
  for (const std::string& id : Ids(jobs)) unique.insert(id);
  EXPECT_EQ(unique.size(), jobs.size());
}

TEST(SweepTest, RequestIdsAreDeterministic) {
  const std::vector<std::string> args = {"--gpus", "1,8", "--precision", "amp", "--bs", "256",
                                         "--label", "site=a", "--label", "run=n"};
  const auto first = Ids(ExpandSweep(Parsed(args)));
  EXPECT_EQ(first, Ids(ExpandSweep(Parsed(args))));
  // Label order, --wait and --server do not change a job's identity.
  EXPECT_EQ(first, Ids(ExpandSweep(Parsed({"--label", "run=n", "--label", "site=a", "--gpus",
                                           "1,8", "--precision", "amp", "--bs", "256", "--wait",
                                           "--server", "h:1"}))));
  // What the jobs run does.
  auto with = [&args](std::vector<std::string> more) {
    std::vector<std::string> all = args;
    all.insert(all.end(), more.begin(), more.end());
    return Ids(ExpandSweep(Parsed(all)));
  };
  EXPECT_NE(first, with({"--iters", "200"}));
  EXPECT_NE(first, with({"--warmup", "5"}));
  EXPECT_NE(first, with({"--image-size", "64"}));
  EXPECT_NE(first, with({"--model", "ssd"}));
  EXPECT_NE(first, with({"--name", "other"}));
  EXPECT_NE(first, with({"--label", "site=b"}));
  // Widening the sweep keeps the cells already there.
  const auto wider = Ids(ExpandSweep(Parsed({"--gpus", "1,8,32", "--precision", "amp", "--bs",
                                             "256", "--label", "site=a", "--label", "run=n",
                                             "--repeat", "2"})));
  EXPECT_EQ(wider[0], first[0]);
  EXPECT_EQ(wider[2], first[1]);
}

TEST(SweepTest, ConstraintsAndLimitsPassThrough) {
  const std::vector<std::string> args = {"--gpus", "1,8", "--bs", "256"};
  auto with = [&args](std::vector<std::string> more) {
    std::vector<std::string> all = args;
    all.insert(all.end(), more.begin(), more.end());
    return ExpandSweep(Parsed(all));
  };
  const auto jobs = with({"--node", "dgx-01", "--node-label", "gpu=h100", "--wall-time", "30m",
                          "--hang-timeout", "5m"});
  ASSERT_EQ(jobs.size(), 2u);
  for (const SweepJob& job : jobs) {
    EXPECT_THAT(job.spec.allowed_nodes(), ::testing::ElementsAre("dgx-01"));
    EXPECT_EQ(job.spec.node_labels().at("gpu"), "h100");
    EXPECT_EQ(job.spec.wall_time_limit_s(), 1800);
    EXPECT_EQ(job.spec.hang_timeout_s(), 300);
  }
  const auto plain = Ids(with({}));
  // Where the jobs may run makes another sweep; the order of --node does not.
  EXPECT_NE(plain, Ids(with({"--node", "dgx-01"})));
  EXPECT_NE(plain, Ids(with({"--node-label", "gpu=h100"})));
  EXPECT_NE(Ids(with({"--node", "a"})), Ids(with({"--node-label", "a="})));
  EXPECT_EQ(Ids(with({"--node", "a", "--node", "b"})), Ids(with({"--node", "b", "--node", "a"})));
  // Real data is another sweep: its source, its folder and its decode threads.
  const auto imagenet = with({"--data", "imagefolder", "--data-path", "/data/imagenet"});
  EXPECT_EQ(imagenet.front().spec.data_path(), "/data/imagenet");
  EXPECT_NE(plain, Ids(imagenet));
  EXPECT_NE(Ids(imagenet), Ids(with({"--data", "imagefolder", "--data-path", "/data/other"})));
  EXPECT_NE(Ids(imagenet), Ids(with({"--data", "imagefolder", "--data-path", "/data/imagenet",
                                     "--loader-threads", "4"})));
  // So is the data-vs-compute run (it trains again on synthetic data).
  EXPECT_NE(Ids(imagenet), Ids(with({"--data", "imagefolder", "--data-path", "/data/imagenet",
                                     "--data-vs-compute"})));
  // Limits do not: a longer wall time finds the same cells.
  EXPECT_EQ(plain, Ids(with({"--wall-time", "2h", "--hang-timeout", "10m"})));
  // The shape flags belong to submit.
  auto shape = ParseArgs({"sweep", "--gpus", "8", "--bs", "1", "--nodes", "2"}, "");
  ASSERT_FALSE(shape.ok());
  EXPECT_THAT(shape.status().message(), HasSubstr("unknown flag --nodes for sweep"));
}

TEST(SweepTest, AgainGivesFreshIds) {
  const SweepOptions options = Parsed({"--gpus", "1", "--bs", "64", "--again"});
  const auto plain = Ids(ExpandSweep(options));
  const auto again1 = Ids(ExpandSweep(options, "nonce-1"));
  const auto again2 = Ids(ExpandSweep(options, "nonce-2"));
  EXPECT_NE(plain, again1);
  EXPECT_NE(again1, again2);
  EXPECT_THAT(again1[0], MatchesRegex("sweep-[0-9a-f]{16}-g1-fp32-bs64-r1"));
}

TEST(SweepTest, RetryIds) {
  EXPECT_EQ(RetryRequestId("sweep-x-g1-fp32-bs64-r1", 0), "sweep-x-g1-fp32-bs64-r1");
  EXPECT_EQ(RetryRequestId("sweep-x-g1-fp32-bs64-r1", 2), "sweep-x-g1-fp32-bs64-r1-retry-2");
}

v1::JobStatus Job(const std::string& id, v1::JobState state) {
  v1::JobStatus job;
  job.set_id(id);
  job.set_state(state);
  return job;
}

TEST(SweepTest, ProgressLine) {
  EXPECT_EQ(SweepProgressLine({}), "sweep: 0/0 done");
  EXPECT_EQ(SweepProgressLine({Job("a", v1::JOB_STATE_QUEUED), Job("b", v1::JOB_STATE_QUEUED)}),
            "sweep: 0/2 done (2 QUEUED)");
  EXPECT_EQ(SweepProgressLine({Job("a", v1::JOB_STATE_SUCCEEDED), Job("b", v1::JOB_STATE_FAILED),
                               Job("c", v1::JOB_STATE_RUNNING), Job("d", v1::JOB_STATE_QUEUED),
                               Job("e", v1::JOB_STATE_SUCCEEDED)}),
            "sweep: 3/5 done (2 SUCCEEDED, 1 FAILED; 1 RUNNING, 1 QUEUED)");
}

TEST(SweepTest, Summary) {
  auto sweep = ExpandSweep(Parsed({"--gpus", "1,2", "--bs", "64"}));
  v1::JobStatus ok = Job("s-1", v1::JOB_STATE_SUCCEEDED);
  ok.set_has_throughput(true);
  ok.set_images_per_second(123.45);
  v1::JobStatus failed = Job("s-2", v1::JOB_STATE_FAILED);
  failed.set_reason("rank 1: CUDA out of memory");
  const std::string summary = SweepSummary(sweep, {ok, failed});
  EXPECT_THAT(summary, HasSubstr("s-1  g1-fp32-bs64-r1  SUCCEEDED                               123.5\n"));
  EXPECT_THAT(summary, HasSubstr("s-2  g2-fp32-bs64-r1  FAILED (rank 1: CUDA out of memory)   no data\n"));
  EXPECT_THAT(summary, HasSubstr("1/2 jobs succeeded\n"));
}

}  // namespace
}  // namespace bench::ctl
