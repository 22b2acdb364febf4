// The JobManager refuses what an agent sends that its job could not have produced
// (sample_validation.h): each refusal counted by reason in /metrics, nothing bogus stored,
// while the real samples and reports beside them still make the job succeed.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "server/core/job_manager.h"
#include "server/core/job_manager_test_support.h"
#include "server/metrics/metrics_exporter.h"

namespace bench {
namespace {

using ::testing::HasSubstr;

class JobManagerValidationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_validation_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    store_ = std::move(Store::Open(dir_ + "/bench.db")).value();
    manager_ = std::make_unique<JobManager>(store_.get(), JobManagerOptions{}, &metrics_);
    ASSERT_TRUE(manager_->Recover().ok());
  }
  void TearDown() override {
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  absl::StatusOr<AppendResult> Upload(const std::string& agent,
                                      std::vector<IterationSample> samples,
                                      std::vector<GpuSample> gpu_samples = {}) {
    return UploadAndWait(*manager_, agent, std::move(samples), std::move(gpu_samples));
  }
  std::string SubmitOne(int devices = 1) {
    absl::StatusOr<SubmitResult> result = SubmitAndWait(*manager_, SmallJobSpec(devices));
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? result->job_id : "";
  }
  // Iteration `i` of rank 0, attempt 1: 2 images in 0.5 s.
  static IterationSample Real(const std::string& id, int i) {
    IterationSample s;
    s.job_id = id;
    s.attempt = 1;
    s.rank = 0;
    s.iteration = i;
    s.step_time_s = 0.5;
    s.images = 2;
    s.elapsed_s = 0.5 * i;
    s.warmup = i == 1;
    return s;
  }
  int64_t Rejected(const std::string& reason) {
    auto counters = metrics_.Take(absl::Now()).counters.ingest_errors;
    auto it = counters.find(reason);
    return it == counters.end() ? 0 : it->second;
  }
  static RankReport Succeeded(RankSummary summary) {
    RankReport report;
    report.rank = 0;
    report.outcome = RankOutcome::kSucceeded;
    report.summary = summary;
    return report;
  }

  std::string dir_;
  LiveMetrics metrics_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
};

TEST_F(JobManagerValidationTest, ForgedSamplesAreRefusedAndCountedBesideRealOnes) {
  FakeChannel channel;
  AgentInventory inventory;
  inventory.name = "cpu-1";
  inventory.cpu_slots = 1;
  ASSERT_TRUE(manager_->RegisterAgent(inventory).ok());
  ASSERT_TRUE(manager_->AttachChannel("cpu-1", &channel).ok());
  const std::string id = SubmitOne();
  ASSERT_EQ(channel.assignments.size(), 1u);

  // The forgeries come first, for iterations the real samples then bring.
  std::vector<IterationSample> forged;
  IterationSample inf_step = Real(id, 2);
  inf_step.step_time_s = std::numeric_limits<double>::infinity();
  forged.push_back(inf_step);
  IterationSample negative_images = Real(id, 3);
  negative_images.images = -2;
  forged.push_back(negative_images);
  IterationSample huge_images = Real(id, 4);
  huge_images.images = std::numeric_limits<int>::max();
  forged.push_back(huge_images);
  IterationSample ancient = Real(id, 5);
  ancient.elapsed_s = -1e300;
  forged.push_back(ancient);
  IterationSample past_end = Real(id, 6);
  forged.push_back(past_end);
  IterationSample other_job = Real("no-such-job", 1);
  forged.push_back(other_job);
  IterationSample stale = Real(id, 2);
  stale.attempt = 7;
  forged.push_back(stale);
  IterationSample other_rank = Real(id, 2);
  other_rank.rank = 3;
  forged.push_back(other_rank);
  GpuSample hot;
  hot.job_id = id;
  hot.attempt = 1;
  hot.rank = 0;
  hot.seq = 1;
  hot.gpu_uuid = "GPU-forged";
  hot.temperature_c = 1e300;
  absl::StatusOr<AppendResult> result = Upload("cpu-1", forged, {hot});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->stored, 0);
  EXPECT_EQ(result->gpu_stored, 0);
  EXPECT_EQ(result->rejected, 9);  // 8 iteration samples and the reading
  EXPECT_EQ(*store_->CountSamples(id, 1), 0);
  EXPECT_EQ(Rejected("bad_time"), 2);
  EXPECT_EQ(Rejected("bad_images"), 2);
  EXPECT_EQ(Rejected("bad_iteration"), 1);
  EXPECT_EQ(Rejected("unknown_job"), 1);
  EXPECT_EQ(Rejected("stale_attempt"), 1);
  EXPECT_EQ(Rejected("rank_not_on_agent"), 1);
  EXPECT_EQ(Rejected("gpu_on_cpu_rank"), 1);
  LiveMetrics::Snapshot snapshot = metrics_.Take(absl::Now());
  EXPECT_EQ(snapshot.counters.duplicates, 0);  // refused, never called a duplicate
  EXPECT_THAT(RenderMetrics({}, snapshot),
              HasSubstr("bench_ingest_errors_total{reason=\"gpu_on_cpu_rank\"} 1"));

