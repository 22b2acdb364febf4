#include "server/core/scheduler.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

AgentCapacity Cpu(const std::string& name, int total, std::vector<int> free) {
  return AgentCapacity{name, DeviceKind::kCpu, total, std::move(free), {}};
}
AgentCapacity Gpus(const std::string& name, int total, std::vector<int> free) {
  return AgentCapacity{name, DeviceKind::kCuda, total, std::move(free), {}};
}

PlacementRequest Devices(int n) {
  PlacementRequest request;
  request.devices = n;
  return request;
}
PlacementRequest Shape(int nodes, int per_node) {
  PlacementRequest request;
  request.devices = nodes * per_node;
  request.nodes = nodes;
  request.devices_per_node = per_node;
  return request;
}
std::vector<int> Range(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}
QueuedJob Queued(const std::string& id, PlacementRequest request,
                 absl::Duration wall = absl::Hours(1)) {
  return QueuedJob{id, std::move(request), wall};
}
const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

TEST(SchedulerTest, SpansTwoAgentsWithContiguousRanks) {
  auto plan = PlaceJob(Devices(4), DeviceKind::kCpu, {Cpu("a", 2, {0, 1}), Cpu("b", 2, {0, 1})});
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
  auto plan = PlaceJob(Devices(8), DeviceKind::kCuda, {Gpus("dgx1", 8, {5, 6, 7}), Gpus("dgx2", 8, {0, 1, 2, 3, 4, 5, 6, 7})});
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->placements.size(), 1u);
  EXPECT_EQ(plan->placements[0].agent, "dgx2");
  EXPECT_THAT(plan->placements[0].device_indices, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
}

TEST(SchedulerTest, UsesLowestFreeDeviceIndices) {
  auto plan = PlaceJob(Devices(2), DeviceKind::kCuda, {Gpus("n", 8, {7, 3, 5})});
  ASSERT_TRUE(plan.has_value());
  EXPECT_THAT(plan->placements[0].device_indices, ElementsAre(3, 5));
}

TEST(SchedulerTest, WaitsWhenFreeDevicesDoNotSuffice) {
  EXPECT_FALSE(PlaceJob(Devices(3), DeviceKind::kCpu, {Cpu("a", 2, {0}), Cpu("b", 2, {1})}).has_value());
}

TEST(SchedulerTest, PrefersGpusAndNeverMixesKinds) {
  std::vector<AgentCapacity> fleet = {Gpus("g", 2, {0, 1}), Cpu("c", 4, {0, 1, 2, 3})};
  EXPECT_EQ(ChooseDeviceKind(Devices(2), fleet), DeviceKind::kCuda);
  EXPECT_EQ(ChooseDeviceKind(Devices(3), fleet), DeviceKind::kCpu);
  EXPECT_EQ(ChooseDeviceKind(Devices(5), fleet), DeviceKind::kNone);
  auto plan = PlaceJob(Devices(3), ChooseDeviceKind(Devices(3), fleet), fleet);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->kind, DeviceKind::kCpu);
  EXPECT_EQ(plan->placements[0].agent, "c");
}

TEST(SchedulerTest, GpuJobWaitsForBusyGpusRatherThanFallingBackToCpu) {
  std::vector<AgentCapacity> fleet = {Gpus("g", 2, {}), Cpu("c", 4, {0, 1, 2, 3})};
  EXPECT_FALSE(PlaceJob(Devices(2), ChooseDeviceKind(Devices(2), fleet), fleet).has_value());
  // Nor while the GPU agent is away (only the CPU agent is connected).
  EXPECT_FALSE(PlaceJob(Devices(2), DeviceKind::kCuda, {Cpu("c", 4, {0, 1, 2, 3})}).has_value());
}

TEST(SchedulerTest, FleetDevicesCountsBusyDevicesToo) {
  EXPECT_EQ(FleetDevices(DeviceKind::kCpu, {Cpu("a", 2, {}), Cpu("b", 3, {0})}), 5);
}

TEST(SchedulerTest, SmallJobTakesTheBestFittingNodeToKeepWholeNodesFree) {
  auto plan = PlaceJob(Devices(2), DeviceKind::kCuda,
                       {Gpus("dgx1", 8, Range(8)), Gpus("dgx2", 8, {4, 5, 6}),
                        Gpus("dgx3", 8, {6, 7})});
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->placements.size(), 1u);
  EXPECT_EQ(plan->placements[0].agent, "dgx3");
}

