#include "server/core/sample_ingestion.h"

#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/core/sample_validation.h"

namespace bench {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

// Jobs by id, as the JobManager's table would answer them.
class Jobs {
 public:
  Job& Add(const std::string& id, int attempt, DeviceKind kind, std::vector<Placement> placements) {
    Job& job = jobs_[id];
    job.id = id;
    job.attempt = attempt;
    job.device_kind = kind;
    job.placements = std::move(placements);
    job.spec.batch_size = 2;
    job.spec.iterations = 10;
    return job;
  }
  SampleIngestion::JobLookup Lookup() {
    return [this](const std::string& id) -> const Job* {
      auto it = jobs_.find(id);
      return it == jobs_.end() ? nullptr : &it->second;
    };
  }

 private:
  std::map<std::string, Job> jobs_;
};

IterationSample Iteration(const std::string& job_id, int attempt, int rank, int iteration) {
  IterationSample sample;
  sample.job_id = job_id;
  sample.attempt = attempt;
  sample.rank = rank;
  sample.iteration = iteration;
  sample.step_time_s = 0.1;
  sample.images = 2;
  sample.elapsed_s = 0.1 * iteration;
  return sample;
}

GpuSample Reading(const std::string& job_id, int attempt, int rank, int64_t seq,
                  const std::string& uuid, int index) {
  GpuSample sample;
  sample.job_id = job_id;
  sample.attempt = attempt;
  sample.rank = rank;
  sample.seq = seq;
  sample.gpu_uuid = uuid;
  sample.gpu_index = index;
  sample.power_w = 250;
  return sample;
}

AgentInventory GpuAgent(const std::string& name) {
  AgentInventory inventory;
  inventory.name = name;
  inventory.gpus = {Gpu{0, "H100", "GPU-0"}, Gpu{1, "H100", "GPU-1"}};
  return inventory;
}

std::vector<int> IterationsOf(const ScreenedSamples& screened) {
  std::vector<int> iterations;
  for (const IterationSample& s : screened.iterations) iterations.push_back(s.iteration);
  return iterations;
}

TEST(SampleIngestionTest, RankPlacedOnLooksAtTheAgentsOwnPlacement) {
  Job job;
  job.placements = {Placement{"a", {0, 1}, {0, 1}}, Placement{"b", {2}, {0}}};
  EXPECT_TRUE(RankPlacedOn(job, "a", 1));
  EXPECT_TRUE(RankPlacedOn(job, "b", 2));
  EXPECT_FALSE(RankPlacedOn(job, "a", 2));
  EXPECT_FALSE(RankPlacedOn(job, "c", 0));
}

TEST(SampleIngestionTest, KeepsTheSamplesOfRanksPlacedOnTheSenderInOrder) {
  Jobs jobs;
  jobs.Add("job-1", 2, DeviceKind::kCpu, {Placement{"a", {0, 1}, {0, 1}}});
  SampleIngestion ingestion;
  ScreenedSamples screened = ingestion.Screen(
      "a", nullptr, jobs.Lookup(),
      {Iteration("job-1", 2, 1, 3), Iteration("job-1", 2, 0, 1), Iteration("job-1", 2, 1, 4)}, {});
  EXPECT_THAT(IterationsOf(screened), ElementsAre(3, 1, 4));
  EXPECT_THAT(screened.rejected, IsEmpty());
  EXPECT_EQ(screened.rejected_count(), 0);
  EXPECT_EQ(ingestion.refused_total(), 0);
}

TEST(SampleIngestionTest, SamplesOfNoRankPlacedOnTheSenderAreRefusedByReason) {
  Jobs jobs;
  jobs.Add("job-1", 2, DeviceKind::kCpu, {Placement{"a", {0}, {0}}, Placement{"b", {1}, {0}}});
  jobs.Add("job-2", 0, DeviceKind::kNone, {});  // queued, never placed
  SampleIngestion ingestion;
  ScreenedSamples screened = ingestion.Screen("a", nullptr, jobs.Lookup(),
                                              {Iteration("job-9", 1, 0, 1),   // no such job
                                               Iteration("job-1", 1, 0, 1),   // attempt 1 is over
                                               Iteration("job-2", 0, 0, 1),   // never placed
                                               Iteration("job-1", 2, 1, 1),   // rank 1 runs on b
                                               Iteration("job-1", 2, 0, 2)},  // kept
                                              {});
  EXPECT_THAT(IterationsOf(screened), ElementsAre(2));
  EXPECT_THAT(screened.rejected,
              ElementsAre(Pair(kRankNotOnAgent, 1), Pair(kStaleAttempt, 2), Pair(kUnknownJob, 1)));
  EXPECT_EQ(screened.rejected_count(), 4);
}

TEST(SampleIngestionTest, ImplausibleIterationsAreRefusedBySampleValidation) {
  Jobs jobs;
  jobs.Add("job-1", 1, DeviceKind::kCpu, {Placement{"a", {0}, {0}}});
  IterationSample too_many_images = Iteration("job-1", 1, 0, 1);
  too_many_images.images = 3;                                   // the batch is 2
  IterationSample past_the_end = Iteration("job-1", 1, 0, 11);  // 10 iterations
  IterationSample negative_time = Iteration("job-1", 1, 0, 2);
  negative_time.step_time_s = -1;
  SampleIngestion ingestion;
  ScreenedSamples screened = ingestion.Screen(
      "a", nullptr, jobs.Lookup(),
      {too_many_images, past_the_end, negative_time, Iteration("job-1", 1, 0, 3)}, {});
  EXPECT_THAT(IterationsOf(screened), ElementsAre(3));
  EXPECT_THAT(screened.rejected,
              ElementsAre(Pair(kBadImages, 1), Pair(kBadIteration, 1), Pair(kBadTime, 1)));
}

TEST(SampleIngestionTest, AFenceRefusesThatAgentsSamplesOfThatAttemptOnly) {
  Jobs jobs;
  jobs.Add("job-1", 1, DeviceKind::kCpu, {Placement{"a", {0}, {0}}, Placement{"b", {1}, {0}}});
  jobs.Add("job-2", 1, DeviceKind::kCpu, {Placement{"a", {0}, {1}}});
  SampleIngestion ingestion;
  ingestion.Fence("a", "job-1", 1);
  EXPECT_TRUE(ingestion.Fenced("a", "job-1", 1));
  EXPECT_FALSE(ingestion.Fenced("b", "job-1", 1));
  EXPECT_FALSE(ingestion.Fenced("a", "job-1", 2));
  EXPECT_FALSE(ingestion.Fenced("a", "job-2", 1));
  ScreenedSamples from_a = ingestion.Screen(
      "a", nullptr, jobs.Lookup(), {Iteration("job-1", 1, 0, 1), Iteration("job-2", 1, 0, 1)},
      {Reading("job-1", 1, 0, 1, "GPU-0", 0)});
  ASSERT_EQ(from_a.iterations.size(), 1u);
  EXPECT_EQ(from_a.iterations[0].job_id, "job-2");
  EXPECT_THAT(from_a.rejected, ElementsAre(Pair(kFencedAgent, 2)));
  ScreenedSamples from_b =
      ingestion.Screen("b", nullptr, jobs.Lookup(), {Iteration("job-1", 1, 1, 1)}, {});
  EXPECT_EQ(from_b.iterations.size(), 1u);
  // Once the job is on its next attempt, a's samples of it are checked afresh.
  jobs.Add("job-1", 2, DeviceKind::kCpu, {Placement{"a", {0}, {0}}});
  ScreenedSamples next =
      ingestion.Screen("a", nullptr, jobs.Lookup(), {Iteration("job-1", 2, 0, 1)}, {});
  EXPECT_EQ(next.iterations.size(), 1u);
}

TEST(SampleIngestionTest, AGpuReadingMustBeOfTheGpuItsRankHoldsOnTheSender) {
  Jobs jobs;
  // Rank 0 on a's GPU 1, rank 1 on b; job-cpu's rank on a CPU slot.
  jobs.Add("job-1", 1, DeviceKind::kCuda, {Placement{"a", {0}, {1}}, Placement{"b", {1}, {0}}});
  jobs.Add("job-cpu", 1, DeviceKind::kCpu, {Placement{"a", {0}, {0}}});
  const AgentInventory a = GpuAgent("a");
  SampleIngestion ingestion;
  ScreenedSamples screened =
      ingestion.Screen("a", &a, jobs.Lookup(), {},
                       {Reading("job-1", 1, 0, 1, "GPU-1", 1),      // kept
                        Reading("job-1", 1, 0, 0, "GPU-1", 1),      // seq starts at 1
                        Reading("job-1", 1, 0, 2, "GPU-0", 0),      // a GPU the rank does not hold
                        Reading("job-1", 1, 0, 3, "GPU-0", 1),      // the right index, another UUID
                        Reading("job-1", 1, 1, 1, "GPU-0", 0),      // rank 1 runs on b
                        Reading("job-cpu", 1, 0, 1, "GPU-0", 0)});  // a CPU rank has no GPU
  ASSERT_EQ(screened.gpu_samples.size(), 1u);
  EXPECT_EQ(screened.gpu_samples[0].seq, 1);
  EXPECT_THAT(screened.rejected, ElementsAre(Pair(kBadSequence, 1), Pair(kGpuNotHeld, 2),
                                             Pair(kGpuOnCpuRank, 1), Pair(kRankNotOnAgent, 1)));
  // Without a registered inventory no reading can be matched to a GPU.
  ScreenedSamples unknown =
      ingestion.Screen("a", nullptr, jobs.Lookup(), {}, {Reading("job-1", 1, 0, 4, "GPU-1", 1)});
  EXPECT_THAT(unknown.gpu_samples, IsEmpty());
  EXPECT_THAT(unknown.rejected, ElementsAre(Pair(kGpuNotHeld, 1)));
}

TEST(SampleIngestionTest, RefusalsAddUpAcrossUploads) {
  Jobs jobs;
  jobs.Add("job-1", 1, DeviceKind::kCpu, {Placement{"a", {0}, {0}}});
  SampleIngestion ingestion;
  ingestion.Screen("a", nullptr, jobs.Lookup(), {Iteration("job-9", 1, 0, 1)}, {});
  ingestion.Screen("a", nullptr, jobs.Lookup(), {Iteration("job-1", 1, 0, 1)}, {});
  ingestion.Screen("b", nullptr, jobs.Lookup(),
                   {Iteration("job-1", 1, 0, 2), Iteration("job-1", 1, 0, 3)}, {});
  EXPECT_EQ(ingestion.refused_total(), 3);
}

}  // namespace
}  // namespace bench