  // The real samples are stored: none was taken for a duplicate of a forgery.
  std::vector<IterationSample> real;
  for (int i = 1; i <= 5; ++i) real.push_back(Real(id, i));
  result = Upload("cpu-1", real);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->stored, 5);
  EXPECT_EQ(result->duplicates, 0);
  EXPECT_EQ(result->rejected, 0);
  EXPECT_EQ(manager_->Get(id)->samples_stored, 5);

  // Nor may the agent report a rank it does not host: refused and counted.
  RankReport elsewhere = Succeeded({3, 4, 8, 2.0, 0.5});
  elsewhere.rank = 3;
  ASSERT_TRUE(manager_->ReportStatus("cpu-1", id, 1, 0, {elsewhere}).ok());
  EXPECT_EQ(manager_->Get(id)->job.state, JobState::kRunning);
  EXPECT_EQ(metrics_.Take(absl::Now()).counters.rank_reports_rejected["rank_not_on_agent"], 1);

  // 4 measured iterations of 2 images in 2 s: 4 img/s, and the job succeeds with it.
  ASSERT_TRUE(manager_->ReportStatus("cpu-1", id, 1, 0, {Succeeded({0, 4, 8, 2.0, 0.5})}).ok());
  absl::StatusOr<JobView> view = manager_->Get(id);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->job.state, JobState::kSucceeded);
  ASSERT_TRUE(view->images_per_second.has_value());
  EXPECT_DOUBLE_EQ(*view->images_per_second, 4.0);
}

// A GPU reading names the GPU it was taken of: it is stored only when that is the GPU its
// rank holds on the sender (issue 24, item 5), by index and UUID of the sender's inventory.
TEST_F(JobManagerValidationTest, AGpuReadingIsStoredOnlyForTheGpuItsRankHoldsOnTheSender) {
  FakeChannel channel_a, channel_b;
  auto register_gpus = [&](const std::string& name, int gpus, FakeChannel* channel) {
    AgentInventory inventory;
    inventory.name = name;
    for (int i = 0; i < gpus; ++i) {
      inventory.gpus.push_back({i, "Fake GPU", absl::StrCat("GPU-", name, "-", i), 1 << 30});
    }
    ASSERT_TRUE(manager_->RegisterAgent(inventory).ok());
    ASSERT_TRUE(manager_->AttachChannel(name, channel).ok());
  };
  register_gpus("dgx-a", 2, &channel_a);
  const std::string id = SubmitOne(2);  // both GPUs of dgx-a, one rank each
  ASSERT_EQ(channel_a.assignments.size(), 1u);
  const AssignmentMessage& placed = channel_a.assignments[0];
  ASSERT_EQ(placed.ranks.size(), 2u);
  register_gpus("dgx-b", 1, &channel_b);  // another agent's GPU
  const int rank = placed.ranks[0];
  const int held = placed.device_indices[0];
  const int sibling = placed.device_indices[1];  // dgx-a's other GPU, held by rank 1
  auto reading = [&](int64_t seq, const std::string& uuid, int index) {
    GpuSample g;
    g.job_id = id;
    g.attempt = 1;
    g.rank = rank;
    g.seq = seq;
    g.gpu_uuid = uuid;
    g.gpu_index = index;
    g.power_w = 250;
    return g;
  };

  absl::StatusOr<AppendResult> result =
      Upload("dgx-a", {}, {reading(1, "GPU-dgx-b-0", 0)});  // another agent's GPU
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->gpu_stored, 0);
  EXPECT_EQ(result->rejected, 1);
  result = Upload("dgx-a", {}, {reading(2, absl::StrCat("GPU-dgx-a-", sibling), sibling)});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->gpu_stored, 0);  // dgx-a's, but rank 1's
  EXPECT_EQ(result->rejected, 1);
  // The right UUID under another index, and the held index under another UUID.
  result = Upload("dgx-a", {},
                  {reading(3, absl::StrCat("GPU-dgx-a-", held), sibling),
                   reading(4, absl::StrCat("GPU-dgx-a-", sibling), held)});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->gpu_stored, 0);
  EXPECT_EQ(result->rejected, 2);
  EXPECT_EQ(Rejected("gpu_not_held"), 4);
  EXPECT_THAT(RenderMetrics({}, metrics_.Take(absl::Now())),
              HasSubstr("bench_ingest_errors_total{reason=\"gpu_not_held\"} 4"));
  // dgx-b holds none of the job's ranks: its readings are refused before their GPU.
  result = Upload("dgx-b", {}, {reading(5, "GPU-dgx-b-0", 0)});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->gpu_stored, 0);
  EXPECT_EQ(Rejected("rank_not_on_agent"), 1);

  // The GPU the rank holds: stored, and the live reading is its.
  result = Upload("dgx-a", {}, {reading(6, absl::StrCat("GPU-dgx-a-", held), held)});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->gpu_stored, 1);
  EXPECT_EQ(result->rejected, 0);
  EXPECT_EQ(Rejected("gpu_not_held"), 4);
  const LiveMetrics::Snapshot snapshot = metrics_.Take(absl::Now());
  ASSERT_TRUE(snapshot.jobs.at(id).ranks.at(rank).gpu.has_value());
  EXPECT_EQ(snapshot.jobs.at(id).ranks.at(rank).gpu->gpu_uuid, absl::StrCat("GPU-dgx-a-", held));
}

