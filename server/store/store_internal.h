// Internal to the store's files (store*.cc), not part of the API: what one of them
// defines and another uses. Each function runs on the connection it is given; the
// caller holds that connection (the writer thread's, or the reader under its mutex).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/core/job.h"
#include "server/store/store.h"

namespace bench {

class Database;
class Statement;

// The jobs table's spec columns: one row per JobSpec field stored there (labels and
// placement constraints have tables of their own), written by the insert
// (store_jobs.cc) and read by the load (store_jobs_load.cc) through this one table, so
// that a new field is one row in SpecColumns() plus the migration adding its column
// (store_schema.cc). `write` binds the field to parameter `index`; `read` sets it from
// result column `column`.
struct SpecColumn {
  const char* name;
  void (*write)(Statement& statement, int index, const JobSpec& spec);
  void (*read)(const Statement& statement, int column, JobSpec& spec);
};
const std::vector<SpecColumn>& SpecColumns();  // store_jobs.cc

// store_schema.cc: migrates the database to Store::kSchemaVersion; FAILED_PRECONDITION,
// with nothing changed, when its schema is newer than this build.
absl::Status MigrateSchema(Database& db);

// Column codecs shared by the table families (times are stored as Unix milliseconds;
// an unknown text reads as the unspecified value).
inline int64_t ToMs(absl::Time t) { return absl::ToUnixMillis(t); }
inline absl::Time FromMs(int64_t ms) { return absl::FromUnixMillis(ms); }

// store_samples.cc
// The id of (job, attempt) in attempt_series, the first part of the keys of its
// iteration_rows and gpu_readings: made on first use when `make`; nullopt when it has
// none and not `make`.
absl::StatusOr<std::optional<int64_t>> AttemptSeriesId(Database& db, const std::string& job_id,
                                                       int attempt, bool make);
// Rows read in key order (iteration or seq, then rank) put in rank order, each rank's
// rows keeping their order; each row is moved once.
template <typename Row>
std::vector<Row> InRankOrder(std::vector<Row> rows) {
  std::vector<uint32_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&rows](uint32_t x, uint32_t y) { return rows[x].rank < rows[y].rank; });
  std::vector<Row> by_rank;
  by_rank.reserve(rows.size());
  for (uint32_t i : order) by_rank.push_back(std::move(rows[i]));
  return by_rank;
}
// An attempt's iterations and GPU readings, each by rank (SelectSamples,
// SelectGpuSamples): what the end-of-job analyses read.
struct AttemptRows {
  std::vector<IterationSample> samples;
  std::vector<GpuSample> gpu_samples;
};
absl::StatusOr<AttemptRows> SelectAttemptRows(Database& db, const std::string& job_id,
                                              int attempt);
// By rank, then iteration; only iterations >= from_iteration.
absl::StatusOr<std::vector<IterationSample>> SelectSamples(Database& db, const std::string& job_id,
                                                           int attempt, int from_iteration = 0);

// store_telemetry.cc
absl::StatusOr<std::vector<GpuSample>> SelectGpuSamples(Database& db, const std::string& job_id,
                                                        int attempt);
// INSERT OR IGNORE; counts into result->gpu_stored / gpu_duplicates.
absl::Status InsertGpuSamples(Database& db, const std::vector<GpuSample>& samples,
                              AppendResult* result);
// The job's current-attempt gpu_telemetry rows, replaced by job.gpu_telemetry.
absl::Status WriteGpuTelemetryRows(Database& db, const Job& job);
// A loader's selection (store_jobs_load.cc's per-rank loaders, LoadGpuTelemetry): every
// job's rows, or (Store::LoadRankDetail) only those of one job's attempt.
struct RowFilter {
  const Job* only = nullptr;  // null: every job

  // `select` with this filter's WHERE, then `order_by` (" ORDER BY ..." or "").
  std::string Sql(absl::string_view select, absl::string_view order_by) const;
  // Binds the WHERE's job id and attempt (nothing when every job is read).
  void Bind(Statement* statement) const;
};
// Fills each job's gpu_telemetry (current attempt) of the rows `filter` selects; `index`
// maps job id → position.
absl::Status LoadGpuTelemetry(Database& db, const std::map<std::string, size_t>& index,
                              std::vector<Job>& jobs, const RowFilter& filter = RowFilter{});

// store_diagnoses.cc: fills each job's diagnosis (current attempt) from the job_diagnoses
// rows `filter` selects.
absl::Status LoadDiagnoses(Database& db, const std::map<std::string, size_t>& index,
                           std::vector<Job>& jobs, const RowFilter& filter = RowFilter{});

}  // namespace bench
