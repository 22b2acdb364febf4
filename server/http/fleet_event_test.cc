#include "server/http/fleet_event.h"

#include <atomic>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace bench {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

AgentView Agent(const std::string& name, int gpus, bool connected,
                std::vector<std::string> running) {
  AgentView view;
  view.inventory.name = name;
  view.inventory.address = "10.0.0.1";
  view.inventory.hostname = name + ".example";
  view.inventory.instance_id = "inst-" + name;
  for (int i = 0; i < gpus; ++i) {
    view.inventory.gpus.push_back(
        {i, "NVIDIA H100 80GB HBM3", "GPU-" + name + "-" + std::to_string(i), int64_t{80} << 30});
  }
  view.connected = connected;
  view.last_seen = kNow - absl::Milliseconds(1234);
  view.running_jobs = std::move(running);
  view.devices_busy = static_cast<int>(view.running_jobs.size());
  return view;
}

GpuSample Reading(const std::string& job_id, int rank) {
  GpuSample g;
  g.job_id = job_id;
  g.attempt = 1;
  g.rank = rank;
  g.seq = 7;
  g.gpu_index = rank;
  g.gpu_uuid = "GPU-" + std::to_string(rank);
  g.time_unix_ns = 1'700'000'000'123'456'789;
  g.power_w = 312.5;
  g.sm_clock_mhz = 1980;
  g.temperature_c = 61.25;
  g.gpu_utilization_pct = 99;
  return g;
}

// Agents in every state: idle, busy, disconnected, a CPU-only node, one with labels and
// versions; readings with every figure, with absent ones, a non-finite one, a rank
// without a reading and an ended job (absent from `gpus`).
struct Fleet {
  std::vector<AgentView> agents;
  LiveMetrics live;
};

void Populate(Fleet& fleet) {
  fleet.agents.push_back(Agent("idle", 8, true, {}));
  fleet.agents.push_back(Agent("busy", 8, true, {"job-a", "job-b"}));
  fleet.agents.push_back(Agent("gone", 2, false, {"job-c"}));
  AgentView cpu = Agent("cpu-only", 0, true, {});
  cpu.inventory.cpu_slots = 4;
  cpu.inventory.address = "";
  fleet.agents.push_back(cpu);
  AgentView labelled = Agent("labelled", 1, true, {});
  labelled.inventory.versions = {{"driver", "550.54.15"}};
  labelled.inventory.labels = {{"rack", "r12"}};
  labelled.inventory.gpus[0].name = "";
  labelled.inventory.gpus[0].memory_bytes = 0;
  fleet.agents.push_back(labelled);

  fleet.live.JobStarted("job-a", {"resnet50", "bf16", 256, 8});
  for (int rank = 0; rank < 8; ++rank)
    fleet.live.RecordGpuSample("job-a", "busy", Reading("job-a", rank));
  GpuSample partial = Reading("job-b", 0);
  partial.power_w.reset();
  partial.temperature_c.reset();
  partial.sm_clock_mhz = std::numeric_limits<double>::quiet_NaN();
  fleet.live.JobStarted("job-b", {"resnet50", "fp32", 64, 2});
  fleet.live.RecordGpuSample("job-b", "busy", partial);
  IterationSample it;
  it.job_id = "job-b";
  it.attempt = 1;
  it.rank = 1;
  it.iteration = 1;
  it.images = 64;
  it.elapsed_s = 0.5;
  fleet.live.RecordIteration("job-b", "busy", it);  // rank 1: no reading
  fleet.live.JobStarted("job-ended", {"resnet50", "fp32", 64, 1});
  fleet.live.RecordGpuSample("job-ended", "gone", Reading("job-ended", 0));
  fleet.live.JobEnded("job-ended", 1000.0, kNow);
}

TEST(FleetEventTest, TheHandWrittenEventIsTheProtobufOneByteForByte) {
  Fleet fleet;
  Populate(fleet);
  const std::string old_json = RenderFleetEventWithProtobuf(fleet.agents, &fleet.live, kNow);
  const std::string new_json = RenderFleetEvent(fleet.agents, &fleet.live, kNow);
  EXPECT_EQ(new_json, old_json);
  // The cases are there: 9 readings (job-a's 8, job-b's rank 0), none of the ended job.
  auto parsed = nlohmann::json::parse(new_json);
  ASSERT_EQ(parsed["agents"].size(), 5u);
  ASSERT_EQ(parsed["gpus"].size(), 9u);
  EXPECT_FALSE(parsed["gpus"][8].contains("power_w"));
  EXPECT_FALSE(parsed["gpus"][8].contains("sm_clock_mhz"));
  EXPECT_EQ(parsed["agents"][4]["inventory"]["labels"]["rack"], "r12");
}

