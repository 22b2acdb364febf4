#include "server/results/job_diagnosis.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "server/results/environment.h"
#include "server/results/screening_inputs.h"

namespace bench {
namespace {

// The precision the ranks ran at, in the spec's terms (environment.h's MergePrecision
// decides what a request allows): the one asked for when every rank ran at a precision
// it allows; else the first (by name) that it does not allow, as the spec would name it
// ("amp_fp16" is amp, "amp_bf16" bf16), so that the precision check sees the mismatch.
// kUnspecified when no rank reported one.
Precision EffectivePrecisionOf(const Job& job) {
  EffectivePrecision merged = MergePrecision(job);
  if (merged.in_effect.empty()) return Precision::kUnspecified;
  if (merged.mismatch.empty()) return job.spec.precision;
  static const std::map<std::string, Precision> kAsSpec = {{"fp32", Precision::kFp32},
                                                           {"tf32", Precision::kTf32},
                                                           {"amp_fp16", Precision::kAmp},
                                                           {"amp_bf16", Precision::kBf16}};
  std::set<std::string> ran;
  for (const auto& [rank, text] : job.rank_precisions) ran.insert(text);
  for (const std::string& text : ran) {
    auto it = kAsSpec.find(text);
    if (it != kAsSpec.end() && it->second != job.spec.precision &&
        !(job.spec.precision == Precision::kAmp && it->second == Precision::kBf16)) {
      return it->second;
    }
  }
  return Precision::kUnspecified;
}

diagnosis::IterationTiming TimingOf(const IterationSample& s) {
  diagnosis::IterationTiming t;
  t.iteration = s.iteration;
  t.step_time_s = s.step_time_s;
  t.data_time_s = s.data_time_s;
  t.compute_time_s = s.compute_time_s;
  t.forward_backward_time_s = s.forward_backward_time_s;
  t.allreduce_wait_time_s = s.allreduce_wait_time_s;
  t.optimizer_time_s = s.optimizer_time_s;
  t.end_unix_ns = s.received_unix_ns;
  t.warmup = s.warmup;
  return t;
}

// Every field of the reading (screening_inputs.h), the driver-averaged power where the
// instantaneous one is missing.
diagnosis::GpuReading ReadingOf(const GpuSample& g) {
  diagnosis::GpuReading r = GpuReadingOf(g);
  if (!r.power_w) r.power_w = g.power_average_w;
  return r;
}

}  // namespace

int JobDiagnosis::FailingChecks() const {
  if (!available) return 0;
  return static_cast<int>(std::count_if(checks.begin(), checks.end(), [](const auto& c) {
    return c.outcome == diagnosis::CheckOutcome::kFail;
  }));
}

bool JobDiagnosis::operator==(const JobDiagnosis& o) const {
  return std::tie(attempt, available, note, stragglers, excess, checks) ==
         std::tie(o.attempt, o.available, o.note, o.stragglers, o.excess, o.checks);
}

diagnosis::JobInputs JobInputsOf(const Job& job) {
  diagnosis::JobInputs inputs;
  inputs.job_id = job.id;
  inputs.device_kind = job.device_kind;
  inputs.requested_precision = job.spec.precision;
  inputs.effective_precision = EffectivePrecisionOf(job);
  inputs.warmup_asked = job.spec.warmup_iterations;
  inputs.iterations_asked = job.spec.iterations;  // warm-up included, as the spec
  for (const auto& [rank, summary] : job.summaries) {
    if (!inputs.skipped_steps || summary.skipped_steps > *inputs.skipped_steps) {
      inputs.skipped_steps = summary.skipped_steps;
    }
  }
  std::map<int, diagnosis::RankInputs> ranks;
  for (const Placement& placement : job.placements) {
    for (size_t i = 0; i < placement.ranks.size(); ++i) {
      diagnosis::RankInputs& r = ranks[placement.ranks[i]];
      r.rank = placement.ranks[i];
      r.node = placement.agent;
      if (job.device_kind == DeviceKind::kCuda && i < placement.device_indices.size()) {
        r.gpu_index = placement.device_indices[i];
      }
    }
  }
  for (const RankDevice& device : job.rank_devices) {
    diagnosis::RankInputs& r = ranks[device.rank];
    r.rank = device.rank;
    r.node = device.agent;
    r.gpu_index = job.device_kind == DeviceKind::kCuda ? device.device_index : -1;
    r.gpu_uuid = device.gpu_uuid;
  }
  for (auto& [rank, r] : ranks) inputs.ranks.push_back(std::move(r));
  return inputs;
}

void AddSamples(diagnosis::JobInputs& inputs, const std::vector<IterationSample>& samples,
                const std::vector<GpuSample>& gpu_samples) {
  std::map<int, diagnosis::RankInputs*> by_rank;
  for (diagnosis::RankInputs& r : inputs.ranks) by_rank[r.rank] = &r;
  for (const IterationSample& s : samples) {
    auto it = by_rank.find(s.rank);
    if (it != by_rank.end()) it->second->iterations.push_back(TimingOf(s));
  }
  for (const GpuSample& g : gpu_samples) {
    auto it = by_rank.find(g.rank);
    if (it == by_rank.end() || it->second->gpu_index < 0) continue;
    it->second->readings.push_back(ReadingOf(g));
  }
}

JobDiagnosis Diagnose(const diagnosis::JobInputs& inputs, int attempt) {
  JobDiagnosis d;
  d.attempt = attempt;
  bool measured = false;
  for (const diagnosis::RankInputs& r : inputs.ranks) {
    for (const diagnosis::IterationTiming& t : r.iterations) measured |= !t.warmup;
  }
  if (!measured) {
    d.note = kDiagnosisNoMeasuredIterations;
    return d;
  }
  d.available = true;
  d.stragglers = diagnosis::FindStragglers(inputs);
  d.excess = diagnosis::AttributeExcess(inputs);
  d.checks = diagnosis::RunChecks(inputs, d.excess);
  return d;
}

JobDiagnosis DiagnoseJob(const Job& job, const std::vector<IterationSample>& samples,
                         const std::vector<GpuSample>& gpu_samples) {
  diagnosis::JobInputs inputs = JobInputsOf(job);
  AddSamples(inputs, samples, gpu_samples);
  return Diagnose(inputs, job.attempt);
}

bool ShouldDiagnose(const Job& job) {
  return job.attempt > 0 && (job.state == JobState::kSucceeded || job.state == JobState::kFailed);
}

}  // namespace bench
