#include "server/core/job_table.h"

#include <algorithm>
#include <utility>

namespace bench {
namespace {

bool HoldsLiveAllocation(const Job& job) {
  return !job.allocation.id.empty() && !job.allocation.ended;
}

}  // namespace

void JobTable::IndexJob(Job& job) {
  ++counts_[static_cast<size_t>(job.state)];
  if (!IsTerminal(job.state)) live_[job.seq] = &job;
  if (HoldsLiveAllocation(job)) allocated_[job.seq] = &job;
}

Job& JobTable::Add(Job job) {
  ++version_;
  last_seq_ = std::max(last_seq_, job.seq);
  jobs_.push_back(std::move(job));
  Job& added = jobs_.back();
  index_[added.id] = &added;
  if (!added.spec.request_id.empty()) request_ids_[added.spec.request_id] = added.id;
  IndexJob(added);
  return added;
}

Job* JobTable::Find(const std::string& job_id) {
  auto it = index_.find(job_id);
  return it == index_.end() ? nullptr : it->second;
}

const std::string* JobTable::JobOfRequest(const std::string& request_id) const {
  auto it = request_ids_.find(request_id);
  return it == request_ids_.end() ? nullptr : &it->second;
}

void JobTable::Remove(const std::string& job_id) {
  ++version_;
  if (Job* job = Find(job_id); job != nullptr && !job->spec.request_id.empty()) {
    request_ids_.erase(job->spec.request_id);
  }
  jobs_.erase(
      std::remove_if(jobs_.begin(), jobs_.end(), [&](const Job& j) { return j.id == job_id; }),
      jobs_.end());
  // Erasing from a deque invalidates addresses: rebuild the indexes.
  index_.clear();
  live_.clear();
  allocated_.clear();
  counts_.fill(0);
  for (Job& job : jobs_) {
    index_[job.id] = &job;
    IndexJob(job);
  }
}

void JobTable::SetState(Job& job, JobState state) {
  if (job.state == state) return;
  ++version_;
  --counts_[static_cast<size_t>(job.state)];
  ++counts_[static_cast<size_t>(state)];
  job.state = state;
  if (IsTerminal(state)) {
    live_.erase(job.seq);
  } else {
    live_[job.seq] = &job;
  }
}

void JobTable::SetAllocation(Job& job, Allocation allocation) {
  ++version_;
  job.allocation = std::move(allocation);
  if (HoldsLiveAllocation(job)) {
    allocated_[job.seq] = &job;
  } else {
    allocated_.erase(job.seq);
  }
}

}  // namespace bench
