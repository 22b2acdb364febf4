// What the live fleet stream's event costs at a big fleet (run by hand;
// docs/PERFORMANCE.md "The live fleet stream at 1,024 nodes").
//
//   build/bin/fleet_stream_bench [AGENTS] [RUNS] [CLIENTS]
//       defaults: 1024 agents of 8 GPUs, every GPU busy (8,192 readings), 50 runs,
//       10 clients
//
// Renders the `fleet` event (server/http/fleet_event.h) from AGENTS agent views and a
// LiveMetrics holding one 8-rank job per agent, each rank with its latest reading: the
// former rendering (protobuf's JSON printer, LiveMetrics::Take's copy) and the
// hand-written one, byte-compared (map entries aside); then one fleet_period of CLIENTS open
// streams, as before (each client its own rendering) and now (FleetEventCache: one rendering,
// shared). Prints the median and minimum of the thread's CPU microseconds per rendering and per
// period, and the event's size. JobManager::ListAgents' copy of the agents (once per
// rendering) is not included.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "server/http/fleet_event.h"

namespace {

double ThreadCpuMicros() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

struct Figures {
  double median = 0, min = 0;
};

Figures Measure(int runs, const std::function<void()>& work) {
  std::vector<double> us;
  for (int i = 0; i < runs; ++i) {
    const double start = ThreadCpuMicros();
    work();
    us.push_back(ThreadCpuMicros() - start);
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us.front()};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bench;
  const int agents_n = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 50;
  const int clients = argc > 3 ? std::atoi(argv[3]) : 10;
  const absl::Time now = absl::Now();

  std::vector<AgentView> agents;
  LiveMetrics live;
  for (int a = 0; a < agents_n; ++a) {
    AgentView view;
    const std::string name = "sim-node-" + std::to_string(a);
    const std::string job = "job-" + std::to_string(100000 + a);
    view.inventory.name = name;
    view.inventory.address = "10.1." + std::to_string(a / 256) + "." + std::to_string(a % 256);
    view.inventory.hostname = name + ".cluster.local";
    view.inventory.instance_id = "5f1c2a9e-" + std::to_string(a);
    view.inventory.versions = {
        {"cuda_driver", "12.4"}, {"driver", "550.54.15"}, {"nvml", "12.550.54.15"}};
    view.inventory.labels = {{"rack", "r" + std::to_string(a / 32)}};
    for (int g = 0; g < 8; ++g) {
      view.inventory.gpus.push_back(
          {g, "NVIDIA H100 80GB HBM3",
           "GPU-" + std::to_string(a) + "-" + std::to_string(g) + "-8f0c1d2e-3b4a-5c6d-7e8f",
           int64_t{85899345920}});
    }
    view.connected = true;
    view.last_seen = now;
    view.running_jobs = {job};
    view.devices_busy = 8;
    agents.push_back(view);
    live.JobStarted(job, {"resnet50", "bf16", 256, 8});
    for (int rank = 0; rank < 8; ++rank) {
      GpuSample g;
      g.job_id = job;
      g.attempt = 1;
      g.rank = rank;
      g.seq = 1;
      g.gpu_index = rank;
      g.gpu_uuid = view.inventory.gpus[rank].uuid;
      g.time_unix_ns = absl::ToUnixNanos(now);
      g.power_w = 612.25 + rank;
      g.sm_clock_mhz = 1980;
      g.temperature_c = 63 + rank;
      g.gpu_utilization_pct = 99;
      live.RecordGpuSample(job, name, g);
    }
  }

  // The same bytes as protobuf's printer, but for the order of map entries (protobuf's
  // hash map order; the writer's by key): compared with one entry per map.
  std::vector<AgentView> one_entry = agents;
  for (AgentView& view : one_entry) {
    view.inventory.versions.erase(std::next(view.inventory.versions.begin()),
                                  view.inventory.versions.end());
  }
  const bool identical = RenderFleetEventWithProtobuf(one_entry, &live, now) ==
                         RenderFleetEvent(one_entry, &live, now);
  const std::string new_json = RenderFleetEvent(agents, &live, now);
  std::printf(
      "agents %d, busy GPUs with a reading %d, event %zu bytes, "
      "identical to protobuf's (one entry per map): %s\n",
      agents_n, agents_n * 8, new_json.size(), identical ? "yes" : "NO");

  size_t sink = 0;
  const Figures old_one =
      Measure(runs, [&] { sink += RenderFleetEventWithProtobuf(agents, &live, now).size(); });
  const Figures new_one =
      Measure(runs, [&] { sink += RenderFleetEvent(agents, &live, now).size(); });
  const Figures old_period = Measure(runs, [&] {
    for (int c = 0; c < clients; ++c)
      sink += RenderFleetEventWithProtobuf(agents, &live, now).size();
  });
  int tick = 0;
  const Figures new_period = Measure(runs, [&] {
    // A fresh tick per period: the first client renders, the others share its buffer.
    FleetEventCache cache(
        absl::Seconds(1), [&](absl::Time t) { return RenderFleetEvent(agents, &live, t); },
        now - absl::Seconds(++tick));
    for (int c = 0; c < clients; ++c) sink += cache.Get(now)->size();
  });
  std::printf("one rendering, protobuf printer:  median %10.0f us CPU (min %.0f)\n", old_one.median,
              old_one.min);
  std::printf("one rendering, hand-written:      median %10.0f us CPU (min %.0f)\n", new_one.median,
              new_one.min);
  std::printf("a period of %d clients, before:   median %10.0f us CPU (min %.0f)\n", clients,
              old_period.median, old_period.min);
  std::printf("a period of %d clients, now:      median %10.0f us CPU (min %.0f)\n", clients,
              new_period.median, new_period.min);
  std::printf("(sink %zu)\n", sink);
  return identical ? 0 : 1;
}
