#include "server/core/fleet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/time/clock.h"

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

// The refusal names the field and the limit and quotes at most a short prefix.
void ExpectRefused(AgentInventory inventory, const std::string& names) {
  absl::Status status = Fleet::NormalizeInventory(inventory);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << names;
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr(names));
  EXPECT_LT(status.message().size(), 300u) << status.message();
}

AgentInventory FourGpus() {
  AgentInventory inventory;
  inventory.name = "dgx-01";
  for (int i = 0; i < 4; ++i) {
    inventory.gpus.push_back({i, "Fake GPU", "GPU-" + std::to_string(i), 1 << 30});
  }
  return inventory;
}

TEST(FleetTest, NodeNamesAreShortAndPlain) {
  for (const char* good : {"a", "dgx-01", "node_7.rack-2", "0node"}) {
    AgentInventory inventory = CpuAgent(good, 2);
    EXPECT_TRUE(Fleet::NormalizeInventory(inventory).ok()) << good;
  }
  AgentInventory longest = CpuAgent(std::string(63, 'n'), 2);
  EXPECT_TRUE(Fleet::NormalizeInventory(longest).ok());
  ExpectRefused(CpuAgent(std::string(64, 'n'), 2), "inventory.name must be 1-63 bytes");
  ExpectRefused(CpuAgent(std::string(5 << 20, 'n'), 2), "(5242880 bytes)");
  ExpectRefused(CpuAgent(std::string("a\nINFO forged"), 2), "a\\x0aINFO forged");
  ExpectRefused(CpuAgent(std::string("a\0b", 3), 2), "[A-Za-z0-9._-]");
  ExpectRefused(CpuAgent("-lead", 2), "starting with a letter or digit");
  ExpectRefused(CpuAgent(".hidden", 2), "starting with a letter or digit");
  ExpectRefused(CpuAgent("sp ace", 2), "\"sp ace\"");
  AgentInventory by_host = CpuAgent("", 2);
  by_host.hostname = "bad host";
  ExpectRefused(by_host, "inventory.name");
}

TEST(FleetTest, SlotAndGpuCountsAreBounded) {
  AgentInventory most = CpuAgent("big", 4096);
  EXPECT_TRUE(Fleet::NormalizeInventory(most).ok());
  absl::Time start = absl::Now();
  ExpectRefused(CpuAgent("huge", 20'000'000), "inventory.cpu_slots is 20000000; it must be 0-4096");
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(100));
  ExpectRefused(CpuAgent("negative", -3), "inventory.cpu_slots is -3");
  AgentInventory many = CpuAgent("many", 0);
  for (int i = 0; i < 65; ++i) many.gpus.push_back({i, "g", "GPU-" + std::to_string(i), 0});
  ExpectRefused(many, "lists 65 GPUs; the limit is 64");
}

TEST(FleetTest, GpuIndexesAndUuidsAreUnique) {
  AgentInventory good = FourGpus();
  EXPECT_TRUE(Fleet::NormalizeInventory(good).ok());
  AgentInventory twice = FourGpus();
  twice.gpus[3].index = 1;
  ExpectRefused(twice, "inventory.gpus[3].index 1 is listed twice");
  AgentInventory negative = FourGpus();
  negative.gpus[0].index = -1;
  ExpectRefused(negative, "inventory.gpus[0].index is -1");
  AgentInventory same_uuid = FourGpus();
  same_uuid.gpus[2].uuid = "GPU-0";
  ExpectRefused(same_uuid, "inventory.gpus[2].uuid is listed twice");
  AgentInventory no_uuid = FourGpus();
  no_uuid.gpus[1].uuid = "";
  ExpectRefused(no_uuid, "inventory.gpus[1].uuid is empty");
  AgentInventory long_uuid = FourGpus();
  long_uuid.gpus[1].uuid = std::string(1 << 20, 'u');
  ExpectRefused(long_uuid, "inventory.gpus[1].uuid is 1048576 bytes; the limit is 128");
}

TEST(FleetTest, LabelsAndOtherStringsAreBounded) {
  AgentInventory labelled = CpuAgent("a", 2);
  labelled.labels = {{"zone", "eu-1"}, {"rack", "7"}};
  EXPECT_TRUE(Fleet::NormalizeInventory(labelled).ok());
  AgentInventory many = CpuAgent("a", 2);
  for (int i = 0; i < 65; ++i) many.labels["k" + std::to_string(i)] = "v";
  ExpectRefused(many, "holds 65 labels; the limit is 64");
  AgentInventory long_value = CpuAgent("a", 2);
  long_value.labels["zone"] = std::string(257, 'v');
  ExpectRefused(long_value, "inventory.labels[\"zone\"] is 257 bytes; the limit is 256");
  AgentInventory control = CpuAgent("a", 2);
  control.labels["zone"] =
      "eu\x1f"
      "1";
  ExpectRefused(control, "must not hold control bytes");
  AgentInventory long_key = CpuAgent("a", 2);
  long_key.labels[std::string(64, 'k')] = "v";
  ExpectRefused(long_key, "inventory.labels key is 64 bytes; the limit is 63");
  AgentInventory address = CpuAgent("a", 2);
  address.address = std::string(1 << 20, 'x');
  ExpectRefused(address, "inventory.address is 1048576 bytes; the limit is 256");
  AgentInventory versions = CpuAgent("a", 2);
  versions.versions["driver"] = std::string(300, '5');
  ExpectRefused(versions, "inventory.versions[\"driver\"] is 300 bytes");
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

// The most CPU slots an inventory may offer (20,000,000 are refused at Register).
TEST(FleetTest, AnAgentWithTheMostSlotsRegistersAndAJobIsPlacedOnIt) {
  Fleet fleet;
  AgentInventory huge = CpuAgent("huge", 4096);
  ASSERT_TRUE(Fleet::NormalizeInventory(huge).ok());
  fleet.Register(huge);
  RecordingChannel channel;
  ASSERT_TRUE(fleet.Attach("huge", &channel).ok());
  fleet.Hold("huge", 0, "job-1", 1, 0);

  std::vector<AgentCapacity> capacities = fleet.Capacities();
  ASSERT_EQ(capacities.size(), 1u);
  EXPECT_EQ(capacities[0].total_devices, 4096);
  EXPECT_EQ(capacities[0].free_devices.size(), 4095);
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
  Fleet::SteadyTime later = std::chrono::steady_clock::now() + std::chrono::seconds(60);
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
  Fleet::SteadyTime expires = std::chrono::steady_clock::now();
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
