// Store operation for fleet screening (ReadService::Screening): per job, rank 0's measured
// step times and GPU readings, only the columns the diagnosis room reads, without making
// a full IterationSample or GpuSample per row.
#include <sqlite3.h>

#include "common/status_macros.h"
#include "server/store/sqlite_db.h"
#include "server/store/store.h"

namespace bench {
namespace {

// Rank 0's measured iterations >= 0 of one attempt, in iteration order (the key's order
// within an attempt: store_schema.cc, schema 19).
constexpr char kStepTimesSql[] =
    "SELECT s.step_time_s FROM attempt_series a "
    "JOIN iteration_rows s ON s.series = a.id AND s.iteration >= 0 "
    "WHERE a.job_id=?1 AND a.attempt=?2 AND s.rank=0 AND s.warmup=0 ORDER BY s.iteration";

// Rank 0's GPU readings of one attempt, by seq; the columns of diagnosis::GpuReading.
constexpr char kReadingsSql[] =
    "SELECT time_unix_ns, sm_clock_mhz, max_sm_clock_mhz, memory_clock_mhz, "
    "max_memory_clock_mhz, power_w, power_limit_w, temperature_c, throttle_reasons, "
    "pcie_gen, pcie_gen_max, pcie_width, pcie_width_max, ecc_corrected, ecc_uncorrected, "
    "xid_errors FROM attempt_series a JOIN gpu_readings g ON g.series = a.id "
    "WHERE a.job_id=?1 AND a.attempt=?2 AND g.rank=0 ORDER BY g.seq";

// One sqlite3_column_value per column (not a type call and a value call: each takes the
// connection's mutex).
void SetDouble(const Statement& row, int column, std::optional<double>& field) {
  sqlite3_value* value = row.Value(column);
  if (sqlite3_value_type(value) != SQLITE_NULL) field = sqlite3_value_double(value);
}

template <typename Int>
void SetInt(const Statement& row, int column, std::optional<Int>& field) {
  sqlite3_value* value = row.Value(column);
  if (sqlite3_value_type(value) != SQLITE_NULL)
    field = static_cast<Int>(sqlite3_value_int64(value));
}

absl::Status ReadStepTimes(Statement& select, std::vector<double>& step_times) {
  while (true) {
    ASSIGN_OR_RETURN(bool row, select.Step());
    if (!row) return absl::OkStatus();
    step_times.push_back(select.Double(0));
  }
}

absl::Status ReadReadings(Statement& select, std::vector<diagnosis::GpuReading>& readings) {
  while (true) {
    ASSIGN_OR_RETURN(bool row, select.Step());
    if (!row) return absl::OkStatus();
    diagnosis::GpuReading& r = readings.emplace_back();
    r.time_unix_ns = select.Int(0);
    SetDouble(select, 1, r.sm_clock_mhz);
    SetDouble(select, 2, r.max_sm_clock_mhz);
    SetDouble(select, 3, r.memory_clock_mhz);
    SetDouble(select, 4, r.max_memory_clock_mhz);
    SetDouble(select, 5, r.power_w);
    SetDouble(select, 6, r.power_limit_w);
    SetDouble(select, 7, r.temperature_c);
    SetInt(select, 8, r.throttle_reasons);  // the bits, as stored
    SetInt(select, 9, r.pcie_gen);
    SetInt(select, 10, r.pcie_gen_max);
    SetInt(select, 11, r.pcie_width);
    SetInt(select, 12, r.pcie_width_max);
    SetInt(select, 13, r.ecc_corrected);
    SetInt(select, 14, r.ecc_uncorrected);
    SetInt(select, 15, r.xid_errors);
  }
}

}  // namespace

absl::StatusOr<std::vector<Store::ScreeningRows>> Store::ReadScreeningRows(
    const std::vector<std::pair<std::string, int>>& attempts) {
  std::vector<ScreeningRows> rows(attempts.size());
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(Statement * step_times, reader_db_->Prepare(kStepTimesSql));
  ASSIGN_OR_RETURN(Statement * readings, reader_db_->Prepare(kReadingsSql));
  for (size_t i = 0; i < attempts.size(); ++i) {
    const auto& [job_id, attempt] = attempts[i];
    if (attempt < 1) continue;
    step_times->Reset();
    step_times->BindUnowned(1, job_id);
    step_times->Bind(2, int64_t{attempt});
    RETURN_IF_ERROR(ReadStepTimes(*step_times, rows[i].step_times_s));
    readings->Reset();
    readings->BindUnowned(1, job_id);
    readings->Bind(2, int64_t{attempt});
    RETURN_IF_ERROR(ReadReadings(*readings, rows[i].readings));
  }
  step_times->Reset();
  readings->Reset();
  return rows;
}

}  // namespace bench
