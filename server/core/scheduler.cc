#include "server/core/scheduler.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/quote.h"

namespace bench {
namespace {

std::string Plural(int n, const std::string& noun) {
  return absl::StrCat(n, " ", noun, n == 1 ? "" : "s");
}

const char* DeviceNoun(DeviceKind kind) { return kind == DeviceKind::kCuda ? "GPU" : "CPU slot"; }

bool Shaped(const PlacementRequest& request) {
  return request.nodes > 0 && request.devices_per_node > 0;
}

std::vector<int> LowestFree(const AgentCapacity& agent, int count) {
  return agent.free_devices.Lowest(count);
}

// Connected eligible agents of `kind` with at least `min_free` free devices.
std::vector<const AgentCapacity*> Candidates(const PlacementRequest& request, DeviceKind kind,
                                             const std::vector<AgentCapacity>& agents,
                                             size_t min_free) {
  std::vector<const AgentCapacity*> candidates;
  for (const AgentCapacity& agent : agents) {
    if (agent.kind == kind && agent.connected &&
        static_cast<size_t>(agent.free_devices.size()) >= min_free && Eligible(request, agent)) {
      candidates.push_back(&agent);
    }
  }
  return candidates;
}

// Fewest free devices first (best fit), then by name.
bool FewerFree(const AgentCapacity* a, const AgentCapacity* b) {
  if (a->free_devices.size() != b->free_devices.size()) {
    return a->free_devices.size() < b->free_devices.size();
  }
  return a->agent < b->agent;
}

bool CanEverHold(const PlacementRequest& request, DeviceKind kind,
                 const std::vector<AgentCapacity>& agents) {
  int devices = 0;
  int nodes = 0;
  for (const AgentCapacity& agent : agents) {
    if (agent.kind != kind || !Eligible(request, agent)) continue;
    devices += agent.total_devices;
    if (agent.total_devices >= request.devices_per_node) ++nodes;
  }
  return Shaped(request) ? nodes >= request.nodes : devices >= request.devices;
}

void Take(const PlacementPlan& plan, std::vector<AgentCapacity>& agents) {
  for (const Placement& placement : plan.placements) {
    for (AgentCapacity& agent : agents) {
      if (agent.agent != placement.agent) continue;
      for (int device : placement.device_indices) agent.free_devices.Take(device);
    }
  }
}

void Give(const std::vector<Placement>& placements, std::vector<AgentCapacity>& agents) {
  for (const Placement& placement : placements) {
    for (AgentCapacity& agent : agents) {
      if (agent.agent != placement.agent) continue;
      for (int device : placement.device_indices) agent.free_devices.Give(device);
    }
  }
}

// The first few items of a constraint list, and how many there are in all when there are
// more: a reason (stored with each state change, sent in every status) stays short even for
// a spec at spec_validation.h's limits (256 nodes, 32 labels).
constexpr size_t kConstraintsListed = 8;

template <typename Container, typename Formatter>
std::string FirstItems(const Container& items, Formatter formatter) {
  if (items.size() <= kConstraintsListed) return absl::StrJoin(items, ", ", formatter);
  auto end = items.begin();
  std::advance(end, kConstraintsListed);
  return absl::StrCat(absl::StrJoin(items.begin(), end, ", ", formatter), ", \xe2\x80\xa6 (",
                      items.size(), " in all)");
}

// Constraints are the submitter's bytes: control bytes are shown escaped, never raw.
void EscapedFormatter(std::string* out, const std::string& value) {
  out->append(EscapeBytes(value));
}

std::string DescribeConstraints(const PlacementRequest& request) {
  std::vector<std::string> parts;
  if (!request.allowed_nodes.empty()) {
    parts.push_back(
        absl::StrCat("nodes ", FirstItems(request.allowed_nodes, EscapedFormatter)));
  }
  if (!request.node_labels.empty()) {
    parts.push_back(
        absl::StrCat("labels ", FirstItems(request.node_labels,
                                           absl::PairFormatter(EscapedFormatter, "=",
                                                               EscapedFormatter))));
  }
  if (Shaped(request)) {
    parts.push_back(absl::StrCat(request.nodes, " nodes × ", request.devices_per_node));
  }
  return absl::StrJoin(parts, "; ");
}

// Why a job that does not fit in the free devices now waits.
std::string NoRoomReason(const PlacementRequest& request, DeviceKind kind,
                         const std::vector<AgentCapacity>& agents) {
  const char* noun = DeviceNoun(kind);
  if (Shaped(request)) {
    size_t nodes = Candidates(request, kind, agents, request.devices_per_node).size();
    return absl::StrCat("waiting for ", Plural(request.nodes, "node"), " with ",
                        request.devices_per_node, " free ", noun, "s each (",
                        nodes, " such now)");
  }
  int free = 0;
  for (const AgentCapacity* agent : Candidates(request, kind, agents, 1)) {
    free += static_cast<int>(agent->free_devices.size());
  }
  return absl::StrCat("waiting for ", Plural(request.devices, absl::StrCat("free ", noun)),
                      " (", free, " free now on eligible connected agents)");
}

std::string FormatUtc(absl::Time time) {
  return absl::FormatTime("%H:%M:%S UTC", time, absl::UTCTimeZone());
}

// The first waiting job's reservation.
struct Reservation {
  std::string job_id;
  absl::Time shadow = absl::InfiniteFuture();  // when it can start at the latest
  std::vector<Placement> reserved;              // its devices then
};

// Free devices of `kind` on connected agents, eligible or not: no placement of that kind
// takes more.
int FreeConnected(DeviceKind kind, const std::vector<AgentCapacity>& agents) {
  int free = 0;
  for (const AgentCapacity& agent : agents) {
    if (agent.kind == kind && agent.connected) free += agent.free_devices.size();
  }
  return free;
}

Reservation Reserve(const QueuedJob& job, DeviceKind kind, std::vector<AgentCapacity> agents,
                    std::vector<RunningAllocation> running, absl::Time now) {
  Reservation reservation;
  reservation.job_id = job.job_id;
  std::sort(running.begin(), running.end(),
            [](const RunningAllocation& a, const RunningAllocation& b) {
              return a.expected_end < b.expected_end;
            });
  // At most this many free once the allocations so far have ended: placing is tried only
  // when it could succeed (a long list of small running jobs before a large head).
  int free_bound = FreeConnected(kind, agents);
  for (const RunningAllocation& allocation : running) {
    Give(allocation.placements, agents);
    for (const Placement& placement : allocation.placements) {
      free_bound += static_cast<int>(placement.device_indices.size());
    }
    if (free_bound < job.request.devices) continue;
    std::optional<PlacementPlan> plan = PlaceJob(job.request, kind, agents);
    if (!plan) continue;
    reservation.shadow = std::max(now, allocation.expected_end);
    reservation.reserved = plan->placements;
    break;
  }
  return reservation;
}

// `agents` without the reserved devices.
std::vector<AgentCapacity> Without(std::vector<AgentCapacity> agents,
                                   const Reservation& reservation) {
  PlacementPlan plan;
  plan.placements = reservation.reserved;
  Take(plan, agents);
  return agents;
}

// One pass's answers for a request: a long queue asks for a few shapes over and over, and
// between two placements taken the capacities do not change, so each shape is worked out
// once per placement (Forget after each), and its device kind once per pass.
class PassMemo {
 public:
  DeviceKind KindOf(const PlacementRequest& request, const std::vector<AgentCapacity>& agents) {
    auto [it, added] = kinds_.try_emplace(KeyOf(request, DeviceKind::kNone, false));
    if (added) it->second = ChooseDeviceKind(request, agents);
    return it->second;
  }
  const std::string& NeverFits(const PlacementRequest& request,
                               const std::vector<AgentCapacity>& agents) {
    auto [it, added] = never_fits_.try_emplace(KeyOf(request, DeviceKind::kNone, false));
    if (added) it->second = NeverFitsReason(request, agents);
    return it->second;
  }
  // PlaceJob on `agents`, which is the pass's whole capacity or (`outside`) that less the
  // first waiting job's reservation.
  const std::optional<PlacementPlan>& Place(const PlacementRequest& request, DeviceKind kind,
                                            const std::vector<AgentCapacity>& agents,
                                            bool outside) {
    auto [it, added] = places_.try_emplace(KeyOf(request, kind, outside));
    if (added) it->second = PlaceJob(request, kind, agents);
    return it->second;
  }
  const std::string& NoRoom(const PlacementRequest& request, DeviceKind kind,
                            const std::vector<AgentCapacity>& agents) {
    auto [it, added] = no_room_.try_emplace(KeyOf(request, kind, false));
    if (added) it->second = NoRoomReason(request, kind, agents);
    return it->second;
  }
  // The capacities changed (a placement was taken).
  void Forget() {
    places_.clear();
    no_room_.clear();
  }

