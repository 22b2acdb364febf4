#include "server/core/sample_ingestion.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "server/core/sample_validation.h"

namespace bench {
namespace {

// The GPU of the sender's inventory that `rank` of `job` holds there (the device index
// of its placement on `agent`), or null.
const Gpu* HeldGpu(const Job& job, const std::string& agent, const AgentInventory* inventory,
                   int rank) {
  if (inventory == nullptr) return nullptr;
  for (const Placement& placement : job.placements) {
    if (placement.agent != agent) continue;
    for (size_t i = 0; i < placement.ranks.size() && i < placement.device_indices.size(); ++i) {
      if (placement.ranks[i] != rank) continue;
      for (const Gpu& gpu : inventory->gpus) {
        if (gpu.index == placement.device_indices[i]) return &gpu;
      }
    }
  }
  return nullptr;
}

}  // namespace

bool RankPlacedOn(const Job& job, const std::string& agent, int rank) {
  for (const Placement& placement : job.placements) {
    if (placement.agent != agent) continue;
    return std::find(placement.ranks.begin(), placement.ranks.end(), rank) != placement.ranks.end();
  }
  return false;
}

int64_t ScreenedSamples::rejected_count() const {
  int64_t count = 0;
  for (const auto& [reason, n] : rejected) count += n;
  return count;
}

void SampleIngestion::Fence(const std::string& agent, const std::string& job_id, int attempt) {
  fenced_.insert({agent, job_id, attempt});
}

bool SampleIngestion::Fenced(const std::string& agent, const std::string& job_id,
                             int attempt) const {
  return !fenced_.empty() && fenced_.count({agent, job_id, attempt}) > 0;
}

ScreenedSamples SampleIngestion::Screen(const std::string& agent, const AgentInventory* inventory,
                                        const JobLookup& find_job,
                                        std::vector<IterationSample> samples,
                                        std::vector<GpuSample> gpu_samples) {
  ScreenedSamples out;
  std::map<std::string_view, int64_t>& rejected = out.rejected;
  // The job when `rank` of its current `attempt` is placed on the sender, which is not
  // fenced off it; else null, the refusal counted.
  auto placed = [&](const std::string& job_id, int attempt, int rank) -> const Job* {
    const Job* job = find_job(job_id);
    if (job == nullptr) {
      ++rejected[kUnknownJob];
    } else if (job->attempt < 1 || attempt != job->attempt) {
      ++rejected[kStaleAttempt];
    } else if (!RankPlacedOn(*job, agent, rank)) {
      ++rejected[kRankNotOnAgent];
    } else if (Fenced(agent, job_id, attempt)) {
      ++rejected[kFencedAgent];
    } else {
      return job;
    }
    return nullptr;
  };
  out.iterations.reserve(samples.size());
  for (IterationSample& sample : samples) {
    const Job* job = placed(sample.job_id, sample.attempt, sample.rank);
    if (job == nullptr) continue;
    if (std::optional<std::string_view> why = IterationSampleRejection(sample, job->spec)) {
      ++rejected[*why];
      continue;
    }
    out.iterations.push_back(std::move(sample));
  }
  for (GpuSample& sample : gpu_samples) {
    const Job* job = placed(sample.job_id, sample.attempt, sample.rank);
    if (job == nullptr) continue;
    if (sample.seq < 1) {
      ++rejected[kBadSequence];
      continue;
    }
    if (std::optional<std::string_view> why = GpuSampleRejection(
            sample, job->device_kind, HeldGpu(*job, agent, inventory, sample.rank))) {
      ++rejected[*why];
      continue;
    }
    out.gpu_samples.push_back(std::move(sample));
  }
  int64_t dropped = out.rejected_count();
  if (dropped > 0) {
    refused_total_ += dropped;
    std::string reasons;
    for (const auto& [reason, count] : rejected) {
      absl::StrAppend(&reasons, reasons.empty() ? "" : ", ", std::string(reason), " ", count);
    }
    Log("refused ", dropped, " samples from ", agent, " (", reasons, "; ", refused_total_,
        " in all)");
  }
  return out;
}

}  // namespace bench