TEST(SchedulerTest, LargeJobTakesWholeNodesThenTheBestFitForTheRest) {
  auto plan = PlaceJob(Devices(18), DeviceKind::kCuda,
                       {Gpus("a", 8, Range(8)), Gpus("b", 8, Range(8)), Gpus("c", 8, {0, 1, 2}),
                        Gpus("d", 8, Range(6))});
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->placements.size(), 3u);
  EXPECT_EQ(plan->placements[0].agent, "a");
  EXPECT_EQ(plan->placements[1].agent, "b");
  EXPECT_EQ(plan->placements[2].agent, "c");  // 2 more: c (3 free) fits better than d (6)
  EXPECT_THAT(plan->placements[2].ranks, ElementsAre(16, 17));
}

TEST(SchedulerTest, ShapeTakesExactlyThatManyDevicesOnThatManyNodes) {
  std::vector<AgentCapacity> fleet = {Cpu("a", 8, Range(8)), Cpu("b", 8, Range(8)),
                                      Cpu("c", 8, Range(8))};
  auto plan = PlaceJob(Shape(2, 4), DeviceKind::kCpu, fleet);
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->placements.size(), 2u);
  EXPECT_THAT(plan->placements[0].ranks, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(plan->placements[1].ranks, ElementsAre(4, 5, 6, 7));
  // Without a shape, 8 devices would have gone to a single node.
  EXPECT_EQ(PlaceJob(Devices(8), DeviceKind::kCpu, fleet)->placements.size(), 1u);
  // Three nodes with 4 free each are needed; only two have them.
  fleet[2].free_devices = {0, 1, 2};
  EXPECT_FALSE(PlaceJob(Shape(3, 4), DeviceKind::kCpu, fleet).has_value());
  // A node with fewer devices than per-node can never hold its share.
  EXPECT_EQ(ChooseDeviceKind(Shape(4, 8), fleet), DeviceKind::kNone);
}

TEST(SchedulerTest, NodeAndLabelConstraintsRestrictTheAgents) {
  std::vector<AgentCapacity> fleet = {Cpu("a", 4, Range(4)), Cpu("b", 4, Range(4))};
  fleet[1].labels = {{"rack", "r2"}, {"ib", "hdr"}};
  PlacementRequest request = Devices(2);
  request.node_labels = {{"rack", "r2"}};
  EXPECT_EQ(PlaceJob(request, DeviceKind::kCpu, fleet)->placements[0].agent, "b");
  request.node_labels = {{"rack", "r3"}};
  EXPECT_EQ(ChooseDeviceKind(request, fleet), DeviceKind::kNone);
  request.node_labels.clear();
  request.allowed_nodes = {"a"};
  EXPECT_EQ(PlaceJob(request, DeviceKind::kCpu, fleet)->placements[0].agent, "a");
  request.devices = 6;  // more than "a" alone has
  EXPECT_EQ(ChooseDeviceKind(request, fleet), DeviceKind::kNone);
}

