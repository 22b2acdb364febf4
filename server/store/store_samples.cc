// Store operations on iteration samples (`iteration_rows`, keyed by the attempt's id in
// `attempt_series`, then iteration, then rank; `sample_series` keeps each rank's counts):
// appending them exactly once by (job, attempt, rank, iteration) with per-rank counts of
// what was new, duplicate or non-finite, and reading and counting them back.
#include <algorithm>
#include <cmath>
#include <future>
#include <map>
#include <numeric>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/store/sqlite_db.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace bench {
namespace {

// The columns a sample is read back with, after (rank, iteration). NULL in a step split
// column is no data (nullopt).
constexpr char kSampleSelectColumns[] =
    "s.step_time_s, s.images, s.loss, s.data_time_s, s.elapsed_s, s.warmup, "
    "s.received_unix_ns, s.compute_time_s, s.forward_backward_time_s, "
    "s.allreduce_wait_time_s, s.optimizer_time_s ";

std::optional<double> OptionalDouble(Statement& select, int column) {
  if (select.IsNull(column)) return std::nullopt;
  return select.Double(column);
}

// The rows of a SELECT of (rank, iteration, kSampleSelectColumns) over one attempt's
// samples.
absl::StatusOr<std::vector<IterationSample>> ReadSampleRows(Statement& select,
                                                            const std::string& job_id,
                                                            int attempt) {
  std::vector<IterationSample> samples;
  while (true) {
    ASSIGN_OR_RETURN(bool row, select.Step());
    if (!row) break;
    IterationSample s;
    s.job_id = job_id;
    s.attempt = attempt;
    s.rank = static_cast<int>(select.Int(0));
    s.iteration = static_cast<int>(select.Int(1));
    s.step_time_s = select.Double(2);
    s.images = static_cast<int>(select.Int(3));
    s.loss = select.IsNull(4) ? std::nan("") : select.Double(4);
    s.data_time_s = select.Double(5);
    s.elapsed_s = select.Double(6);
    s.warmup = select.Int(7) != 0;
    s.received_unix_ns = select.Int(8);
    s.compute_time_s = OptionalDouble(select, 9);
    s.forward_backward_time_s = OptionalDouble(select, 10);
    s.allreduce_wait_time_s = OptionalDouble(select, 11);
    s.optimizer_time_s = OptionalDouble(select, 12);
    samples.push_back(std::move(s));
  }
  return samples;
}


// Samples go in with multi-row INSERT statements of these sizes (largest first), which
// spares SQLite most of its per-statement work; 64 rows are 896 parameters.
constexpr int kInsertRowSizes[] = {64, 8, 1};
constexpr int kSampleColumns = 14;

const std::string& InsertSamplesSql(int rows) {
  static const auto* sql = new std::map<int, std::string>([] {
    std::map<int, std::string> texts;
    for (int n : kInsertRowSizes) {
      std::string text =
          "INSERT INTO iteration_rows (series, iteration, rank, step_time_s, images, "
          "loss, data_time_s, elapsed_s, warmup, received_unix_ns, compute_time_s, "
          "forward_backward_time_s, allreduce_wait_time_s, optimizer_time_s) VALUES ";
      for (int r = 0; r < n; ++r) {
        absl::StrAppend(&text, r == 0 ? "(" : ",(");
        for (int c = 1; c <= kSampleColumns; ++c) {
          absl::StrAppend(&text, c == 1 ? "?" : ",?", r * kSampleColumns + c);
        }
        text += ")";
      }
      // Only a repeated identity is skipped (a duplicate); any other constraint failing
      // is an error, never a silently dropped sample.
      text += " ON CONFLICT (series, iteration, rank) DO NOTHING";
      texts[n] = std::move(text);
    }
    return texts;
  }());
  return sql->at(rows);
}

void BindSample(Statement* insert, int row, int64_t series, const IterationSample& s) {
  const int base = row * kSampleColumns;
  insert->Bind(base + 1, series);
  insert->Bind(base + 2, int64_t{s.iteration});
  insert->Bind(base + 3, int64_t{s.rank});
  insert->Bind(base + 4, s.step_time_s);
  insert->Bind(base + 5, int64_t{s.images});
  // NULL is NaN (SQLite would store a bound NaN as NULL anyway); +/-Inf are REALs.
  if (std::isnan(s.loss)) {
    insert->BindNull(base + 6);
  } else {
    insert->Bind(base + 6, s.loss);
  }
  insert->Bind(base + 7, s.data_time_s);
  insert->Bind(base + 8, s.elapsed_s);
  insert->Bind(base + 9, int64_t{s.warmup ? 1 : 0});
  insert->Bind(base + 10, s.received_unix_ns);
  // NULL: the trainer did not write the figure.
  int column = base + 11;
  for (const std::optional<double>* time :
       {&s.compute_time_s, &s.forward_backward_time_s, &s.allreduce_wait_time_s,
        &s.optimizer_time_s}) {
    if (*time) {
      insert->Bind(column, **time);
    } else {
      insert->BindNull(column);
    }
    ++column;
  }
}

// The id of the rank's counts row in sample_series (job, attempt, rank), made on first use.
absl::StatusOr<int64_t> RankSeriesId(Database& db, const IterationSample& s) {
  ASSIGN_OR_RETURN(Statement * select,
                   db.Prepare("SELECT id FROM sample_series WHERE job_id=?1 AND attempt=?2 "
                              "AND rank=?3"));
  select->Bind(1, s.job_id);
  select->Bind(2, int64_t{s.attempt});
  select->Bind(3, int64_t{s.rank});
  ASSIGN_OR_RETURN(bool row, select->Step());
  if (row) {
    int64_t id = select->Int(0);
    select->Reset();
    return id;
  }
  select->Reset();
  ASSIGN_OR_RETURN(Statement * insert,
                   db.Prepare("INSERT INTO sample_series (job_id, attempt, rank) "
                              "VALUES (?1, ?2, ?3)"));
  insert->Bind(1, s.job_id);
  insert->Bind(2, int64_t{s.attempt});
  insert->Bind(3, int64_t{s.rank});
  RETURN_IF_ERROR(insert->Run());
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db.handle()));
}

