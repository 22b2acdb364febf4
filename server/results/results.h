// Turns jobs into throughput figures and the results grid: pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/core/job.h"
#include "server/results/baseline.h"
#include "server/results/statistics.h"

namespace bench {

// A job's throughput as ARCHITECTURE.md defines it: the images of all ranks in the
// measured window divided by the window's wall time, Σ images / max window. nullopt
// ("no data") unless every one of `world_size` ranks has a summary with a positive
// window and at least one measured image.
std::optional<double> JobThroughput(const std::map<int, RankSummary>& summaries,
                                    int world_size);

// The job's JobThroughput over its spec's devices, or, once its rank detail was released
// from memory (released_ranks.h), the one kept then.
std::optional<double> ThroughputOf(const Job& job);

// With spec.data_vs_compute: the ranks' throughputs on synthetic data summed (each rank's
// second run has its own window, so its own rate is the figure), once every rank has a
// positive one; nullopt otherwise.
std::optional<double> SyntheticThroughput(const Job& job);

// A grid cell's key is its jobs' ConfigurationOf. A job not placed yet (QUEUED) has
// device kind kNone and GPU model "": its hardware is not known, so it is counted in a
// cell of its own, never guessed into one.

// Which jobs the grid is built from; every filter given must match.
struct ResultsFilter {
  // Against ConfigurationOf(job); empty: any configuration of its kind (real jobs, or with
  // configuration.simulated simulated ones: never both).
  ConfigurationFilter configuration;
  std::string node;       // at least one rank placed on this agent; "" any
  absl::Time since = absl::InfinitePast();   // created at or after
  absl::Time until = absl::InfiniteFuture();  // created before
  std::map<std::string, std::string> labels;  // each must be present with this value
  // Leave out the jobs whose diagnosis has a failing check (`benchctl results --strict`).
  bool strict = false;
};
bool Matches(const Job& job, const ResultsFilter& filter);
// The job's diagnosis has a failing check (no diagnosis: no); of a released job, the count
// kept in released_ranks.
bool HasFailingChecks(const Job& job);

// One configuration's jobs.
//
// The figures (median, min, max, ci95, cv) are over the SUCCEEDED jobs with a
// throughput ("runs", listed in job_ids). A cell exists as soon as its configuration
// has any job other than CANCELLED ones (cancelled on purpose: not a result), so a
// configuration whose jobs all failed or are still pending has a cell with runs() == 0:
// then median/min/max are 0 and must not be read as figures ("no data"), and ci95 and
// cv are unset.
//
// Not counted in the figures, counted instead:
//   failed_runs      FAILED jobs;
//   unmeasured_runs  SUCCEEDED jobs without a throughput (a rank without a summary, or
//                    zero measured images or window): finished, but no figure. Not a
//                    run and not silently dropped (on the wire it is added to
//                    failed_runs, which has no field of its own: a run that yields no
//                    measurement is a failed measurement);
//   pending_runs     QUEUED and RUNNING jobs.
struct ResultCell {
  ConfigurationKey key;
  double median_images_per_second = 0;
  double min_images_per_second = 0;
  double max_images_per_second = 0;
  std::vector<std::string> job_ids;  // the runs, in submission order
  std::optional<Interval> ci95;      // distribution-free CI of the median, runs >= 6
  std::optional<double> cv;          // of the runs' throughputs, runs >= 2
  int failed_runs = 0;
  int unmeasured_runs = 0;
  int pending_runs = 0;
  // Of the runs, those whose diagnosis (job_diagnosis.h) has a failing check: counted in
  // the figures, marked (benchctl results' `!`); 0 under ResultsFilter::strict.
  int failing_check_runs = 0;
  // The median against the configuration's baseline; unset without one or without runs.
  std::optional<BaselineComparison> baseline;
  // Medians over the cell's runs that have the figure (GPU telemetry); unset: no data.
  // A job's power, clock and temperature are the means of its GPUs' medians.
  std::optional<double> median_energy_per_image_j;
  std::optional<double> median_images_per_second_per_watt;
  std::optional<double> median_power_w;
  std::optional<double> median_sm_clock_mhz;
  std::optional<double> median_temperature_c;

  int runs() const { return static_cast<int>(job_ids.size()); }
};

// What the grid needs of one job: its cell, state, id, throughput and telemetry figures.
// The read side takes these under the manager's lock instead of copying whole jobs (a
// copy of 100,000 jobs held the lock for over half a second; docs/PERFORMANCE.md).
struct ResultRow {
  ConfigurationKey key;
  JobState state = JobState::kQueued;
  std::string id;
  std::optional<double> throughput;  // JobThroughput, SUCCEEDED jobs only
  bool failing_checks = false;       // its diagnosis has a failing check
  // Telemetry (SUCCEEDED jobs with a throughput): energy per image (> 0) and the means
  // over its GPUs of their medians, each unset where the job has no such figure.
  std::optional<double> energy_per_image_j;
  std::optional<double> power_w;
  std::optional<double> sm_clock_mhz;
  std::optional<double> temperature_c;
};
ResultRow ResultRowOf(const Job& job);
// Groups the rows (of jobs already matched against a filter) into cells, as ResultCell
// describes; CANCELLED rows are skipped. Sorted by key.
std::vector<ResultCell> BuildResultCells(const std::vector<ResultRow>& rows,
                                         const Baselines& baselines);

// Groups the jobs that match `filter` into cells, as ResultCell describes, and compares
// each median with its configuration's baseline. Sorted by key.
std::vector<ResultCell> BuildResultCells(const std::vector<Job>& jobs,
                                         const ResultsFilter& filter,
                                         const Baselines& baselines = {});
// The same with only a model filter.
std::vector<ResultCell> BuildResultCells(const std::vector<Job>& jobs,
                                         const std::string& model_filter);

}  // namespace bench
