// A finished job's diagnosis (issue 26 items 2, 3 and 5; docs/diagnosis.md): the adapter
// from what benchd stores of a job (its current attempt's iterations per rank, GPU readings
// per rank, rank devices, spec, precision in effect, skipped steps) to the diagnosis room's
// JobInputs (server/diagnosis/inputs.h), and the three analyses run over them
// (FindStragglers, AttributeExcess, RunChecks) as one domain value, `JobDiagnosis`.
//
// benchd computes it once when an attempt ends SUCCEEDED or FAILED (JobManager, on the
// store's writer thread like the telemetry join), stores it (job_diagnoses, schema 16) and
// reloads it after a restart; `benchctl diagnose` runs the same functions again on the
// stored data. Pure functions: the same job and samples give an equal JobDiagnosis.
#pragma once

#include <string>
#include <vector>

#include "server/core/job.h"
#include "server/diagnosis/attribution.h"
#include "server/diagnosis/checks.h"
#include "server/diagnosis/inputs.h"
#include "server/diagnosis/stragglers.h"

namespace bench {

struct JobDiagnosis {
  int attempt = 0;
  // False: "no data" — `note` says why (the job ended before benchd diagnosed jobs, or
  // it has no measured iteration); the reports below are then empty.
  bool available = false;
  std::string note;
  diagnosis::StragglerReport stragglers;
  diagnosis::ExcessReport excess;
  std::vector<diagnosis::Check> checks;

  // Checks that failed (0 when not available).
  int FailingChecks() const;
  bool operator==(const JobDiagnosis& o) const;
};

inline constexpr char kDiagnosisNoMeasuredIterations[] =
    "no data: the attempt stored no measured iteration";
inline constexpr char kDiagnosisBeforeBenchd[] =
    "no data: the job ended before this benchd diagnosed jobs";

// The job's facts (rank devices, spec, precisions, skipped steps) as JobInputs, without
// iterations and readings: one RankInputs per rank of the current attempt, by rank.
diagnosis::JobInputs JobInputsOf(const Job& job);

// Adds the attempt's stored iterations and GPU readings to `inputs`' ranks (samples of a
// rank it lacks are ignored; readings of a CPU-slot rank too).
void AddSamples(diagnosis::JobInputs& inputs, const std::vector<IterationSample>& samples,
                const std::vector<GpuSample>& gpu_samples);

// Runs the three analyses (not available, with kDiagnosisNoMeasuredIterations, when no
// rank has a measured iteration).
JobDiagnosis Diagnose(const diagnosis::JobInputs& inputs, int attempt);

// JobInputsOf + AddSamples + Diagnose.
JobDiagnosis DiagnoseJob(const Job& job, const std::vector<IterationSample>& samples,
                         const std::vector<GpuSample>& gpu_samples);

// Whether benchd diagnoses a job in this state: SUCCEEDED or FAILED after a placement.
bool ShouldDiagnose(const Job& job);

}  // namespace bench
