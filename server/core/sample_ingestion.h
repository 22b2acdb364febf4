// SampleIngestion: which of the samples an agent uploads may be stored. Each iteration
// and GPU reading must belong to a rank of its job's current attempt that is placed on
// the sending agent, from an agent not fenced off that attempt (its lease expired or it
// left while it ran it: Fence), and be plausible for the job (sample_validation.h).
// Everything else is refused and counted by reason (the `reason` labels of /metrics'
// bench_ingest_errors_total) and logged.
//
// It owns the fencing set and the running count of refusals; the jobs it checks against
// are the caller's, looked up through a JobLookup. No I/O but the log line.
// Thread-safety: none of its own. The JobManager owns it and calls it under its mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "server/core/job.h"

namespace bench {

// Whether `rank` of the job's current attempt is placed on `agent`.
bool RankPlacedOn(const Job& job, const std::string& agent, int rank);

// What Screen kept, and what it refused.
struct ScreenedSamples {
  std::vector<IterationSample> iterations;
  std::vector<GpuSample> gpu_samples;
  // Refused samples by reason (sample_validation.h's constants), iterations and GPU
  // readings together.
  std::map<std::string_view, int64_t> rejected;

  int64_t rejected_count() const;
};

class SampleIngestion {
 public:
  // The job of that id, or null; called only during Screen.
  using JobLookup = std::function<const Job*(const std::string& job_id)>;

  // The agent's samples and reports of (job_id, attempt) are refused from now on.
  void Fence(const std::string& agent, const std::string& job_id, int attempt);
  bool Fenced(const std::string& agent, const std::string& job_id, int attempt) const;

  // Splits an upload of `agent` into what may be stored (in the order sent) and what is
  // refused. `inventory`: the agent's registered inventory (null if unknown), whose GPUs
  // a GPU reading must match. Logs a line when anything is refused.
  ScreenedSamples Screen(const std::string& agent, const AgentInventory* inventory,
                         const JobLookup& find_job, std::vector<IterationSample> samples,
                         std::vector<GpuSample> gpu_samples);

  // Samples refused since this object was made.
  int64_t refused_total() const { return refused_total_; }

 private:
  std::set<std::tuple<std::string, std::string, int>> fenced_;
  int64_t refused_total_ = 0;
};

}  // namespace bench
