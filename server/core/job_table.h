// The job table: every job the controller knows, in submission order, indexed by job id
// and by request id. Invariant: the indexes name exactly the jobs in the table, and a
// Job& it hands out stays valid until Remove (the only operation that moves jobs).
// Holds no live state (that is the JobManager's runtime) and does no I/O.
//
// Thread-safety: none of its own; the JobManager calls it under its one mutex.
#pragma once

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

  size_t size() const { return jobs_.size(); }
  iterator begin() { return jobs_.begin(); }
  iterator end() { return jobs_.end(); }
  const_iterator begin() const { return jobs_.begin(); }
  const_iterator end() const { return jobs_.end(); }

 private:
  std::deque<Job> jobs_;  // in submission order; stable addresses while only appended
  std::map<std::string, Job*> index_;
  std::map<std::string, std::string> request_ids_;  // request id → job id
  int64_t last_seq_ = 0;
};

}  // namespace bench
