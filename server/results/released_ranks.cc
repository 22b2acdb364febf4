#include "server/results/released_ranks.h"

#include <memory>
#include <utility>

#include "server/results/job_diagnosis.h"
#include "server/results/results.h"

namespace bench {
namespace {

// Swapping with an empty container frees its memory (clear() may keep a vector's).
template <typename Container>
void Free(Container& container) {
  Container().swap(container);
}

}  // namespace

void ReleaseRankDetail(Job& job) {
  if (job.released_ranks != nullptr) return;
  auto released = std::make_shared<ReleasedRanks>();
  released->gpu_model = GpuModelOf(job);
  released->throughput = JobThroughput(job.summaries, job.spec.devices);
  const ResultRow row = ResultRowOf(job);
  released->energy_per_image_j = row.energy_per_image_j;
  released->power_w = row.power_w;
  released->sm_clock_mhz = row.sm_clock_mhz;
  released->temperature_c = row.temperature_c;
  released->failing_checks = job.diagnosis == nullptr ? 0 : job.diagnosis->FailingChecks();
  Free(job.summaries);
  Free(job.gpu_telemetry);
  Free(job.rank_devices);
  Free(job.agent_versions);
  Free(job.rank_versions);
  Free(job.rank_precisions);
  job.diagnosis = nullptr;  // its checks' sentences are most of what a job kept
  job.released_ranks = std::move(released);
}

void RestoreRankDetail(Job& job, Job&& loaded) {
  job.summaries = std::move(loaded.summaries);
  job.gpu_telemetry = std::move(loaded.gpu_telemetry);
  job.rank_devices = std::move(loaded.rank_devices);
  job.agent_versions = std::move(loaded.agent_versions);
  job.rank_versions = std::move(loaded.rank_versions);
  job.rank_precisions = std::move(loaded.rank_precisions);
  job.diagnosis = std::move(loaded.diagnosis);
  job.released_ranks = nullptr;
}

}  // namespace bench
