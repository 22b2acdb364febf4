// Placement of a job's ranks onto agents: pure logic, no I/O, no clock.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/job.h"

namespace bench {

// What one schedulable agent has right now.
struct AgentCapacity {
  std::string agent;
  DeviceKind kind = DeviceKind::kCpu;
  int total_devices = 0;
  std::vector<int> free_devices;  // device indices not held by any job
};

struct PlacementPlan {
  DeviceKind kind = DeviceKind::kNone;
  std::vector<Placement> placements;  // placements[0] hosts rank 0
};

// The device kind a job of `devices` ranks runs on: GPUs when the GPU fleet (free or
// not) can ever hold it, else CPU slots; kNone when neither can.
DeviceKind ChooseDeviceKind(int devices, const std::vector<AgentCapacity>& agents);

// Total devices of `kind` across `agents`, free or not.
int FleetDevices(DeviceKind kind, const std::vector<AgentCapacity>& agents);

// Places `devices` ranks on free devices of `kind` (chosen by the caller from the whole
// registered fleet with ChooseDeviceKind, so that a GPU job never lands on CPU slots
// while a GPU agent reconnects), filling the agents with the most free devices first
// (whole nodes before fragments, so a job spans as few nodes as possible), ties by
// name; lowest device indices first. Ranks are numbered contiguously per agent.
// nullopt when the free devices do not suffice now.
std::optional<PlacementPlan> PlaceJob(int devices, DeviceKind kind,
                                      const std::vector<AgentCapacity>& agents);

}  // namespace bench