bool SameRank(const IterationSample& a, const IterationSample& b) {
  return a.rank == b.rank && a.attempt == b.attempt && a.job_id == b.job_id;
}

// Groups the samples by rank, in iteration order: each insert then lands beside the
// previous one in the B-tree, and a statement's changes() are that rank's newly stored
// samples. Stable, so of two samples with one identity the earlier one is stored, as
// in arrival order.
void SortForInsert(std::vector<IterationSample>& samples) {
  auto before = [](const IterationSample& a, const IterationSample& b) {
    if (a.rank != b.rank || a.attempt != b.attempt) {
      return std::tie(a.attempt, a.rank) < std::tie(b.attempt, b.rank);
    }
    if (int c = a.job_id.compare(b.job_id); c != 0) return c < 0;
    return a.iteration < b.iteration;
  };
  if (std::is_sorted(samples.begin(), samples.end(), before)) return;
  // Sorts indices, then moves each sample once: merge-sorting the samples themselves
  // moved each of them (a string and ten numbers) log2(n) times.
  std::vector<uint32_t> order(samples.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t x, uint32_t y) { return before(samples[x], samples[y]); });
  std::vector<IterationSample> sorted;
  sorted.reserve(samples.size());
  for (uint32_t i : order) sorted.push_back(std::move(samples[i]));
  samples = std::move(sorted);
}

// Inserts samples[begin, end) of one rank of attempt `series`; returns how many were new.
absl::StatusOr<int> InsertRun(Database& db, int64_t series,
                              const std::vector<IterationSample>& samples, size_t begin,
                              size_t end) {
  int stored = 0;
  for (size_t at = begin; at < end;) {
    int rows = 1;
    for (int n : kInsertRowSizes) {
      if (end - at >= static_cast<size_t>(n)) {
        rows = n;
        break;
      }
    }
    ASSIGN_OR_RETURN(Statement * insert, db.Prepare(InsertSamplesSql(rows)));
    for (int r = 0; r < rows; ++r) BindSample(insert, r, series, samples[at + r]);
    RETURN_IF_ERROR(insert->Run());
    stored += insert->changes();
    at += rows;
  }
  return stored;
}

