// The fleet: the registered agents, their assignment streams (AgentChannel), their
// leases, and which rank of which attempt holds each of their devices. It answers the
// scheduler's question (Capacities: free devices counted per agent, never one entry per
// CPU slot) and the read side's (Views, AddTo). It knows jobs only as (job id, attempt,
// rank) holders and nothing of the store: tests drive it alone (fleet_test.cc).
//
// Thread-safety: none of its own. The JobManager owns it and calls it under its one
// mutex, so that a job's lifecycle sees fleet, job table and store writes at once.
// Channels are called from under that mutex and must not block.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "server/core/agent_messages.h"
#include "server/core/job.h"
#include "server/core/scheduler.h"
#include "server/core/views.h"
#include "server/metrics/metrics_exporter.h"

namespace bench {

class Fleet {
 public:
  using SteadyTime = Clock::SteadyTime;
  // (job id, attempt): an attempt that holds devices on an agent.
  using Attempt = std::pair<std::string, int>;

  // An agent whose lease ExpireLeases ended.
  struct LostAgent {
    std::string name;
    bool was_placeholder = false;  // it never reconnected after benchd restarted
    std::set<Attempt> held;        // what held its devices (now freed)
  };

  // `clock` (not owned, never null) says when an agent was heard from.
  explicit Fleet(const Clock* clock = Clock::Real()) : clock_(clock) {}

  // Names an unnamed inventory after its host; INVALID_ARGUMENT without a name, without
  // any GPU or CPU slot, or past a bound of inventory_validation.h (name charset and
  // length, unique GPU indexes and UUIDs, at most 4096 CPU slots and 64 GPUs, labels).
  static absl::Status NormalizeInventory(AgentInventory& inventory);

  // Registers (or re-registers: a lost agent returns, a placeholder reconnects) the
  // agent; it is heard from now. Its devices' holders are kept.
  void Register(const AgentInventory& inventory);
  // An agent known only from a recovered RUNNING job's placement: it counts as lost
  // once `expires` is a lease ago. Nothing if the agent is known.
  void AddPlaceholder(const std::string& name, SteadyTime expires);
  // Moves every placeholder's expiry to `expires` (benchd started serving).
  void ExtendPlaceholders(SteadyTime expires);
  // Placeholders not yet registered again nor lost: the agents a restart still waits for.
  int placeholders() const { return placeholders_; }

  // Known at all (registered, placeholder or lost).
  bool Known(const std::string& name) const;
  // Registered and neither lost nor a placeholder.
  bool Registered(const std::string& name) const;
  // The agent was heard from (nothing if unknown).
  void Touch(const std::string& name);
  // Null if unknown.
  const AgentInventory* Inventory(const std::string& name) const;
  // The agent's open stream, or null.
  AgentChannel* Channel(const std::string& name) const;

  // NOT_FOUND unless known and not lost. A stream it replaces is closed (ABORTED).
  absl::Status Attach(const std::string& name, AgentChannel* channel);
  // Forgets `channel` if it is still the agent's stream.
  void Detach(const std::string& name, AgentChannel* channel);
  // Closes every stream with `status` and forgets them.
  void CloseAll(const absl::Status& status);

  // `device` of the agent is held by `rank` of (job_id, attempt).
  void Hold(const std::string& name, int device, const std::string& job_id, int attempt, int rank);
  // Frees the agent's devices held by (job_id, attempt), or only by `rank` of it.
  void Release(const std::string& name, const std::string& job_id, int attempt,
               std::optional<int> rank = std::nullopt);
  // The attempts that hold devices on the agent.
  std::set<Attempt> HeldAttempts(const std::string& name) const;

  // Every agent that is neither lost nor a placeholder, with its free devices counted
  // (agents without a stream count as not connected).
  std::vector<AgentCapacity> Capacities() const;
  // Changes whenever Capacities() may answer differently (an agent registered, lost or
  // gone, a stream attached or detached, a device held or freed); never otherwise, so
  // that a caller may keep what it derived from Capacities() while it is equal.
  uint64_t version() const { return version_; }
  // Agents silent since before now - lease become lost: each one's stream is closed
  // (UNAVAILABLE "lease expired") and its devices freed, then `on_lost` is called with
  // it (in name order, before the next agent is looked at; it may call the fleet).
  // Returns how many were lost.
  int ExpireLeases(SteadyTime now, absl::Duration lease,
                   const std::function<void(const LostAgent&)>& on_lost);

  // The agent said it stops (Deregister): its stream is closed (UNAVAILABLE "agent
  // stopped"), its devices freed and it is forgotten (it may register again later).
  // Returns what it held; NOT_FOUND unless it is registered, FAILED_PRECONDITION (and
  // nothing removed) when `instance_id` is set and another agent process registered
  // under that name since.
  absl::StatusOr<LostAgent> Remove(const std::string& name, const std::string& instance_id);

  // Adds connected agents and the pool's nodes (not lost, not placeholders) to `counts`.
  void AddTo(FleetCounts& counts) const;
  // Every known agent, in name order.
  std::vector<AgentView> Views() const;

 private:
  struct Holder {
    std::string job_id;
    int attempt = 0;
    int rank = 0;
  };
  struct Agent {
    AgentInventory inventory;
    AgentChannel* channel = nullptr;
    SteadyTime last_seen;
    absl::Time last_seen_wall;
    bool lost = false;
    // Known only from a RUNNING job's placement after a restart; not registered yet.
    bool placeholder = false;
    std::map<int, Holder> busy;  // device index → what holds it: only the held ones
  };
  // Closes the agent's stream with `status`, frees its devices; returns what held them.
  LostAgent TakeOut(const std::string& name, Agent& agent, const absl::Status& status);
  Agent* Find(const std::string& name);
  const Agent* Find(const std::string& name) const;

  const Clock* const clock_;
  std::map<std::string, Agent> agents_;
  int placeholders_ = 0;  // agents_ with placeholder set
  uint64_t version_ = 0;  // see version()
};

}  // namespace bench
