#include "server/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bench {
namespace {

using ::testing::ElementsAre;

AgentCapacity Cpu(const std::string& name, int total, std::vector<int> free) {
  return AgentCapacity{name, DeviceKind::kCpu, total, std::move(free)};
}
AgentCapacity Gpus(const std::string& name, int total, std::vector<int> free) {
  return AgentCapacity{name, DeviceKind::kCuda, total, std::move(free)};
}

TEST(SchedulerTest, SpansTwoAgentsWithContiguousRanks) {
  auto plan = PlaceJob(4, DeviceKind::kCpu, {Cpu("a", 2, {0, 1}), Cpu("b", 2, {0, 1})});
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, DeviceKind::kCpu);
  ASSERT_EQ(plan->placements.size(), 2u);
  EXPECT_EQ(plan->placements[0].agent, "a");
  EXPECT_THAT(plan->placements[0].ranks, ElementsAre(0, 1));
  EXPECT_EQ(plan->placements[1].agent, "b");
  EXPECT_THAT(plan->placements[1].ranks, ElementsAre(2, 3));
  EXPECT_THAT(plan->placements[1].device_indices, ElementsAre(0, 1));
}

TEST(SchedulerTest, FillsTheFreestNodeFirstToSpanFewNodes) {
  auto plan = PlaceJob(8, DeviceKind::kCuda, {Gpus("dgx1", 8, {5, 6, 7}), Gpus("dgx2", 8, {0, 1, 2, 3, 4, 5, 6, 7})});
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->placements.size(), 1u);
  EXPECT_EQ(plan->placements[0].agent, "dgx2");
  EXPECT_THAT(plan->placements[0].device_indices, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
}

TEST(SchedulerTest, UsesLowestFreeDeviceIndices) {
  auto plan = PlaceJob(2, DeviceKind::kCuda, {Gpus("n", 8, {7, 3, 5})});
  ASSERT_TRUE(plan.has_value());
  EXPECT_THAT(plan->placements[0].device_indices, ElementsAre(3, 5));
}

TEST(SchedulerTest, WaitsWhenFreeDevicesDoNotSuffice) {
  EXPECT_FALSE(PlaceJob(3, DeviceKind::kCpu, {Cpu("a", 2, {0}), Cpu("b", 2, {1})}).has_value());
}

TEST(SchedulerTest, PrefersGpusAndNeverMixesKinds) {
  std::vector<AgentCapacity> fleet = {Gpus("g", 2, {0, 1}), Cpu("c", 4, {0, 1, 2, 3})};
  EXPECT_EQ(ChooseDeviceKind(2, fleet), DeviceKind::kCuda);
  EXPECT_EQ(ChooseDeviceKind(3, fleet), DeviceKind::kCpu);
  EXPECT_EQ(ChooseDeviceKind(5, fleet), DeviceKind::kNone);
  auto plan = PlaceJob(3, ChooseDeviceKind(3, fleet), fleet);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, DeviceKind::kCpu);
  EXPECT_EQ(plan->placements[0].agent, "c");
}

TEST(SchedulerTest, GpuJobWaitsForBusyGpusRatherThanFallingBackToCpu) {
  std::vector<AgentCapacity> fleet = {Gpus("g", 2, {}), Cpu("c", 4, {0, 1, 2, 3})};
  EXPECT_FALSE(PlaceJob(2, ChooseDeviceKind(2, fleet), fleet).has_value());
  // Nor while the GPU agent is away (only the CPU agent is connected).
  EXPECT_FALSE(PlaceJob(2, DeviceKind::kCuda, {Cpu("c", 4, {0, 1, 2, 3})}).has_value());
}

TEST(SchedulerTest, FleetDevicesCountsBusyDevicesToo) {
  EXPECT_EQ(FleetDevices(DeviceKind::kCpu, {Cpu("a", 2, {}), Cpu("b", 3, {0})}), 5);
}

}  // namespace
}  // namespace bench