// Inserts samples sorted by SortForInsert (a repeated identity is skipped), counted
// into `counted`. Each rank's samples go in as runs of finite and of non-finite losses,
// so that a statement's changes() also count the newly stored non-finite losses.
absl::Status InsertSamples(Database& db, const std::vector<IterationSample>& samples,
                           AppendResult& counted) {
  size_t i = 0;
  std::map<std::pair<std::string_view, int>, int64_t> attempt_ids;  // of this batch
  while (i < samples.size()) {
    size_t end = i + 1;
    while (end < samples.size() && SameRank(samples[i], samples[end])) ++end;
    auto [known, added] = attempt_ids.try_emplace({samples[i].job_id, samples[i].attempt}, 0);
    if (added) {
      ASSIGN_OR_RETURN(std::optional<int64_t> id,
                       AttemptSeriesId(db, samples[i].job_id, samples[i].attempt, /*make=*/true));
      known->second = *id;
    }
    const int64_t series = known->second;
    ASSIGN_OR_RETURN(int64_t rank_series, RankSeriesId(db, samples[i]));
    int stored = 0;
    int nonfinite = 0;
    for (size_t run = i; run < end;) {
      const bool finite = std::isfinite(samples[run].loss);
      size_t run_end = run + 1;
      while (run_end < end && std::isfinite(samples[run_end].loss) == finite) ++run_end;
      ASSIGN_OR_RETURN(int n, InsertRun(db, series, samples, run, run_end));
      stored += n;
      if (!finite) nonfinite += n;
      run = run_end;
    }
    const IterationSample& s = samples[i];
    if (stored > 0) {
      ASSIGN_OR_RETURN(Statement * count,
                       db.Prepare("UPDATE sample_series SET samples = samples + ?2, "
                                  "nonfinite_losses = nonfinite_losses + ?3 WHERE id = ?1"));
      count->Bind(1, rank_series);
      count->Bind(2, int64_t{stored});
      count->Bind(3, int64_t{nonfinite});
      RETURN_IF_ERROR(count->Run());
    }
    counted.stored += stored;
    counted.duplicates += static_cast<int>(end - i) - stored;
    if (stored > 0) counted.stored_by_rank[{s.job_id, s.attempt, s.rank}] += stored;
    if (nonfinite > 0) {
      counted.nonfinite_losses += nonfinite;
      counted.nonfinite_by_rank[{s.job_id, s.attempt, s.rank}] += nonfinite;
    }
    i = end;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<int64_t>> AttemptSeriesId(Database& db, const std::string& job_id,
                                                       int attempt, bool make) {
  ASSIGN_OR_RETURN(Statement * select,
                   db.Prepare("SELECT id FROM attempt_series WHERE job_id=?1 AND attempt=?2"));
  select->Bind(1, job_id);
  select->Bind(2, int64_t{attempt});
  ASSIGN_OR_RETURN(bool row, select->Step());
  if (row) {
    int64_t id = select->Int(0);
    select->Reset();
    return id;
  }
  select->Reset();
  if (!make) return std::nullopt;
  ASSIGN_OR_RETURN(Statement * insert,
                   db.Prepare("INSERT INTO attempt_series (job_id, attempt) VALUES (?1, ?2)"));
  insert->Bind(1, job_id);
  insert->Bind(2, int64_t{attempt});
  RETURN_IF_ERROR(insert->Run());
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db.handle()));
}

void Store::AppendSamples(std::vector<IterationSample> samples, std::vector<GpuSample> gpu_samples,
                          AppendDone done) {
  SortForInsert(samples);  // on the caller's thread, not the writer's
  auto result = std::make_shared<AppendResult>();
  auto apply = [samples = std::move(samples), gpu_samples = std::move(gpu_samples),
                result](Database& db) -> absl::Status {
    AppendResult counted;
    RETURN_IF_ERROR(InsertSamples(db, samples, counted));
    RETURN_IF_ERROR(InsertGpuSamples(db, gpu_samples, &counted));
    *result = counted;
    return absl::OkStatus();
  };
  Enqueue({std::move(apply), [result, done = std::move(done)](absl::Status status) {
             if (status.ok()) {
               done(*result);
             } else {
               done(status);
             }
           }});
}

absl::StatusOr<AppendResult> Store::AppendSamplesSync(std::vector<IterationSample> samples,
                                                      std::vector<GpuSample> gpu_samples) {
  std::promise<absl::StatusOr<AppendResult>> promise;
  auto future = promise.get_future();
  AppendSamples(std::move(samples), std::move(gpu_samples),
                [&promise](absl::StatusOr<AppendResult> r) { promise.set_value(std::move(r)); });
  return future.get();
}

void Store::AppendSamples(std::vector<IterationSample> samples, AppendDone done) {
  AppendSamples(std::move(samples), {}, std::move(done));
}

