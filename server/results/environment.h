// A job's environment fingerprint from what its agents and ranks reported: pure.
#pragma once

#include "server/core/job.h"

namespace bench {

// Merges the current attempt's versions: every key reported by any agent (NVML:
// driver, nvml, cuda_driver) or rank (trainer: torch, bench_train, cuda, cudnn, nccl).
// A key on which the reporters agree holds that value; one on which they disagree holds
// the distinct values, sorted, joined with " | ". Empty values count as not reported.
// Hostnames are those of the rank devices (the agents that ran ranks), distinct and
// sorted; an agent that reported no hostname is left out.
Environment MergeEnvironment(const Job& job);

// The precision a job's current attempt ran at, against what its spec asked for.
struct EffectivePrecision {
  // The ranks' reported precisions ("fp32", "tf32", "amp_bf16", "amp_fp16"), distinct,
  // sorted, joined with " | "; "" until a rank has reported one.
  std::string in_effect;
  // "requested amp, ran fp32" when some rank ran at a precision the request does not
  // allow; "" otherwise. fp32 (and an unspecified precision) allows "fp32", tf32 "tf32",
  // amp "amp_fp16" or "amp_bf16" (fp16 with loss scaling on CUDA, bf16 on the CPU),
  // bf16 "amp_bf16".
  std::string mismatch;
};
EffectivePrecision MergePrecision(const Job& job);

}  // namespace bench