// A spec at the input limits (256 allowed nodes, 32 labels of 256-byte values) still gets
// a short reason: the first few of each list and how many there are.
TEST(SchedulerTest, TheReasonListsAFewConstraintsOfALongList) {
  std::vector<AgentCapacity> fleet = {Cpu("a", 4, Range(4))};
  PlacementRequest request = Devices(2);
  for (int i = 0; i < 256; ++i) request.allowed_nodes.push_back("node-" + std::to_string(i));
  for (int i = 0; i < 32; ++i) request.node_labels["k" + std::to_string(i)] = std::string(256, 'v');
  std::string reason = NeverFitsReason(request, fleet);
  EXPECT_LT(reason.size(), 4096u) << reason.size();
  EXPECT_NE(reason.find("nodes node-0, node-1"), std::string::npos) << reason;
  EXPECT_NE(reason.find("(256 in all)"), std::string::npos) << reason;
  EXPECT_NE(reason.find("(32 in all)"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("node-8,"), std::string::npos) << reason;
  request.allowed_nodes = {"x", "y"};
  request.node_labels.clear();
  EXPECT_NE(NeverFitsReason(request, fleet).find("(nodes x, y)"), std::string::npos);
}

// Constraint values are the submitter's bytes: a reason shows their control bytes escaped.
TEST(SchedulerTest, TheReasonEscapesControlBytesOfConstraints) {
  std::vector<AgentCapacity> fleet = {Cpu("a", 4, Range(4))};
  PlacementRequest request = Devices(2);
  request.node_labels = {{"zone", std::string("a\x1f\x1b[31mb=c", 11)}};
  request.allowed_nodes = {"n\x7f"};
  std::string reason = NeverFitsReason(request, fleet);
  EXPECT_NE(reason.find("labels zone=a\\x1f\\x1b[31mb=c"), std::string::npos) << reason;
  EXPECT_NE(reason.find("nodes n\\x7f"), std::string::npos) << reason;
  for (unsigned char c : reason) EXPECT_TRUE(c >= 0x20 && c != 0x7f) << reason;
}

TEST(SchedulerTest, NothingIsPlacedOnADisconnectedAgent) {
  std::vector<AgentCapacity> fleet = {Cpu("a", 4, Range(4))};
  fleet[0].connected = false;
  EXPECT_EQ(ChooseDeviceKind(Devices(4), fleet), DeviceKind::kCpu);  // it can, later
  EXPECT_FALSE(PlaceJob(Devices(1), DeviceKind::kCpu, fleet).has_value());
}

TEST(SchedulerTest, QueueStartsJobsInOrderWhileTheyFit) {
  auto decisions = PlanQueue({Queued("j1", Devices(2)), Queued("j2", Devices(2)),
                              Queued("j3", Devices(1))},
                             {Cpu("a", 4, Range(4))}, {}, kNow);
  ASSERT_EQ(decisions.size(), 3u);
  EXPECT_TRUE(decisions[0].plan.has_value());
  EXPECT_TRUE(decisions[1].plan.has_value());
  EXPECT_THAT(decisions[1].plan->placements[0].device_indices, ElementsAre(2, 3));
  EXPECT_FALSE(decisions[2].plan.has_value());
  EXPECT_THAT(decisions[2].reason, HasSubstr("waiting for 1 free CPU slot (0 free now"));
}

TEST(SchedulerTest, BackfillUsesDevicesTheFirstWaitingJobCannotUseYet) {
  // 4 slots busy until +1h, 2 free. j1 needs 6 → reserved from +1h (all six). j2 (2
  // slots, 2 h limit) would run past +1h on reserved slots: it waits. j3 (30 min) ends
  // before: it backfills.
  std::vector<AgentCapacity> fleet = {Cpu("a", 6, {4, 5})};
  std::vector<RunningAllocation> running = {
      {"r", kNow + absl::Hours(1), {Placement{"a", {0, 1, 2, 3}, {0, 1, 2, 3}}}}};
  auto decisions = PlanQueue({Queued("j1", Devices(6)), Queued("j2", Devices(2), absl::Hours(2)),
                              Queued("j3", Devices(2), absl::Minutes(30))},
                             fleet, running, kNow);
  ASSERT_EQ(decisions.size(), 3u);
  EXPECT_FALSE(decisions[0].plan.has_value());
  EXPECT_THAT(decisions[0].reason, HasSubstr("reserved"));
  EXPECT_FALSE(decisions[1].plan.has_value());
  EXPECT_THAT(decisions[1].reason, HasSubstr("behind j1"));
  ASSERT_TRUE(decisions[2].plan.has_value());
  EXPECT_TRUE(decisions[2].backfilled);
}

TEST(SchedulerTest, BackfillMayTakeDevicesOutsideTheReservationWhateverItsLimit) {
  // j1 needs all 4 slots of "a" (shape 1×4); "b"'s slots are never part of its
  // reservation, so a long job may start there.
  std::vector<AgentCapacity> fleet = {Cpu("a", 4, {3}), Cpu("b", 2, {0, 1})};
  std::vector<RunningAllocation> running = {
      {"r", kNow + absl::Hours(1), {Placement{"a", {0, 1, 2}, {0, 1, 2}}}}};
  auto decisions = PlanQueue({Queued("j1", Shape(1, 4)),
                              Queued("j2", Devices(2), absl::Hours(100))},
                             fleet, running, kNow);
  EXPECT_FALSE(decisions[0].plan.has_value());
  ASSERT_TRUE(decisions[1].plan.has_value());
  EXPECT_EQ(decisions[1].plan->placements[0].agent, "b");
}

TEST(SchedulerTest, IdenticalJobsBehindTheFirstWaitingOneEachTakeTheirOwnDevices) {
  // j1 needs all 8 slots of "a" from +1h. Behind it, six identical 1-slot jobs: "b"'s two
  // free slots lie outside the reservation (any limit), "a"'s free slot inside it (only a
  // job that ends before +1h). The first three that can start take one slot each, never
  // the same twice; the rest wait and say why.
  std::vector<AgentCapacity> fleet = {Cpu("a", 8, {7}), Cpu("b", 4, {2, 3})};
  std::vector<RunningAllocation> running = {
      {"r", kNow + absl::Hours(1), {Placement{"a", Range(7), Range(7)}}},
      {"s", kNow + absl::Hours(5), {Placement{"b", {0, 1}, {0, 1}}}}};
  std::vector<QueuedJob> queue = {Queued("j1", Shape(1, 8))};
  for (int i = 2; i <= 5; ++i) {
    queue.push_back(Queued(absl::StrCat("long", i), Devices(1), absl::Hours(3)));
  }
  queue.push_back(Queued("short6", Devices(1), absl::Minutes(30)));
  queue.push_back(Queued("short7", Devices(1), absl::Minutes(30)));
  auto decisions = PlanQueue(queue, fleet, running, kNow);
  ASSERT_EQ(decisions.size(), 7u);
  EXPECT_FALSE(decisions[0].plan.has_value());
  std::set<std::pair<std::string, int>> taken;
  std::vector<std::string> started;
  for (const QueueDecision& decision : decisions) {
    if (!decision.plan) continue;
    started.push_back(decision.job_id);
    for (const Placement& placement : decision.plan->placements) {
      for (int device : placement.device_indices) {
        EXPECT_TRUE(taken.insert({placement.agent, device}).second)
            << decision.job_id << " took " << placement.agent << ":" << device << " again";
      }
    }
  }
  EXPECT_THAT(started, ElementsAre("long2", "long3", "short6"));
  EXPECT_EQ(taken, (std::set<std::pair<std::string, int>>{{"a", 7}, {"b", 2}, {"b", 3}}));
  EXPECT_THAT(decisions[3].reason, HasSubstr("reserved for it"));  // long4: only "a":7 is free
  EXPECT_THAT(decisions[6].reason, HasSubstr("behind j1"));        // short7: nothing is free
}

TEST(SchedulerTest, AJobTheFleetCanNeverHoldDoesNotHoldUpTheQueue) {
  PlacementRequest gone = Devices(1);
  gone.allowed_nodes = {"lost-node"};
  auto decisions = PlanQueue({Queued("j1", gone), Queued("j2", Devices(1))},
                             {Cpu("a", 1, {0})}, {}, kNow);
  EXPECT_FALSE(decisions[0].plan.has_value());
  EXPECT_THAT(decisions[0].reason, HasSubstr("no registered agent matches"));
  EXPECT_THAT(decisions[0].reason, HasSubstr("nodes lost-node"));
  EXPECT_TRUE(decisions[1].plan.has_value());
  EXPECT_FALSE(decisions[1].backfilled);
}

}  // namespace
}  // namespace bench

