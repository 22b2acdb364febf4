// A job's environment fingerprint from what its agents and ranks reported: pure.
#pragma once

#include "server/job.h"

namespace bench {

// Merges the current attempt's versions: every key reported by any agent (NVML:
// driver, nvml, cuda_driver) or rank (trainer: torch, bench_train, cuda, cudnn, nccl).
// A key on which the reporters agree holds that value; one on which they disagree holds
// the distinct values, sorted, joined with " | ". Empty values count as not reported.
// Hostnames are those of the rank devices (the agents that ran ranks), distinct and
// sorted; an agent that reported no hostname is left out.
Environment MergeEnvironment(const Job& job);

}  // namespace bench
