#include "server/core/job_table.h"

#include <algorithm>
#include <utility>

namespace bench {

Job& JobTable::Add(Job job) {
  last_seq_ = std::max(last_seq_, job.seq);
  jobs_.push_back(std::move(job));
  Job& added = jobs_.back();
  index_[added.id] = &added;
  if (!added.spec.request_id.empty()) request_ids_[added.spec.request_id] = added.id;
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
  if (Job* job = Find(job_id); job != nullptr && !job->spec.request_id.empty()) {
    request_ids_.erase(job->spec.request_id);
  }
  jobs_.erase(
      std::remove_if(jobs_.begin(), jobs_.end(), [&](const Job& j) { return j.id == job_id; }),
      jobs_.end());
  // Erasing from a deque invalidates addresses: rebuild the index.
  index_.clear();
  for (Job& job : jobs_) index_[job.id] = &job;
}

}  // namespace bench
