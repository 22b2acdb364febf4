// Fleet screening's adapter (issue 26 item 4; docs/diagnosis.md "Screening a cluster"):
// from a screening's stored jobs (one single-GPU job per GPU, labelled
// screening=<id> by `benchctl screen`) and their stored iterations and GPU readings to
// the diagnosis room's ScreenedGpu inputs (server/diagnosis/screening.h), and the list of
// screenings from the job table.
//
// Only a job that has ended is judged: a QUEUED or RUNNING one is counted as pending. A
// CANCELLED job is judged as failed. The GPU is the one rank 0 held (its placement,
// RankDevice); its step times are rank 0's stored measured (non-warm-up) iterations and its
// readings rank 0's stored GPU readings.
//
// Pure functions of their arguments (no store, no clock): ReadService does the reading.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/core/job.h"
#include "server/diagnosis/screening.h"

namespace bench {

// The job label that makes a job part of a screening: screening=<id>.
inline constexpr char kScreeningLabel[] = "screening";

// The screening `job` belongs to; "" when none.
std::string ScreeningIdOf(const Job& job);

// A screening id as `benchctl screen` makes and takes it: 1 to 64 characters of
// [A-Za-z0-9._-]; INVALID_ARGUMENT naming it otherwise.
absl::Status ValidateScreeningId(const std::string& id);

// One NVML reading as the diagnosis room reads it.
diagnosis::GpuReading GpuReadingOf(const GpuSample& sample);

// One ended job of a screening as Screen's input: rank 0's node, GPU, configuration,
// outcome, measured step times (from `samples`, any order) and readings (from
// `gpu_samples`).
diagnosis::ScreenedGpu ScreenedGpuOf(const Job& job, const std::vector<IterationSample>& samples,
                                     const std::vector<GpuSample>& gpu_samples);

// The same from what the store's narrow read gave (Store::ReadScreeningRows): rank 0's
// measured step times in iteration order and its readings, taken as they are.
diagnosis::ScreenedGpu ScreenedGpuOfMeasured(const Job& job, std::vector<double> step_times_s,
                                             std::vector<diagnosis::GpuReading> readings);

// A screening's answer: its id, its jobs and the verdicts over its ended ones.
struct ScreeningView {
  std::string id;
  absl::Time created;  // its first job's submission
  int jobs = 0;
  int pending = 0;  // QUEUED or RUNNING: not judged yet
  diagnosis::ScreeningReport report;
};

// One line of the list of screenings.
struct ScreeningListEntry {
  std::string id;
  absl::Time created;  // its first job's submission
  int jobs = 0;
  int pending = 0;  // QUEUED or RUNNING
  int succeeded = 0;
  int failed = 0;                  // FAILED or CANCELLED
  std::vector<std::string> nodes;  // the agents its jobs were pinned to (allowed_nodes), sorted
};

// Every screening among `jobs` (any order), newest first (by its first job's submission,
// then by id).
std::vector<ScreeningListEntry> ListScreeningsOf(const std::vector<Job>& jobs);

}  // namespace bench
