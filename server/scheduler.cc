#include "server/scheduler.h"

#include <algorithm>

namespace bench {

int FleetDevices(DeviceKind kind, const std::vector<AgentCapacity>& agents) {
  int total = 0;
  for (const auto& agent : agents) {
    if (agent.kind == kind) total += agent.total_devices;
  }
  return total;
}

DeviceKind ChooseDeviceKind(int devices, const std::vector<AgentCapacity>& agents) {
  if (devices <= FleetDevices(DeviceKind::kCuda, agents)) return DeviceKind::kCuda;
  if (devices <= FleetDevices(DeviceKind::kCpu, agents)) return DeviceKind::kCpu;
  return DeviceKind::kNone;
}

std::optional<PlacementPlan> PlaceJob(int devices, DeviceKind kind,
                                      const std::vector<AgentCapacity>& agents) {
  if (kind == DeviceKind::kNone || devices < 1) return std::nullopt;

  std::vector<const AgentCapacity*> candidates;
  for (const auto& agent : agents) {
    if (agent.kind == kind && !agent.free_devices.empty()) candidates.push_back(&agent);
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const AgentCapacity* a, const AgentCapacity* b) {
              if (a->free_devices.size() != b->free_devices.size()) {
                return a->free_devices.size() > b->free_devices.size();
              }
              return a->agent < b->agent;
            });

  PlacementPlan plan;
  plan.kind = kind;
  int next_rank = 0;
  for (const AgentCapacity* agent : candidates) {
    if (next_rank == devices) break;
    std::vector<int> free = agent->free_devices;
    std::sort(free.begin(), free.end());
    int take = std::min<int>(devices - next_rank, static_cast<int>(free.size()));
    Placement placement;
    placement.agent = agent->agent;
    for (int i = 0; i < take; ++i) {
      placement.ranks.push_back(next_rank++);
      placement.device_indices.push_back(free[i]);
    }
    plan.placements.push_back(std::move(placement));
  }
  if (next_rank < devices) return std::nullopt;
  return plan;
}

}  // namespace bench
