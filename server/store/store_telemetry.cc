// Store operations on GPU telemetry: raw NVML samples, per-GPU figures, iteration means.
#include <sqlite3.h>

#include <algorithm>
#include <future>
#include <map>
#include <numeric>
#include <optional>
#include <string_view>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/store/sqlite_db.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace bench {
namespace {

void BindOptional(Statement* statement, int index, const std::optional<double>& value) {
  if (value) {
    statement->Bind(index, *value);
  } else {
    statement->BindNull(index);
  }
}

template <typename Int>
void BindOptional(Statement* statement, int index, const std::optional<Int>& value) {
  if (value) {
    statement->Bind(index, static_cast<int64_t>(*value));
  } else {
    statement->BindNull(index);
  }
}

std::optional<double> OptionalDouble(const Statement* statement, int column) {
  if (statement->IsNull(column)) return std::nullopt;
  return statement->Double(column);
}

template <typename Int>
std::optional<Int> OptionalInt(const Statement* statement, int column) {
  if (statement->IsNull(column)) return std::nullopt;
  return static_cast<Int>(statement->Int(column));
}

}  // namespace

absl::Status InsertGpuSamples(Database& db, const std::vector<GpuSample>& samples,
                              AppendResult* result) {
  if (samples.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(Statement * insert,
                   db.Prepare("INSERT OR IGNORE INTO gpu_readings (series, seq, rank, "
                              "gpu_uuid, gpu_index, time_unix_ns, power_w, power_average_w, "
                              "energy_j, sm_clock_mhz, memory_clock_mhz, temperature_c, "
                              "gpu_utilization_pct, memory_utilization_pct, memory_used_bytes, "
                              "throttle_reasons, pcie_gen, pcie_gen_max, pcie_width, "
                              "pcie_width_max, max_sm_clock_mhz, max_memory_clock_mhz, "
                              "power_limit_w, ecc_corrected, ecc_uncorrected, xid_errors) "
                              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                              "?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, "
                              "?26)"));
  std::map<std::pair<std::string_view, int>, int64_t> attempt_ids;  // of this batch
  for (const GpuSample& s : samples) {
    auto [known, added] = attempt_ids.try_emplace({s.job_id, s.attempt}, 0);
    if (added) {
      ASSIGN_OR_RETURN(std::optional<int64_t> id,
                       AttemptSeriesId(db, s.job_id, s.attempt, /*make=*/true));
      known->second = *id;
    }
    insert->Reset();
    insert->Bind(1, known->second);
    insert->Bind(2, s.seq);
    insert->Bind(3, int64_t{s.rank});
    insert->Bind(4, s.gpu_uuid);
    insert->Bind(5, int64_t{s.gpu_index});
    insert->Bind(6, s.time_unix_ns);
    BindOptional(insert, 7, s.power_w);
    BindOptional(insert, 8, s.power_average_w);
    BindOptional(insert, 9, s.energy_j);
    BindOptional(insert, 10, s.sm_clock_mhz);
    BindOptional(insert, 11, s.memory_clock_mhz);
    BindOptional(insert, 12, s.temperature_c);
    BindOptional(insert, 13, s.gpu_utilization_pct);
    BindOptional(insert, 14, s.memory_utilization_pct);
    if (s.memory_used_bytes) {
      insert->Bind(15, *s.memory_used_bytes);
    } else {
      insert->BindNull(15);
    }
    if (s.throttle_reasons) {
      insert->Bind(16, static_cast<int64_t>(*s.throttle_reasons));  // the bits, as stored
    } else {
      insert->BindNull(16);
    }
    BindOptional(insert, 17, s.pcie_gen);
    BindOptional(insert, 18, s.pcie_gen_max);
    BindOptional(insert, 19, s.pcie_width);
    BindOptional(insert, 20, s.pcie_width_max);
    BindOptional(insert, 21, s.max_sm_clock_mhz);
    BindOptional(insert, 22, s.max_memory_clock_mhz);
    BindOptional(insert, 23, s.power_limit_w);
    BindOptional(insert, 24, s.ecc_corrected);
    BindOptional(insert, 25, s.ecc_uncorrected);
    BindOptional(insert, 26, s.xid_errors);
    RETURN_IF_ERROR(insert->Run());
    if (insert->changes() == 1) {
      ++result->gpu_stored;
    } else {
      ++result->gpu_duplicates;
    }
  }
  return absl::OkStatus();
}

namespace {
constexpr char kGpuSampleColumns[] =
    "SELECT rank, seq, gpu_uuid, gpu_index, time_unix_ns, power_w, power_average_w, "
    "energy_j, sm_clock_mhz, memory_clock_mhz, temperature_c, gpu_utilization_pct, "
    "memory_utilization_pct, memory_used_bytes, throttle_reasons, pcie_gen, pcie_gen_max, "
    "pcie_width, pcie_width_max, max_sm_clock_mhz, max_memory_clock_mhz, power_limit_w, "
    "ecc_corrected, ecc_uncorrected, xid_errors FROM gpu_readings ";
// The rows of `select` (kGpuSampleColumns, job and attempt bound) as samples.
absl::StatusOr<std::vector<GpuSample>> GpuSampleRows(Statement* select, const std::string& job_id,
                                                     int attempt);
}  // namespace

absl::StatusOr<std::vector<GpuSample>> SelectGpuSamples(Database& db, const std::string& job_id,
                                                         int attempt) {
  ASSIGN_OR_RETURN(std::optional<int64_t> series,
                   AttemptSeriesId(db, job_id, attempt, /*make=*/false));
  if (!series) return std::vector<GpuSample>{};
  // Read in the key's order (seq, then rank), then put in rank order: a stable sort
  // keeps each rank's readings in seq order.
  ASSIGN_OR_RETURN(Statement * select,
                   db.Prepare(absl::StrCat(kGpuSampleColumns, "WHERE series=?1 ORDER BY seq, rank")));
  select->Bind(1, *series);
  ASSIGN_OR_RETURN(std::vector<GpuSample> rows, GpuSampleRows(select, job_id, attempt));
  return InRankOrder(std::move(rows));
}

namespace {
absl::StatusOr<std::vector<GpuSample>> GpuSampleRows(Statement* select, const std::string& job_id,
                                                     int attempt) {
  std::vector<GpuSample> samples;
  while (true) {
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    GpuSample s;
    s.job_id = job_id;
    s.attempt = attempt;
    s.rank = static_cast<int>(select->Int(0));
    s.seq = select->Int(1);
    s.gpu_uuid = select->Text(2);
    s.gpu_index = static_cast<int>(select->Int(3));
    s.time_unix_ns = select->Int(4);
    s.power_w = OptionalDouble(select, 5);
    s.power_average_w = OptionalDouble(select, 6);
    s.energy_j = OptionalDouble(select, 7);
    s.sm_clock_mhz = OptionalDouble(select, 8);
    s.memory_clock_mhz = OptionalDouble(select, 9);
    s.temperature_c = OptionalDouble(select, 10);
    s.gpu_utilization_pct = OptionalDouble(select, 11);
    s.memory_utilization_pct = OptionalDouble(select, 12);
    if (!select->IsNull(13)) s.memory_used_bytes = select->Int(13);
    if (!select->IsNull(14)) s.throttle_reasons = static_cast<uint64_t>(select->Int(14));
    s.pcie_gen = OptionalInt<int>(select, 15);
    s.pcie_gen_max = OptionalInt<int>(select, 16);
    s.pcie_width = OptionalInt<int>(select, 17);
    s.pcie_width_max = OptionalInt<int>(select, 18);
    s.max_sm_clock_mhz = OptionalDouble(select, 19);
    s.max_memory_clock_mhz = OptionalDouble(select, 20);
    s.power_limit_w = OptionalDouble(select, 21);
    s.ecc_corrected = OptionalInt<int64_t>(select, 22);
    s.ecc_uncorrected = OptionalInt<int64_t>(select, 23);
    s.xid_errors = OptionalInt<int64_t>(select, 24);
    samples.push_back(std::move(s));
  }
  return samples;
}
}  // namespace

absl::Status WriteGpuTelemetryRows(Database& db, const Job& job) {
  if (job.gpu_telemetry.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(Statement * insert,
                   db.Prepare("INSERT OR REPLACE INTO gpu_telemetry VALUES (?1, ?2, ?3, ?4, "
                              "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
                              "?18, ?19, ?20, ?21, ?22, ?23)"));
  for (const GpuTelemetry& g : job.gpu_telemetry) {
    insert->Reset();
    insert->Bind(1, job.id);
    insert->Bind(2, int64_t{job.attempt});
    insert->Bind(3, int64_t{g.rank});
    insert->Bind(4, g.agent);
    insert->Bind(5, int64_t{g.gpu_index});
    insert->Bind(6, g.gpu_uuid);
    insert->Bind(7, g.samples);
    BindOptional(insert, 8, g.energy_j);
    BindOptional(insert, 9, g.energy_per_image_j);
    BindOptional(insert, 10, g.images_per_second_per_watt);
    int column = 11;
    for (const Percentiles* p : {&g.power_w, &g.sm_clock_mhz, &g.temperature_c}) {
      insert->Bind(column++, p->count);
      for (double v : {p->p5, p->p50, p->p95}) {
        if (p->count > 0) {
          insert->Bind(column++, v);
        } else {
          insert->BindNull(column++);
        }
      }
    }
    insert->Bind(23, static_cast<int64_t>(g.throttle_reasons));
    RETURN_IF_ERROR(insert->Run());
  }
  return absl::OkStatus();
}

absl::Status LoadGpuTelemetry(Database& db, const std::map<std::string, size_t>& index,
                              std::vector<Job>& jobs, const RowFilter& filter) {
  ASSIGN_OR_RETURN(Statement * select,
                   db.Prepare(filter.Sql("SELECT * FROM gpu_telemetry",
                                         " ORDER BY job_id, attempt, rank")));
  filter.Bind(select);
  while (true) {
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    auto it = index.find(select->Text(0));
    if (it == index.end()) continue;
    Job& job = jobs[it->second];
    if (select->Int(1) != job.attempt) continue;
    GpuTelemetry g;
    g.rank = static_cast<int>(select->Int(2));
    g.agent = select->Text(3);
    g.gpu_index = static_cast<int>(select->Int(4));
    g.gpu_uuid = select->Text(5);
    g.samples = select->Int(6);
    g.energy_j = OptionalDouble(select, 7);
    g.energy_per_image_j = OptionalDouble(select, 8);
    g.images_per_second_per_watt = OptionalDouble(select, 9);
    int column = 10;
    for (Percentiles* p : {&g.power_w, &g.sm_clock_mhz, &g.temperature_c}) {
      p->count = select->Int(column++);
      for (double* v : {&p->p5, &p->p50, &p->p95}) *v = select->Double(column++);
    }
    g.throttle_reasons = static_cast<uint64_t>(select->Int(22));
    job.gpu_telemetry.push_back(std::move(g));
  }
  return absl::OkStatus();
}

bool Store::JoinTelemetryAsync(TelemetryRequest request, TelemetryDone done) {
  auto answer = std::make_shared<TelemetryDone>(std::move(done));
  std::string job_id = request.job_id;
  int attempt = request.attempt;
  return AnalyzeAttemptRows(
      job_id, attempt,
      [this, request = std::move(request), answer](const AttemptRows& rows) {
        return JoinTelemetryOf(request, rows, answer);
      },
      [answer](absl::Status status) { (*answer)(status); });
}

std::function<void()> Store::JoinTelemetryOf(const TelemetryRequest& request,
                                             const AttemptRows& rows,
                                             std::shared_ptr<TelemetryDone> answer) {
  // Joined on the analysis thread; only the iterations' means are written.
  auto joined = std::make_shared<JoinedTelemetry>(JoinTelemetry(
      rows.samples, rows.gpu_samples, request.summaries, request.agent_by_rank, request.expect_gpus));
  return [this, answer, joined, job_id = request.job_id, attempt = request.attempt] {
    auto write = [joined, job_id, attempt](Database& db) -> absl::Status {
      if (joined->iterations.empty()) return absl::OkStatus();
      ASSIGN_OR_RETURN(std::optional<int64_t> series,
                       AttemptSeriesId(db, job_id, attempt, /*make=*/false));
      if (!series) return absl::OkStatus();  // no samples: nothing to update
      // Appended in key order (the attempt's rows are contiguous): each page is
      // written once.
      std::vector<const IterationTelemetry*> in_key_order;
      in_key_order.reserve(joined->iterations.size());
      for (const IterationTelemetry& it : joined->iterations) in_key_order.push_back(&it);
      std::sort(in_key_order.begin(), in_key_order.end(),
                [](const IterationTelemetry* a, const IterationTelemetry* b) {
                  return std::tie(a->iteration, a->rank) < std::tie(b->iteration, b->rank);
                });
      ASSIGN_OR_RETURN(Statement * update,
                       db.Prepare("INSERT OR REPLACE INTO iteration_means (series, iteration, "
                                  "rank, power_w_mean, sm_clock_mhz_mean) "
                                  "VALUES (?1, ?2, ?3, ?4, ?5)"));
      for (const IterationTelemetry* at : in_key_order) {
        const IterationTelemetry& it = *at;
        update->Reset();
        update->Bind(1, *series);
        update->Bind(2, int64_t{it.iteration});
        update->Bind(3, int64_t{it.rank});
        BindOptional(update, 4, it.power_w_mean);
        BindOptional(update, 5, it.sm_clock_mhz_mean);
        RETURN_IF_ERROR(update->Run());
      }
      return absl::OkStatus();
    };
    Enqueue({std::move(write), [answer, joined](absl::Status status) {
               if (status.ok()) {
                 (*answer)(std::move(*joined));
               } else {
                 (*answer)(status);
               }
             }});
  };
}

absl::StatusOr<std::vector<GpuSample>> Store::ReadGpuSamples(const std::string& job_id,
                                                             int attempt) {
  std::lock_guard<std::mutex> lock(reader_mu_);
  return SelectGpuSamples(*reader_db_, job_id, attempt);
}

absl::StatusOr<std::vector<GpuSample>> Store::ReadGpuSamplesAfter(const std::string& job_id,
                                                                  int attempt, AttemptCursor after,
                                                                  int limit) {
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(std::optional<int64_t> series,
                   AttemptSeriesId(*reader_db_, job_id, attempt, /*make=*/false));
  if (!series) return std::vector<GpuSample>{};
  ASSIGN_OR_RETURN(Statement * select,
                   reader_db_->Prepare(absl::StrCat(
                       kGpuSampleColumns,
                       "WHERE series=?1 AND (seq, rank) > (?2, ?3) ORDER BY seq, rank LIMIT ?4")));
  select->Bind(1, *series);
  select->Bind(2, after.position);
  select->Bind(3, int64_t{after.rank});
  select->Bind(4, int64_t{limit});
  return GpuSampleRows(select, job_id, attempt);
}

absl::StatusOr<std::map<std::pair<int, int>, Store::IterationMeans>> Store::ReadIterationMeans(
    const std::string& job_id, int attempt) {
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(Statement * select,
                   reader_db_->Prepare("SELECT s.rank, s.iteration, m.power_w_mean, "
                                       "m.sm_clock_mhz_mean FROM attempt_series a "
                                       "JOIN iteration_rows s ON s.series = a.id "
                                       "LEFT JOIN iteration_means m ON m.series = s.series "
                                       "AND m.iteration = s.iteration AND m.rank = s.rank "
                                       "WHERE a.job_id=?1 AND a.attempt=?2"));
  select->Bind(1, job_id);
  select->Bind(2, int64_t{attempt});
  std::map<std::pair<int, int>, IterationMeans> means;
  while (true) {
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    IterationMeans& m =
        means[{static_cast<int>(select->Int(0)), static_cast<int>(select->Int(1))}];
    m.power_w = OptionalDouble(select, 2);
    m.sm_clock_mhz = OptionalDouble(select, 3);
  }
  return means;
}

}  // namespace bench