absl::StatusOr<int64_t> Store::CountSamples(const std::string& job_id, int attempt) {
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(Statement * count,
                   reader_db_->Prepare("SELECT count(*) FROM attempt_series a JOIN iteration_rows s "
                                       "ON s.series = a.id WHERE a.job_id=?1 AND a.attempt=?2"));
  count->Bind(1, job_id);
  count->Bind(2, int64_t{attempt});
  ASSIGN_OR_RETURN(bool row, count->Step());
  int64_t n = row ? count->Int(0) : 0;
  count->Reset();
  return n;
}

absl::StatusOr<std::vector<IterationSample>> Store::ReadSamples(const std::string& job_id,
                                                                int attempt, int from_iteration) {
  std::lock_guard<std::mutex> lock(reader_mu_);
  return SelectSamples(*reader_db_, job_id, attempt, from_iteration);
}

absl::StatusOr<std::vector<IterationSample>> SelectSamples(Database& db, const std::string& job_id,
                                                           int attempt, int from_iteration) {
  // Read in the key's order (iteration, then rank), then put in rank order: a stable
  // sort keeps each rank's iterations in order.
  ASSIGN_OR_RETURN(Statement * select,
                   db.Prepare(absl::StrCat(
                       "SELECT s.rank, s.iteration, ", kSampleSelectColumns,
                       "FROM attempt_series a JOIN iteration_rows s "
                       "ON s.series = a.id AND s.iteration >= ?3 "
                       "WHERE a.job_id=?1 AND a.attempt=?2 ORDER BY s.iteration, s.rank")));
  select->Bind(1, job_id);
  select->Bind(2, int64_t{attempt});
  select->Bind(3, int64_t{from_iteration});
  ASSIGN_OR_RETURN(std::vector<IterationSample> rows, ReadSampleRows(*select, job_id, attempt));
  return InRankOrder(std::move(rows));
}

absl::StatusOr<AttemptRows> SelectAttemptRows(Database& db, const std::string& job_id,
                                              int attempt) {
  AttemptRows rows;
  ASSIGN_OR_RETURN(rows.samples, SelectSamples(db, job_id, attempt));
  ASSIGN_OR_RETURN(rows.gpu_samples, SelectGpuSamples(db, job_id, attempt));
  return rows;
}

absl::StatusOr<std::map<int, int64_t>> Store::CountSamplesByRank(const std::string& job_id,
                                                                 int attempt,
                                                                 const std::string& condition) {
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(Statement * select,
                   reader_db_->Prepare("SELECT s.rank, count(*) FROM attempt_series a "
                                       "JOIN iteration_rows s ON s.series = a.id "
                                       "WHERE a.job_id=?1 AND a.attempt=?2" +
                                       condition + " GROUP BY s.rank"));
  select->Bind(1, job_id);
  select->Bind(2, int64_t{attempt});
  std::map<int, int64_t> counts;
  while (true) {
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    counts[static_cast<int>(select->Int(0))] = select->Int(1);
  }
  return counts;
}

absl::StatusOr<std::map<int, double>> Store::FastestMeasuredStepByRank(const std::string& job_id,
                                                                       int attempt) {
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(Statement * select,
                   reader_db_->Prepare("SELECT s.rank, min(s.step_time_s) FROM attempt_series a "
                                       "JOIN iteration_rows s ON s.series = a.id "
                                       "WHERE a.job_id=?1 AND a.attempt=?2 AND s.warmup = 0 "
                                       "AND s.step_time_s > 0 GROUP BY s.rank"));
  select->Bind(1, job_id);
  select->Bind(2, int64_t{attempt});
  std::map<int, double> fastest;
  while (true) {
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    fastest[static_cast<int>(select->Int(0))] = select->Double(1);
  }
  return fastest;
}

absl::StatusOr<std::map<int, int>> Store::IterationsByRank(const std::string& job_id, int attempt) {
  ASSIGN_OR_RETURN(auto counts, CountSamplesByRank(job_id, attempt, ""));
  std::map<int, int> iterations;
  for (const auto& [rank, n] : counts) iterations[rank] = static_cast<int>(n);
  return iterations;
}

absl::StatusOr<std::map<int, int64_t>> Store::NonFiniteLossesByRank(const std::string& job_id,
                                                                    int attempt) {
  // NULL is a NaN loss; 9e999 is how SQL spells +Inf.
  return CountSamplesByRank(job_id, attempt, " AND (s.loss IS NULL OR abs(s.loss) = 9e999)");
}

