// The job table: every job the controller knows, in submission order, indexed by job id
// and by request id, and the indexes the controller's timers and per-RPC paths walk
// instead of the whole history: the live jobs (QUEUED or RUNNING), the jobs holding a
// live allocation (an allocator's id, not ended) and the count of jobs in each state.
// Invariants: the indexes name exactly the jobs in the table that qualify, and a Job& it
// hands out stays valid until Remove (the only operation that moves jobs). A job's state
// and allocation change only through SetState and SetAllocation (the indexes follow
// them); other fields may be changed through the Job& directly.
// Holds no live state (that is the JobManager's runtime) and does no I/O.
//
// Thread-safety: none of its own; the JobManager calls it under its one mutex.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "server/core/job.h"

namespace bench {

class JobTable {
 public:
  using iterator = std::deque<Job>::iterator;
  using const_iterator = std::deque<Job>::const_iterator;

  // Appends `job` (loaded from the store, or new) and indexes it; the highest seq seen
  // is remembered for NextSeq.
  Job& Add(Job job);
  // The seq a new job takes (one more than any added so far).
  int64_t NextSeq() const { return last_seq_ + 1; }
  // Null if unknown.
  Job* Find(const std::string& job_id);
  // The id of the job submitted with `request_id`, or null.
  const std::string* JobOfRequest(const std::string& request_id) const;
  // Forgets the job and its request id (its insert never committed). Moves other jobs:
  // Job& held from before are invalid afterwards.
  void Remove(const std::string& job_id);

  // Sets a job of the table's state and reindexes it.
  void SetState(Job& job, JobState state);
  // Sets a job of the table's allocation and reindexes it.
  void SetAllocation(Job& job, Allocation allocation);
  // How many jobs are in `state`.
  int64_t Count(JobState state) const { return counts_[static_cast<size_t>(state)]; }
  // Changes with every Add, Remove, SetState that changes a state and SetAllocation:
  // equal versions mean the same jobs in the same states and allocations.
  uint64_t version() const { return version_; }

  // Calls `visit(Job&)` on each live job (QUEUED or RUNNING), in submission order. `visit`
  // may change any job's state (SetState): a job that ends is not visited after it ended,
  // one that becomes live later in the order is.
  template <typename Visit>
  void ForEachLive(Visit&& visit) {
    Walk(live_, visit);
  }
  // Calls `visit(Job&)` on each job holding a live allocation (its id set, not ended), in
  // submission order; `visit` may change allocations as ForEachLive's may change states.
  template <typename Visit>
  void ForEachAllocated(Visit&& visit) {
    Walk(allocated_, visit);
  }

  // Cost counters (tests and benches): how many times the whole table was walked (begin()
  // was called), and how many jobs ForEachLive and ForEachAllocated visited.
  int64_t full_walks() const { return full_walks_; }
  int64_t indexed_visits() const { return indexed_visits_; }

  size_t size() const { return jobs_.size(); }
  iterator begin() {
    ++full_walks_;
    return jobs_.begin();
  }
  iterator end() { return jobs_.end(); }
  const_iterator begin() const {
    ++full_walks_;
    return jobs_.begin();
  }
  const_iterator end() const { return jobs_.end(); }

 private:
  using Index = std::map<int64_t, Job*>;  // seq → job

  // Visits the index's jobs in seq order, resuming after the last one visited, so that
  // `visit` may add to or erase from the index.
  template <typename Visit>
  void Walk(const Index& index, Visit& visit) {
    for (auto it = index.begin(); it != index.end();) {
      const int64_t seq = it->first;
      ++indexed_visits_;
      visit(*it->second);
      it = index.upper_bound(seq);
    }
  }
  // Adds `job` to the state and allocation indexes.
  void IndexJob(Job& job);

  std::deque<Job> jobs_;  // in submission order; stable addresses while only appended
  std::map<std::string, Job*> index_;
  std::map<std::string, std::string> request_ids_;  // request id → job id
  Index live_;                                      // QUEUED or RUNNING
  Index allocated_;                                 // allocation.id set and !allocation.ended
  std::array<int64_t, 5> counts_{};                 // by JobState
  int64_t last_seq_ = 0;
  uint64_t version_ = 0;
  mutable int64_t full_walks_ = 0;
  int64_t indexed_visits_ = 0;
};

}  // namespace bench
