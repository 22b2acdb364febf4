// The fleet simulator's driver threads: each owns a share of the simulated agents and
// calls an agent's Tick() when the deadline it returned comes, or at once after Wake()
// (an RPC of it completed). One heap of deadlines per driver; a later deadline for an
// agent that has an earlier one pending is ignored. Thread-safe.
#pragma once

#include <condition_variable>
#include <mutex>
#include <queue>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tests/bench/fleet_sim/fleet.h"

namespace bench::fleetsim {

class SimAgent;

class Driver {
 public:
  Driver() = default;
  ~Driver() { Stop(); }
  void Add(SimAgent* agent);  // before Start
  void Start();
  void Stop();
  // Tick `agent` no later than `at`.
  void Wake(SimAgent* agent, Clock::time_point at);

 private:
  struct Entry {
    Clock::time_point at;
    size_t slot;
    bool operator>(const Entry& other) const { return at > other.at; }
  };
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<SimAgent*> agents_;
  std::unordered_map<const SimAgent*, size_t> slots_;
  std::vector<Clock::time_point> scheduled_;  // per slot; max(): none pending
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
  std::thread thread_;
};

}  // namespace bench::fleetsim