TEST_F(JobManagerValidationTest, AForgedSummaryGivesTheJobNoThroughputAndIsCounted) {
  FakeChannel channel;
  AgentInventory inventory;
  inventory.name = "cpu-1";
  inventory.cpu_slots = 1;
  ASSERT_TRUE(manager_->RegisterAgent(inventory).ok());
  ASSERT_TRUE(manager_->AttachChannel("cpu-1", &channel).ok());
  const std::string id = SubmitOne();
  std::vector<IterationSample> real;
  for (int i = 1; i <= 5; ++i) real.push_back(Real(id, i));
  ASSERT_TRUE(Upload("cpu-1", real).ok());

  // 32,000,000 img/s from a rank whose steps took 0.5 s for 2 images.
  ASSERT_TRUE(manager_->ReportStatus("cpu-1", id, 1, 0, {Succeeded({0, 4, 8, 2.5e-7, 1e-8})}).ok());
  absl::StatusOr<JobView> view = manager_->Get(id);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->job.state, JobState::kSucceeded);
  EXPECT_TRUE(view->job.summaries.empty());
  EXPECT_FALSE(view->images_per_second.has_value());
  LiveMetrics::Snapshot snapshot = metrics_.Take(absl::Now());
  EXPECT_EQ(snapshot.counters.rank_reports_rejected["bad_summary"], 1);
  EXPECT_THAT(RenderMetrics({}, snapshot),
              HasSubstr("bench_rank_reports_rejected_total{reason=\"bad_summary\"} 1"));
}

TEST_F(JobManagerValidationTest, AnInventoryPastItsBoundsIsRefusedAndNotRegistered) {
  AgentInventory huge;
  huge.name = "huge";
  huge.cpu_slots = 20'000'000;
  absl::Time start = absl::Now();
  absl::StatusOr<std::string> registered = manager_->RegisterAgent(huge);
  // Refused by the bounds check, not after laying out 20M slots (seconds of work): the
  // bound is generous so that a loaded machine or a sanitizer build cannot trip it.
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(registered.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(registered.status().message(), HasSubstr("inventory.cpu_slots"));
  AgentInventory newline;
  newline.name = "node\nforged log line";
  newline.cpu_slots = 1;
  EXPECT_EQ(manager_->RegisterAgent(newline).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(manager_->ListAgents().empty());
}

}  // namespace
}  // namespace bench
