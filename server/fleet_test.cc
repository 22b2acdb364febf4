#include "server/fleet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bench {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class RecordingChannel : public AgentChannel {
 public:
  void SendAssignment(const AssignmentMessage&) override {}
  void SendCancel(const CancelMessage&) override {}
  void Close(const absl::Status& status) override { closed = status; }
  absl::Status closed;
};

AgentInventory CpuAgent(const std::string& name, int slots) {
  AgentInventory inventory;
  inventory.name = name;
  inventory.address = "127.0.0.1";
  inventory.cpu_slots = slots;
  return inventory;
}

AgentInventory GpuAgent(const std::string& name, std::vector<int> indices) {
  AgentInventory inventory;
  inventory.name = name;
  for (int index : indices) {
    Gpu gpu;
    gpu.index = index;
    inventory.gpus.push_back(gpu);
  }
  return inventory;
}

TEST(FleetTest, AnInventoryNeedsANameAndDevices) {
  AgentInventory unnamed = CpuAgent("", 2);
  unnamed.hostname = "node-1";
  ASSERT_TRUE(Fleet::NormalizeInventory(unnamed).ok());
  EXPECT_EQ(unnamed.name, "node-1");
  AgentInventory nameless = CpuAgent("", 2);
  EXPECT_EQ(Fleet::NormalizeInventory(nameless).code(), absl::StatusCode::kInvalidArgument);
  AgentInventory empty = CpuAgent("a", 0);
  EXPECT_EQ(Fleet::NormalizeInventory(empty).code(), absl::StatusCode::kInvalidArgument);
}

TEST(FleetTest, CapacitiesCountFreeDevicesAndOnlyConnectedAgentsTakeWork) {
  Fleet fleet;
  fleet.Register(CpuAgent("cpu", 4));
  fleet.Register(GpuAgent("gpu", {0, 1, 2, 3}));
  RecordingChannel channel;
  ASSERT_TRUE(fleet.Attach("gpu", &channel).ok());
  fleet.Hold("gpu", 1, "job-1", 1, 0);
  fleet.Hold("cpu", 0, "job-2", 1, 0);

  std::vector<AgentCapacity> capacities = fleet.Capacities();
  ASSERT_EQ(capacities.size(), 2u);
  EXPECT_EQ(capacities[0].agent, "cpu");
  EXPECT_FALSE(capacities[0].connected);
  EXPECT_EQ(capacities[0].free_devices.size(), 3);
  EXPECT_EQ(capacities[1].agent, "gpu");
  EXPECT_EQ(capacities[1].kind, DeviceKind::kCuda);
  EXPECT_TRUE(capacities[1].connected);
  EXPECT_THAT(capacities[1].free_devices.Lowest(4), ElementsAre(0, 2, 3));

  EXPECT_THAT(fleet.HeldAttempts("gpu"), ElementsAre(Fleet::Attempt{"job-1", 1}));
  fleet.Release("gpu", "job-1", 1);
  EXPECT_THAT(fleet.HeldAttempts("gpu"), IsEmpty());
  EXPECT_EQ(fleet.Capacities()[1].free_devices.size(), 4);
}

TEST(FleetTest, AnAgentWithTwentyMillionSlotsRegistersAndAJobIsPlacedOnIt) {
  Fleet fleet;
  AgentInventory huge = CpuAgent("huge", 20'000'000);
  ASSERT_TRUE(Fleet::NormalizeInventory(huge).ok());
  fleet.Register(huge);
  RecordingChannel channel;
  ASSERT_TRUE(fleet.Attach("huge", &channel).ok());
  fleet.Hold("huge", 0, "job-1", 1, 0);

  std::vector<AgentCapacity> capacities = fleet.Capacities();
  ASSERT_EQ(capacities.size(), 1u);
  EXPECT_EQ(capacities[0].total_devices, 20'000'000);
  EXPECT_EQ(capacities[0].free_devices.size(), 19'999'999);
  PlacementRequest request;
  request.devices = 4;
  std::optional<PlacementPlan> plan = PlaceJob(request, DeviceKind::kCpu, capacities);
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->placements.size(), 1u);
  EXPECT_EQ(plan->placements[0].agent, "huge");
  EXPECT_THAT(plan->placements[0].device_indices, ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(plan->placements[0].ranks, ElementsAre(0, 1, 2, 3));
  std::vector<AgentView> views = fleet.Views();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].devices_busy, 1);
  EXPECT_THAT(views[0].running_jobs, ElementsAre("job-1"));
}