TEST(FleetEventTest, AnEmptyFleetAndNoLiveMetrics) {
  EXPECT_EQ(RenderFleetEvent({}, nullptr, kNow), "{\"agents\":[],\"gpus\":[]}");
  EXPECT_EQ(RenderFleetEvent({}, nullptr, kNow), RenderFleetEventWithProtobuf({}, nullptr, kNow));
  LiveMetrics live;
  EXPECT_EQ(RenderFleetEvent({}, &live, kNow), RenderFleetEventWithProtobuf({}, &live, kNow));
}

// Protobuf's printer escapes more than it must ('<', '>', U+2028, ...) and prints maps in
// its own order: the same JSON, parsed.
TEST(FleetEventTest, OddNamesGiveTheSameJson) {
  Fleet fleet;
  Populate(fleet);
  const std::string odd = std::string("n\"o\\d<e>/\xc3\xa9\xe2\x80\xa8\xf0\x9f\x9a\x80") +
                          std::string("\x01\x1f\x7f\t\n", 5) + std::string(1, '\0') + "end";
  AgentView agent = Agent(odd, 2, true, {odd + "-job"});
  agent.inventory.hostname = odd;
  agent.inventory.instance_id = odd;
  agent.inventory.gpus[1].name = odd;
  agent.inventory.gpus[1].uuid = odd;
  for (int i = 0; i < 12; ++i) {
    agent.inventory.labels[odd + std::to_string(i)] = odd;
    agent.inventory.versions["v" + std::to_string(i)] = std::to_string(i);
  }
  fleet.agents.push_back(agent);
  fleet.live.JobStarted(odd, {"resnet50", "fp32", 64, 1});
  GpuSample g = Reading(odd, 0);
  g.gpu_uuid = odd;
  fleet.live.RecordGpuSample(odd, odd, g);

  const std::string old_json = RenderFleetEventWithProtobuf(fleet.agents, &fleet.live, kNow);
  const std::string new_json = RenderFleetEvent(fleet.agents, &fleet.live, kNow);
  const auto old_parsed = nlohmann::json::parse(old_json);
  const auto new_parsed = nlohmann::json::parse(new_json);
  EXPECT_EQ(new_parsed, old_parsed);
  EXPECT_EQ(new_parsed["agents"][5]["inventory"]["name"], odd);
  EXPECT_EQ(new_parsed["agents"][5]["inventory"]["labels"].size(), 12u);
  const auto& readings = new_parsed["gpus"];
  ASSERT_EQ(readings.size(), 10u);
  EXPECT_EQ(readings[9]["job_id"], odd);  // by job id: "n..." after "job-..."
  EXPECT_EQ(readings[9]["node"], odd);
  // Control bytes are escaped: no raw byte below 0x20 in the event.
  for (char c : new_json) EXPECT_GE(static_cast<unsigned char>(c), 0x20);
}

TEST(FleetEventCacheTest, OneRenderingPerTickSharedByEveryCaller) {
  int renders = 0;
  const absl::Time start = kNow;
  FleetEventCache cache(
      absl::Seconds(1), [&](absl::Time) { return "event " + std::to_string(++renders); }, start);
  EXPECT_EQ(cache.renders(), 0);  // nothing rendered while nobody asks
  auto first = cache.Get(start + absl::Milliseconds(100));
  auto second = cache.Get(start + absl::Milliseconds(900));
  EXPECT_EQ(first.get(), second.get());  // the same buffer
  EXPECT_EQ(*first, "event 1");
  EXPECT_EQ(renders, 1);
  auto next = cache.Get(start + absl::Milliseconds(1000));
  EXPECT_EQ(*next, "event 2");
  EXPECT_EQ(*first, "event 1");  // a holder's buffer stays as it was
  // A caller late for its tick gets the newer event, not a new rendering.
  EXPECT_EQ(cache.Get(start + absl::Milliseconds(950)).get(), next.get());
  EXPECT_EQ(cache.Get(start + absl::Seconds(5)).get() == next.get(), false);
  EXPECT_EQ(renders, 3);
  EXPECT_EQ(cache.renders(), 3);
}

TEST(FleetEventCacheTest, ConcurrentCallersOfOneTickShareOneRendering) {
  std::atomic<int> renders{0};
  const absl::Time start = kNow;
  FleetEventCache cache(
      absl::Seconds(1), [&](absl::Time) { return "event " + std::to_string(++renders); }, start);
  std::vector<std::shared_ptr<const std::string>> got(10);
  std::vector<std::thread> clients;
  for (int i = 0; i < 10; ++i) {
    clients.emplace_back([&, i] { got[i] = cache.Get(start + absl::Milliseconds(10 * i)); });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(renders.load(), 1);
  for (const auto& event : got) EXPECT_EQ(event.get(), got[0].get());
}

}  // namespace
}  // namespace bench
