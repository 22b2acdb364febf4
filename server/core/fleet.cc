#include "server/core/fleet.h"

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/quote.h"
#include "server/core/inventory_validation.h"

namespace bench {

absl::Status Fleet::NormalizeInventory(AgentInventory& inventory) {
  if (inventory.name.empty()) inventory.name = inventory.hostname;
  if (inventory.name.empty()) {
    return absl::InvalidArgumentError("inventory.name: an agent needs a name");
  }
  if (absl::Status valid = ValidateInventory(inventory); !valid.ok()) return valid;
  if (inventory.gpus.empty() && inventory.cpu_slots < 1) {
    return absl::InvalidArgumentError(absl::StrCat("inventory: agent ", QuotePrefix(inventory.name),
                                                   " offers no GPUs and no CPU slots"));
  }
  return absl::OkStatus();
}

Fleet::Agent* Fleet::Find(const std::string& name) {
  auto it = agents_.find(name);
  return it == agents_.end() ? nullptr : &it->second;
}

const Fleet::Agent* Fleet::Find(const std::string& name) const {
  auto it = agents_.find(name);
  return it == agents_.end() ? nullptr : &it->second;
}

void Fleet::Register(const AgentInventory& inventory) {
  ++version_;
  Agent& agent = agents_[inventory.name];
  const char* how = agent.lost          ? " returned: "
                    : agent.placeholder ? " reconnected after benchd restarted: "
                                        : " registered: ";
  agent.inventory = inventory;
  agent.last_seen = clock_->SteadyNow();
  agent.last_seen_wall = clock_->Now();
  agent.lost = false;
  if (agent.placeholder) --placeholders_;
  agent.placeholder = false;
  Log("agent ", inventory.name, how,
      inventory.gpus.empty() ? absl::StrCat(inventory.cpu_slots, " CPU slots")
                             : absl::StrCat(inventory.gpus.size(), " GPUs"),
      " at ", inventory.address);
}

void Fleet::AddPlaceholder(const std::string& name, SteadyTime expires) {
  Agent& agent = agents_[name];
  if (!agent.inventory.name.empty()) return;
  ++version_;
  agent.inventory.name = name;
  agent.placeholder = true;
  ++placeholders_;
  agent.last_seen = expires;
  agent.last_seen_wall = clock_->Now();
}

void Fleet::ExtendPlaceholders(SteadyTime expires) {
  for (auto& [name, agent] : agents_) {
    if (agent.placeholder) agent.last_seen = expires;
  }
}

bool Fleet::Known(const std::string& name) const { return Find(name) != nullptr; }

bool Fleet::Registered(const std::string& name) const {
  const Agent* agent = Find(name);
  return agent != nullptr && !agent->lost && !agent->placeholder;
}

void Fleet::Touch(const std::string& name) {
  if (Agent* agent = Find(name)) {
    agent->last_seen = clock_->SteadyNow();
    agent->last_seen_wall = clock_->Now();
  }
}

const AgentInventory* Fleet::Inventory(const std::string& name) const {
  const Agent* agent = Find(name);
  return agent == nullptr ? nullptr : &agent->inventory;
}

AgentChannel* Fleet::Channel(const std::string& name) const {
  const Agent* agent = Find(name);
  return agent == nullptr ? nullptr : agent->channel;
}

absl::Status Fleet::Attach(const std::string& name, AgentChannel* channel) {
  Agent* agent = Find(name);
  if (agent == nullptr || agent->lost) {
    return absl::NotFoundError(absl::StrCat("agent ", name, " is not registered"));
  }
  if (agent->channel != nullptr && agent->channel != channel) {
    agent->channel->Close(absl::AbortedError("replaced by a newer assignment stream"));
  }
  if (agent->channel != channel) ++version_;
  agent->channel = channel;
  Touch(name);
  return absl::OkStatus();
}

void Fleet::Detach(const std::string& name, AgentChannel* channel) {
  Agent* agent = Find(name);
  if (agent != nullptr && agent->channel == channel) {
    agent->channel = nullptr;
    ++version_;
  }
}

void Fleet::CloseAll(const absl::Status& status) {
  ++version_;
  for (auto& [name, agent] : agents_) {
    if (agent.channel != nullptr) {
      agent.channel->Close(status);
      agent.channel = nullptr;
    }
  }
}

void Fleet::Hold(const std::string& name, int device, const std::string& job_id, int attempt,
                 int rank) {
  ++version_;
  agents_[name].busy[device] = Holder{job_id, attempt, rank};
}

void Fleet::Release(const std::string& name, const std::string& job_id, int attempt,
                    std::optional<int> rank) {
  Agent* agent = Find(name);
  if (agent == nullptr) return;
  auto& busy = agent->busy;
  for (auto it = busy.begin(); it != busy.end();) {
    const Holder& holder = it->second;
    bool match =
        holder.job_id == job_id && holder.attempt == attempt && (!rank || holder.rank == *rank);
    if (match) ++version_;
    it = match ? busy.erase(it) : std::next(it);
  }
}

std::set<Fleet::Attempt> Fleet::HeldAttempts(const std::string& name) const {
  std::set<Attempt> held;
  if (const Agent* agent = Find(name)) {
    for (const auto& [device, holder] : agent->busy) held.insert({holder.job_id, holder.attempt});
  }
  return held;
}

std::vector<AgentCapacity> Fleet::Capacities() const {
  std::vector<AgentCapacity> capacities;
  for (const auto& [name, agent] : agents_) {
    if (agent.lost || agent.placeholder) continue;
    AgentCapacity capacity;
    capacity.agent = name;
    capacity.kind = agent.inventory.kind();
    capacity.total_devices = agent.inventory.device_count();
    capacity.labels = agent.inventory.labels;
    capacity.connected = agent.channel != nullptr;
    if (agent.inventory.gpus.empty()) {
      capacity.free_devices = FreeDevices::Range(capacity.total_devices);
    } else {
      std::vector<int> indices;
      for (const Gpu& gpu : agent.inventory.gpus) indices.push_back(gpu.index);
      capacity.free_devices = FreeDevices(std::move(indices));
    }
    for (const auto& [device, holder] : agent.busy) capacity.free_devices.Take(device);
    capacities.push_back(std::move(capacity));
  }
  return capacities;
}

int Fleet::ExpireLeases(SteadyTime now, absl::Duration lease,
                        const std::function<void(const LostAgent&)>& on_lost) {
  auto lease_ms = absl::ToChronoMilliseconds(lease);
  int lost = 0;
  for (auto& [name, agent] : agents_) {
    if (agent.lost || now - agent.last_seen < lease_ms) continue;
    agent.lost = true;
    LostAgent entry = TakeOut(name, agent, absl::UnavailableError("lease expired"));
    ++lost;
    on_lost(entry);
  }
  return lost;
}

absl::StatusOr<Fleet::LostAgent> Fleet::Remove(const std::string& name,
                                               const std::string& instance_id) {
  if (!Registered(name)) {
    return absl::NotFoundError(absl::StrCat("agent ", name, " is not registered"));
  }
  auto it = agents_.find(name);
  const std::string& registered = it->second.inventory.instance_id;
  if (!instance_id.empty() && !registered.empty() && registered != instance_id) {
    return absl::FailedPreconditionError(
        absl::StrCat("agent ", name, " registered again since (instance ", registered,
                     ", not ", instance_id, "); the new one stays"));
  }
  LostAgent entry = TakeOut(name, it->second, absl::UnavailableError("agent stopped"));
  agents_.erase(it);
  return entry;
}

Fleet::LostAgent Fleet::TakeOut(const std::string& name, Agent& agent,
                                const absl::Status& status) {
  ++version_;
  LostAgent entry;
  entry.name = name;
  entry.was_placeholder = agent.placeholder;
  if (agent.placeholder) --placeholders_;
  agent.placeholder = false;
  if (agent.channel != nullptr) {
    agent.channel->Close(status);
    agent.channel = nullptr;
  }
  for (const auto& [device, holder] : agent.busy) {
    entry.held.insert({holder.job_id, holder.attempt});
  }
  agent.busy.clear();
  return entry;
}

void Fleet::AddTo(FleetCounts& counts) const {
  for (const auto& [name, agent] : agents_) {
    bool connected = agent.channel != nullptr && !agent.lost;
    if (connected) ++counts.agents_connected;
    // A lost agent's devices are not in the pool until it returns.
    if (agent.lost || agent.placeholder) continue;
    counts.nodes.push_back({name, DeviceKindText(agent.inventory.kind()),
                            agent.inventory.device_count(), static_cast<int>(agent.busy.size())});
  }
}

std::vector<AgentView> Fleet::Views() const {
  std::vector<AgentView> views;
  for (const auto& [name, agent] : agents_) {
    AgentView view;
    view.inventory = agent.inventory;
    view.connected = agent.channel != nullptr && !agent.lost;
    view.last_seen = agent.last_seen_wall;
    view.devices_busy = static_cast<int>(agent.busy.size());
    std::set<std::string> running;
    for (const auto& [device, holder] : agent.busy) running.insert(holder.job_id);
    view.running_jobs.assign(running.begin(), running.end());
    views.push_back(std::move(view));
  }
  return views;
}

}  // namespace bench