absl::StatusOr<std::vector<Store::SeriesCounts>> Store::ReadSeriesCounts() {
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(Statement * select,
                   reader_db_->Prepare("SELECT job_id, attempt, rank, samples, nonfinite_losses "
                                       "FROM sample_series WHERE samples > 0"));
  std::vector<SeriesCounts> series;
  while (true) {
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    SeriesCounts& counts = series.emplace_back();
    counts.job_id = select->Text(0);
    counts.attempt = static_cast<int>(select->Int(1));
    counts.rank = static_cast<int>(select->Int(2));
    counts.samples = select->Int(3);
    counts.nonfinite_losses = select->Int(4);
  }
  return series;
}

namespace {

// The ranks of (job, attempt) with a sample_series row, in order, from `first_rank` on
// (only `only` when set).
absl::StatusOr<std::vector<int>> RanksOf(Database& db, const std::string& job_id, int attempt,
                                         int first_rank, std::optional<int> only) {
  ASSIGN_OR_RETURN(Statement * select,
                   db.Prepare("SELECT rank FROM sample_series WHERE job_id=?1 AND attempt=?2 "
                              "AND rank >= ?3 AND (?4 < 0 OR rank = ?4) ORDER BY rank"));
  select->Bind(1, job_id);
  select->Bind(2, int64_t{attempt});
  select->Bind(3, int64_t{first_rank});
  select->Bind(4, int64_t{only ? *only : -1});
  std::vector<int> ranks;
  while (true) {
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    ranks.push_back(static_cast<int>(select->Int(0)));
  }
  return ranks;
}

}  // namespace

absl::StatusOr<std::vector<IterationSample>> Store::ReadSamplesPage(
    const std::string& job_id, int attempt, int from_iteration, std::optional<int> rank,
    std::optional<SampleCursor> after, int limit) {
  std::lock_guard<std::mutex> lock(reader_mu_);
  std::vector<IterationSample> page;
  ASSIGN_OR_RETURN(std::optional<int64_t> series,
                   AttemptSeriesId(*reader_db_, job_id, attempt, /*make=*/false));
  if (!series || limit <= 0) return page;
  ASSIGN_OR_RETURN(std::vector<int> ranks,
                   RanksOf(*reader_db_, job_id, attempt, after ? after->rank : 0, rank));
  // One rank at a time, in the key's order within the attempt: the cursor's rank
  // continues after its iteration, later ranks from from_iteration.
  ASSIGN_OR_RETURN(Statement * select,
                   reader_db_->Prepare(absl::StrCat(
                       "SELECT s.rank, s.iteration, ", kSampleSelectColumns,
                       "FROM iteration_rows s WHERE s.series = ?1 AND s.iteration >= ?2 "
                       "AND s.rank = ?3 ORDER BY s.iteration LIMIT ?4")));
  for (int r : ranks) {
    const int64_t left = limit - static_cast<int64_t>(page.size());
    if (left <= 0) break;
    const int64_t from = after && r == after->rank
                             ? std::max<int64_t>(int64_t{after->iteration} + 1, from_iteration)
                             : int64_t{from_iteration};
    select->Reset();
    select->Bind(1, *series);
    select->Bind(2, from);
    select->Bind(3, int64_t{r});
    select->Bind(4, left);
    ASSIGN_OR_RETURN(std::vector<IterationSample> rows, ReadSampleRows(*select, job_id, attempt));
    for (IterationSample& row : rows) page.push_back(std::move(row));
  }
  return page;
}

absl::StatusOr<std::vector<IterationSample>> Store::ReadSamplesAfter(const std::string& job_id,
                                                                     int attempt,
                                                                     AttemptCursor after,
                                                                     int limit) {
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(std::optional<int64_t> series,
                   AttemptSeriesId(*reader_db_, job_id, attempt, /*make=*/false));
  if (!series) return std::vector<IterationSample>{};
  ASSIGN_OR_RETURN(Statement * select,
                   reader_db_->Prepare(absl::StrCat(
                       "SELECT s.rank, s.iteration, ", kSampleSelectColumns,
                       "FROM iteration_rows s WHERE s.series = ?1 "
                       "AND (s.iteration, s.rank) > (?2, ?3) ORDER BY s.iteration, s.rank "
                       "LIMIT ?4")));
  select->Bind(1, *series);
  select->Bind(2, after.position);
  select->Bind(3, int64_t{after.rank});
  select->Bind(4, int64_t{limit});
  return ReadSampleRows(*select, job_id, attempt);
}

}  // namespace bench