TEST(FleetTest, ANewerStreamReplacesTheOldAndALostAgentCannotAttach) {
  Fleet fleet;
  fleet.Register(CpuAgent("a", 2));
  RecordingChannel first, second;
  ASSERT_TRUE(fleet.Attach("a", &first).ok());
  ASSERT_TRUE(fleet.Attach("a", &second).ok());
  EXPECT_EQ(first.closed.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(fleet.Channel("a"), &second);
  fleet.Detach("a", &first);  // no longer its stream: nothing
  EXPECT_EQ(fleet.Channel("a"), &second);
  EXPECT_EQ(fleet.Attach("nobody", &first).code(), absl::StatusCode::kNotFound);
}

TEST(FleetTest, ExpiredLeasesLoseTheAgentCloseItsStreamAndFreeItsDevices) {
  Fleet fleet;
  fleet.Register(CpuAgent("a", 2));
  fleet.Register(CpuAgent("b", 2));
  RecordingChannel channel;
  ASSERT_TRUE(fleet.Attach("a", &channel).ok());
  fleet.Hold("a", 0, "job-1", 2, 0);
  fleet.Hold("a", 1, "job-1", 2, 1);
  Fleet::Clock::time_point later = Fleet::Clock::now() + std::chrono::seconds(60);
  fleet.Touch("b");

  std::vector<Fleet::LostAgent> lost;
  int count = fleet.ExpireLeases(later, absl::Seconds(30),
                                 [&](const Fleet::LostAgent& agent) { lost.push_back(agent); });
  EXPECT_EQ(count, 2);
  ASSERT_EQ(lost.size(), 2u);
  EXPECT_EQ(lost[0].name, "a");
  EXPECT_FALSE(lost[0].was_placeholder);
  EXPECT_THAT(lost[0].held, ElementsAre(Fleet::Attempt{"job-1", 2}));
  EXPECT_EQ(channel.closed.code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(fleet.Registered("a"));
  EXPECT_TRUE(fleet.Known("a"));
  EXPECT_THAT(fleet.Capacities(), IsEmpty());
  EXPECT_EQ(fleet.Attach("a", &channel).code(), absl::StatusCode::kNotFound);
  // It comes back by registering again.
  fleet.Register(CpuAgent("a", 2));
  EXPECT_TRUE(fleet.Registered("a"));
  EXPECT_EQ(fleet.Capacities().size(), 1u);
}

TEST(FleetTest, APlaceholderHoldsItsDevicesUntilItRegistersOrItsGraceEnds) {
  Fleet fleet;
  Fleet::Clock::time_point expires = Fleet::Clock::now();
  fleet.AddPlaceholder("a", expires);
  fleet.Hold("a", 3, "job-1", 1, 0);
  EXPECT_TRUE(fleet.Known("a"));
  EXPECT_FALSE(fleet.Registered("a"));
  EXPECT_THAT(fleet.Capacities(), IsEmpty());  // not in the pool until it returns
  FleetCounts counts;
  fleet.AddTo(counts);
  EXPECT_THAT(counts.nodes, IsEmpty());

  fleet.ExtendPlaceholders(expires + std::chrono::seconds(100));
  EXPECT_EQ(fleet.ExpireLeases(expires + std::chrono::seconds(60), absl::Seconds(30),
                               [](const Fleet::LostAgent&) {}),
            0);
  std::vector<Fleet::LostAgent> lost;
  fleet.ExpireLeases(expires + std::chrono::seconds(200), absl::Seconds(30),
                     [&](const Fleet::LostAgent& agent) { lost.push_back(agent); });
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_TRUE(lost[0].was_placeholder);
  EXPECT_THAT(lost[0].held, ElementsAre(Fleet::Attempt{"job-1", 1}));
}

}  // namespace
}  // namespace bench
