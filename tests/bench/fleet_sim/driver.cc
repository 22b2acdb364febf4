#include "tests/bench/fleet_sim/driver.h"

#include "tests/bench/fleet_sim/sim_agent.h"

namespace bench::fleetsim {

void Driver::Add(SimAgent* agent) {
  slots_[agent] = agents_.size();
  agents_.push_back(agent);
  scheduled_.push_back(Clock::time_point::max());
}

void Driver::Start() {
  Clock::time_point now = Clock::now();
  for (SimAgent* agent : agents_) Wake(agent, now);
  thread_ = std::thread([this] { Run(); });
}

void Driver::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Driver::Wake(SimAgent* agent, Clock::time_point at) {
  bool notify = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(agent);
    if (it == slots_.end()) return;
    size_t slot = it->second;
    if (at >= scheduled_[slot]) return;
    scheduled_[slot] = at;
    notify = heap_.empty() || at < heap_.top().at;
    heap_.push(Entry{at, slot});
  }
  if (notify) cv_.notify_one();
}

void Driver::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (heap_.empty()) {
      cv_.wait(lock);
      continue;
    }
    Entry top = heap_.top();
    Clock::time_point now = Clock::now();
    if (top.at > now) {
      cv_.wait_until(lock, top.at);
      continue;
    }
    heap_.pop();
    if (scheduled_[top.slot] != top.at) continue;  // superseded by an earlier one
    scheduled_[top.slot] = Clock::time_point::max();
    SimAgent* agent = agents_[top.slot];
    lock.unlock();
    Clock::time_point next = agent->Tick(now);
    lock.lock();
    if (next < scheduled_[top.slot]) {
      scheduled_[top.slot] = next;
      heap_.push(Entry{next, top.slot});
    }
  }
}

}  // namespace bench::fleetsim
