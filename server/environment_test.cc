#include "server/environment.h"

#include <gtest/gtest.h>

namespace bench {
namespace {

TEST(EnvironmentTest, AgreeingVersionsAreOneValueAndDisagreeingOnesAreJoined) {
  Job job;
  job.agent_versions["dgx-a"] = {{"driver", "550.54.15"}, {"cuda_driver", "12.4"}};
  job.agent_versions["dgx-b"] = {{"driver", "535.104.05"}, {"cuda_driver", "12.4"},
                                 {"nvml", ""}};
  job.rank_versions[0] = {{"torch", "2.3.0"}, {"nccl", "2.20.5"}, {"bench_train", "abc123"}};
  job.rank_versions[1] = {{"torch", "2.3.0"}, {"nccl", "2.18.1"}, {"bench_train", "abc123"}};
  job.rank_devices = {{0, "dgx-b", "node-b", 0, "GPU-1", "H100"},
                      {1, "dgx-a", "node-a", 0, "GPU-2", "H100"},
                      {2, "dgx-a", "node-a", 1, "GPU-3", "H100"}};
  Environment env = MergeEnvironment(job);
  EXPECT_EQ(env.versions.at("cuda_driver"), "12.4");
  EXPECT_EQ(env.versions.at("torch"), "2.3.0");
  EXPECT_EQ(env.versions.at("bench_train"), "abc123");
  EXPECT_EQ(env.versions.at("driver"), "535.104.05 | 550.54.15");
  EXPECT_EQ(env.versions.at("nccl"), "2.18.1 | 2.20.5");
  EXPECT_EQ(env.versions.count("nvml"), 0u) << "an empty value is not a version";
  EXPECT_EQ(env.hostnames, (std::vector<std::string>{"node-a", "node-b"}));
}

TEST(EnvironmentTest, NothingReportedIsEmpty) {
  Environment env = MergeEnvironment(Job{});
  EXPECT_TRUE(env.versions.empty());
  EXPECT_TRUE(env.hostnames.empty());
}

}  // namespace
}  // namespace bench