 private:
  using Key = std::tuple<int, int, int, std::vector<std::string>,
                         std::map<std::string, std::string>, DeviceKind, bool>;
  static Key KeyOf(const PlacementRequest& request, DeviceKind kind, bool outside) {
    return Key(request.devices, request.nodes, request.devices_per_node, request.allowed_nodes,
               request.node_labels, kind, outside);
  }
  std::map<Key, DeviceKind> kinds_;
  std::map<Key, std::string> never_fits_;
  std::map<Key, std::optional<PlacementPlan>> places_;
  std::map<Key, std::string> no_room_;
};

}  // namespace

FreeDevices::FreeDevices(std::vector<int> indices) : listed_(std::move(indices)) {
  std::sort(listed_.begin(), listed_.end());
  listed_.erase(std::unique(listed_.begin(), listed_.end()), listed_.end());
}

FreeDevices FreeDevices::Range(int count) {
  FreeDevices free;
  free.range_ = true;
  free.range_size_ = std::max(count, 0);
  return free;
}

bool FreeDevices::InBase(int index) const {
  if (range_) return index >= 0 && index < range_size_;
  return std::binary_search(listed_.begin(), listed_.end(), index);
}

int FreeDevices::size() const {
  int base = range_ ? range_size_ : static_cast<int>(listed_.size());
  return base - static_cast<int>(taken_.size()) + static_cast<int>(given_.size());
}

std::vector<int> FreeDevices::Lowest(int count) const {
  std::vector<int> lowest;
  if (count <= 0) return lowest;
  auto given = given_.begin();
  // The base in ascending order, merged with the given ones, skipping the taken.
  auto emit_given_below = [&](int bound) {
    while (given != given_.end() && *given < bound && static_cast<int>(lowest.size()) < count) {
      lowest.push_back(*given++);
    }
  };
  auto visit = [&](int index) {
    emit_given_below(index);
    if (static_cast<int>(lowest.size()) < count && taken_.count(index) == 0) {
      lowest.push_back(index);
    }
    return static_cast<int>(lowest.size()) < count;
  };
  if (range_) {
    for (int index = 0; index < range_size_ && visit(index); ++index) {
    }
  } else {
    for (int index : listed_) {
      if (!visit(index)) break;
    }
  }
  while (given != given_.end() && static_cast<int>(lowest.size()) < count) {
    lowest.push_back(*given++);
  }
  return lowest;
}

void FreeDevices::Take(int index) {
  if (InBase(index)) {
    taken_.insert(index);
  } else {
    given_.erase(index);
  }
}

void FreeDevices::Give(int index) {
  if (InBase(index)) {
    taken_.erase(index);
  } else {
    given_.insert(index);
  }
}

std::string NeverFitsReason(const PlacementRequest& request,
                            const std::vector<AgentCapacity>& agents) {
  int eligible = 0;
  int gpus = 0;
  int slots = 0;
  for (const AgentCapacity& agent : agents) {
    if (!Eligible(request, agent)) continue;
    ++eligible;
    (agent.kind == DeviceKind::kCuda ? gpus : slots) += agent.total_devices;
  }
  std::string constraints = DescribeConstraints(request);
  if (eligible == 0 && constraints.empty()) {
    return "waiting for agents: none is registered (lost agents count once they return)";
  }
  if (eligible == 0) {
    return absl::StrCat("waiting for agents: no registered agent matches its constraints (",
                        constraints, ")");
  }
  return absl::StrCat("waiting for agents: the eligible registered agents (",
                      Plural(eligible, "agent"), ": ", Plural(gpus, "GPU"), ", ",
                      Plural(slots, "CPU slot"), ") cannot hold ",
                      Shaped(request) ? absl::StrCat(request.nodes, " nodes × ",
                                                     request.devices_per_node, " devices")
                                      : Plural(request.devices, "device"));
}

PlacementRequest PlacementRequestOf(const JobSpec& spec) {
  PlacementRequest request;
  request.devices = spec.devices;
  request.nodes = spec.nodes;
  request.devices_per_node = spec.devices_per_node;
  request.allowed_nodes = spec.allowed_nodes;
  request.node_labels = spec.node_labels;
  return request;
}

bool Eligible(const PlacementRequest& request, const AgentCapacity& agent) {
  if (!request.allowed_nodes.empty() &&
      std::find(request.allowed_nodes.begin(), request.allowed_nodes.end(), agent.agent) ==
          request.allowed_nodes.end()) {
    return false;
  }
  for (const auto& [key, value] : request.node_labels) {
    auto it = agent.labels.find(key);
    if (it == agent.labels.end() || it->second != value) return false;
  }
  return true;
}

int FleetDevices(DeviceKind kind, const std::vector<AgentCapacity>& agents) {
  int total = 0;
  for (const auto& agent : agents) {
    if (agent.kind == kind) total += agent.total_devices;
  }
  return total;
}

DeviceKind ChooseDeviceKind(const PlacementRequest& request,
                            const std::vector<AgentCapacity>& agents) {
  if (request.devices < 1) return DeviceKind::kNone;
  if (CanEverHold(request, DeviceKind::kCuda, agents)) return DeviceKind::kCuda;
  if (CanEverHold(request, DeviceKind::kCpu, agents)) return DeviceKind::kCpu;
  return DeviceKind::kNone;
}

std::optional<PlacementPlan> PlaceJob(const PlacementRequest& request, DeviceKind kind,
                                      const std::vector<AgentCapacity>& agents) {
  if (kind == DeviceKind::kNone || request.devices < 1) return std::nullopt;
  std::vector<const AgentCapacity*> chosen;  // with how many devices each
  std::vector<int> counts;
  if (Shaped(request)) {
    auto candidates = Candidates(request, kind, agents, request.devices_per_node);
    if (static_cast<int>(candidates.size()) < request.nodes) return std::nullopt;
    std::sort(candidates.begin(), candidates.end(), FewerFree);
    candidates.resize(request.nodes);
    std::sort(candidates.begin(), candidates.end(),
              [](const AgentCapacity* a, const AgentCapacity* b) { return a->agent < b->agent; });
    chosen = candidates;
    counts.assign(chosen.size(), request.devices_per_node);
  } else {
    auto candidates = Candidates(request, kind, agents, 1);
    std::sort(candidates.begin(), candidates.end(), FewerFree);
    auto fits = [](int needed) {
      return [needed](const AgentCapacity* agent) {
        return static_cast<int>(agent->free_devices.size()) >= needed;
      };
    };
    auto single = std::find_if(candidates.begin(), candidates.end(), fits(request.devices));
    if (single != candidates.end()) {
      chosen.push_back(*single);
      counts.push_back(request.devices);
    } else {
      // Whole agents, freest first, while the rest needs at least all of one; then the
      // best fit for the remainder.
      std::sort(candidates.begin(), candidates.end(),
                [](const AgentCapacity* a, const AgentCapacity* b) {
                  if (a->free_devices.size() != b->free_devices.size()) {
                    return a->free_devices.size() > b->free_devices.size();
                  }
                  return a->agent < b->agent;
                });
      int remaining = request.devices;
      size_t next = 0;
      while (next < candidates.size() &&
             static_cast<int>(candidates[next]->free_devices.size()) <= remaining) {
        chosen.push_back(candidates[next]);
        counts.push_back(static_cast<int>(candidates[next]->free_devices.size()));
        remaining -= counts.back();
        ++next;
      }
      if (remaining > 0) {
        std::vector<const AgentCapacity*> rest(candidates.begin() + next, candidates.end());
        std::sort(rest.begin(), rest.end(), FewerFree);
        auto fit = std::find_if(rest.begin(), rest.end(), fits(remaining));
        if (fit == rest.end()) return std::nullopt;
        chosen.push_back(*fit);
        counts.push_back(remaining);
      }
    }
  }
  PlacementPlan plan;
  plan.kind = kind;
  int next_rank = 0;
  for (size_t i = 0; i < chosen.size(); ++i) {
    Placement placement;
    placement.agent = chosen[i]->agent;
    placement.device_indices = LowestFree(*chosen[i], counts[i]);
    for (size_t d = 0; d < placement.device_indices.size(); ++d) {
      placement.ranks.push_back(next_rank++);
    }
    plan.placements.push_back(std::move(placement));
  }
  return plan;
}

std::vector<QueueDecision> PlanQueue(const std::vector<QueuedJob>& queue,
                                     std::vector<AgentCapacity> agents,
                                     const std::vector<RunningAllocation>& running,
                                     absl::Time now) {
  std::vector<QueueDecision> decisions;
  decisions.reserve(queue.size());
  std::optional<Reservation> head;
  std::vector<AgentCapacity> outside;  // once `head` is set: `agents` less its reservation
  PassMemo memo;
  for (const QueuedJob& job : queue) {
    QueueDecision decision;
    decision.job_id = job.job_id;
    DeviceKind kind = memo.KindOf(job.request, agents);
    if (kind == DeviceKind::kNone) {
      decision.reason = memo.NeverFits(job.request, agents);
      decisions.push_back(std::move(decision));
      continue;
    }
    if (!head) {
      decision.plan = PlaceJob(job.request, kind, agents);
      if (!decision.plan) {
        head = Reserve(job, kind, agents, running, now);
        outside = Without(agents, *head);
        decision.reason = memo.NoRoom(job.request, kind, agents);
        if (head->shadow != absl::InfiniteFuture()) {
          absl::StrAppend(&decision.reason, "; first in the queue, its devices are reserved "
                                            "and it starts by ",
                          FormatUtc(head->shadow), " at the latest (running jobs' wall-time "
                                                   "limits)");
        }
      }
    } else {
      decision.plan = memo.Place(job.request, kind, outside, /*outside=*/true);
      if (!decision.plan && now + job.wall_time_limit <= head->shadow) {
        decision.plan = memo.Place(job.request, kind, agents, /*outside=*/false);
      }
      decision.backfilled = decision.plan.has_value();
      if (!decision.plan) {
        if (memo.Place(job.request, kind, agents, /*outside=*/false)) {
          decision.reason = absl::StrCat(
              "behind ", head->job_id, ", first in the queue: the free devices are reserved "
              "for it from ", FormatUtc(head->shadow), " and this job's wall-time limit "
              "would run past that");
        } else {
          decision.reason = absl::StrCat(memo.NoRoom(job.request, kind, agents), "; behind ",
                                         head->job_id);
        }
      }
    }
    if (decision.plan) {
      Take(*decision.plan, agents);
      if (head) Take(*decision.plan, outside);
      memo.Forget();
    }
    decisions.push_back(std::move(decision));
  }
  return decisions;
}

}  // namespace bench
