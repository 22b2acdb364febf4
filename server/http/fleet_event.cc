#include "server/http/fleet_event.h"

#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/json_escape.h"
#include "report/json_output.h"
#include "server/rpc/proto_convert.h"

namespace bench {
namespace {

namespace v1 = benchfleet::v1;

void AppendNumber(std::string& out, const char* name, const std::optional<double>& value) {
  if (!value || !std::isfinite(*value)) return;
  absl::StrAppend(&out, ",\"", name, "\":", *value);
}

// `gpus`' items, as before this writer (the same bytes): by job, then rank.
void AppendGpus(std::string& json, LiveMetrics* live, absl::Time now) {
  json += ",\"gpus\":[";
  if (live != nullptr) {
    bool first = true;
    live->VisitLatestGpu(
        now, [&](const std::string& job_id, int rank, const std::string& node, const GpuSample& g) {
          json += first ? "{\"job_id\":" : ",{\"job_id\":";
          AppendJsonString(&json, job_id);
          absl::StrAppend(&json, ",\"rank\":", rank, ",\"node\":");
          AppendJsonString(&json, node);
          absl::StrAppend(&json, ",\"gpu_index\":", g.gpu_index, ",\"gpu_uuid\":");
          AppendJsonString(&json, g.gpu_uuid);
          absl::StrAppend(&json, ",\"time_unix_ns\":\"", g.time_unix_ns, "\"");  // int64: a string
          AppendNumber(json, "power_w", g.power_w);
          AppendNumber(json, "sm_clock_mhz", g.sm_clock_mhz);
          AppendNumber(json, "temperature_c", g.temperature_c);
          AppendNumber(json, "gpu_utilization_pct", g.gpu_utilization_pct);
          json += "}";
          first = false;
        });
  }
  json += "]}";
}

void AppendStringMap(std::string& json, const std::map<std::string, std::string>& map) {
  json += "{";
  bool first = true;
  for (const auto& [key, value] : map) {
    if (!first) json += ",";
    AppendJsonString(&json, key);
    json += ":";
    AppendJsonString(&json, value);
    first = false;
  }
  json += "}";
}

// One AgentStatus as ToProto + report::ToJson print it (types.proto's field order).
void AppendAgent(std::string& json, const AgentView& view) {
  const AgentInventory& inventory = view.inventory;
  json += "{\"inventory\":{\"name\":";
  AppendJsonString(&json, inventory.name);
  json += ",\"address\":";
  AppendJsonString(&json, inventory.address);
  json += ",\"gpus\":[";
  for (size_t i = 0; i < inventory.gpus.size(); ++i) {
    const Gpu& gpu = inventory.gpus[i];
    absl::StrAppend(&json, i ? ",{\"index\":" : "{\"index\":", gpu.index, ",\"name\":");
    AppendJsonString(&json, gpu.name);
    json += ",\"uuid\":";
    AppendJsonString(&json, gpu.uuid);
    absl::StrAppend(&json, ",\"memory_bytes\":\"", gpu.memory_bytes, "\"}");
  }
  absl::StrAppend(&json, "],\"cpu_slots\":", inventory.cpu_slots, ",\"hostname\":");
  AppendJsonString(&json, inventory.hostname);
  json += ",\"versions\":";
  AppendStringMap(json, inventory.versions);
  json += ",\"labels\":";
  AppendStringMap(json, inventory.labels);
  json += ",\"instance_id\":";
  AppendJsonString(&json, inventory.instance_id);
  absl::StrAppend(&json, "},\"connected\":", view.connected ? "true" : "false",
                  ",\"last_seen_unix_ms\":\"", absl::ToUnixMillis(view.last_seen),
                  "\",\"running_jobs\":[");
  for (size_t i = 0; i < view.running_jobs.size(); ++i) {
    if (i) json += ",";
    AppendJsonString(&json, view.running_jobs[i]);
  }
  absl::StrAppend(&json, "],\"devices_total\":", inventory.device_count(),
                  ",\"devices_busy\":", view.devices_busy, "}");
}

}  // namespace

std::string RenderFleetEvent(const std::vector<AgentView>& agents, LiveMetrics* live,
                             absl::Time now) {
  std::string json;
  json.reserve(1024 + agents.size() * 1200);
  json += "{\"agents\":[";
  for (size_t i = 0; i < agents.size(); ++i) {
    if (i) json += ",";
    AppendAgent(json, agents[i]);
  }
  json += "]";
  AppendGpus(json, live, now);
  return json;
}

std::string RenderFleetEventWithProtobuf(const std::vector<AgentView>& agents, LiveMetrics* live,
                                         absl::Time now) {
  v1::ListAgentsResponse list;
  for (const AgentView& view : agents) ToProto(view, list.add_agents());
  std::string json = report::ToJson(list);  // {"agents":[...]}\n
  while (!json.empty() && json.back() != '}') json.pop_back();
  if (!json.empty()) json.pop_back();
  json += ",\"gpus\":[";
  if (live != nullptr) {
    bool first = true;
    for (const auto& [job_id, job] : live->Take(now).jobs) {
      if (job.ended) continue;
      for (const auto& [rank, state] : job.ranks) {
        if (!state.gpu) continue;
        const GpuSample& g = *state.gpu;
        absl::StrAppend(&json, first ? "" : ",", "{\"job_id\":", report::JsonQuote(job_id),
                        ",\"rank\":", rank, ",\"node\":", report::JsonQuote(state.node),
                        ",\"gpu_index\":", g.gpu_index,
                        ",\"gpu_uuid\":", report::JsonQuote(g.gpu_uuid), ",\"time_unix_ns\":\"",
                        g.time_unix_ns, "\"");
        AppendNumber(json, "power_w", g.power_w);
        AppendNumber(json, "sm_clock_mhz", g.sm_clock_mhz);
        AppendNumber(json, "temperature_c", g.temperature_c);
        AppendNumber(json, "gpu_utilization_pct", g.gpu_utilization_pct);
        json += "}";
        first = false;
      }
    }
  }
  return json + "]}";
}

FleetEventCache::FleetEventCache(absl::Duration period, Render render, absl::Time start)
    : period_(period > absl::ZeroDuration() ? period : absl::Seconds(1)),
      render_(std::move(render)),
      start_(start) {}

std::shared_ptr<const std::string> FleetEventCache::Get(absl::Time now) {
  absl::Duration rest;
  const int64_t tick = now <= start_ ? 0 : absl::IDivDuration(now - start_, period_, &rest);
  // Rendered under the lock: the other callers of the tick wait for it, then share it.
  absl::MutexLock lock(&mu_);
  if (event_ == nullptr || tick > tick_) {  // a caller late for its tick takes the newer
    event_ = std::make_shared<const std::string>(render_(now));
    tick_ = tick;
    ++renders_;
  }
  return event_;
}

int64_t FleetEventCache::renders() const {
  absl::MutexLock lock(&mu_);
  return renders_;
}

}  // namespace bench