namespace bench {
namespace {

TEST(FreeDevicesTest, ARangeIsCountedAndOnlyItsLowestFreeAreListed) {
  FreeDevices free = FreeDevices::Range(20'000'000);
  EXPECT_EQ(free.size(), 20'000'000);
  free.Take(0);
  free.Take(2);
  EXPECT_EQ(free.size(), 19'999'998);
  EXPECT_THAT(free.Lowest(3), ElementsAre(1, 3, 4));
  free.Take(20'000'000);  // not one of its devices: nothing
  EXPECT_EQ(free.size(), 19'999'998);
  free.Give(0);
  free.Give(0);  // already free: nothing
  EXPECT_EQ(free.size(), 19'999'999);
  EXPECT_THAT(free.Lowest(2), ElementsAre(0, 1));
}

TEST(FreeDevicesTest, AListKeepsItsIndicesAndTakesBackDevicesGivenFromOutsideIt) {
  FreeDevices free = {6, 2, 4};
  EXPECT_EQ(free.size(), 3);
  EXPECT_THAT(free.Lowest(10), ElementsAre(2, 4, 6));
  free.Give(3);  // a device outside the list (a running job's) comes back
  EXPECT_THAT(free.Lowest(10), ElementsAre(2, 3, 4, 6));
  free.Take(2);
  free.Take(3);
  EXPECT_EQ(free.size(), 2);
  EXPECT_THAT(free.Lowest(10), ElementsAre(4, 6));
  EXPECT_TRUE(FreeDevices().empty());
}

TEST(SchedulerTest, PlacesOnAnAgentWithMillionsOfSlotsWithoutListingThem) {
  AgentCapacity huge{"huge", DeviceKind::kCpu, 20'000'000, FreeDevices::Range(20'000'000), {}};
  huge.free_devices.Take(0);
  std::optional<PlacementPlan> plan = PlaceJob(Devices(3), DeviceKind::kCpu, {huge});
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->placements.size(), 1u);
  EXPECT_THAT(plan->placements[0].device_indices, ElementsAre(1, 2, 3));
  EXPECT_THAT(plan->placements[0].ranks, ElementsAre(0, 1, 2));
}

}  // namespace
}  // namespace bench
