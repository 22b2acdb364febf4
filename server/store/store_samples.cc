// Store operations on iteration samples (`sample_series` and `sample_rows`): appending
// them exactly once by (job, attempt, rank, iteration) with per-rank counts of what was
// new, duplicate or non-finite, and reading and counting them back.
#include <algorithm>
#include <cmath>
#include <future>
#include <numeric>
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
// spares SQLite most of its per-statement work; 64 rows are 768 parameters.
constexpr int kInsertRowSizes[] = {64, 8, 1};
constexpr int kSampleColumns = 12;

const std::string& InsertSamplesSql(int rows) {
  static const auto* sql = new std::map<int, std::string>([] {
    std::map<int, std::string> texts;
    for (int n : kInsertRowSizes) {
      std::string text =
          "INSERT INTO sample_rows (key, step_time_s, images, loss, "
          "data_time_s, elapsed_s, warmup, received_unix_ns, compute_time_s, "
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
      text += " ON CONFLICT (key) DO NOTHING";
      texts[n] = std::move(text);
    }
    return texts;
  }());
  return sql->at(rows);
}

int64_t SampleKey(int64_t series, int iteration) {
  return (series << 32) + int64_t{iteration} + (int64_t{1} << 31);
}

void BindSample(Statement* insert, int row, int64_t series, const IterationSample& s) {
  const int base = row * kSampleColumns;
  insert->Bind(base + 1, SampleKey(series, s.iteration));
  insert->Bind(base + 2, s.step_time_s);
  insert->Bind(base + 3, int64_t{s.images});
  // NULL is NaN (SQLite would store a bound NaN as NULL anyway); +/-Inf are REALs.
  if (std::isnan(s.loss)) {
    insert->BindNull(base + 4);
  } else {
    insert->Bind(base + 4, s.loss);
  }
  insert->Bind(base + 5, s.data_time_s);
  insert->Bind(base + 6, s.elapsed_s);
  insert->Bind(base + 7, int64_t{s.warmup ? 1 : 0});
  insert->Bind(base + 8, s.received_unix_ns);
  // NULL: the trainer did not write the figure.
  int column = base + 9;
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

// The id of the sample series (job, attempt, rank), made on first use.
absl::StatusOr<int64_t> SeriesId(Database& db, const IterationSample& s) {
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

// Inserts samples[begin, end) of one series; returns how many were new.
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
  while (i < samples.size()) {
    size_t end = i + 1;
    while (end < samples.size() && SameRank(samples[i], samples[end])) ++end;
    ASSIGN_OR_RETURN(int64_t series, SeriesId(db, samples[i]));
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
      count->Bind(1, series);
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
                   reader_db_->Prepare("SELECT count(*) FROM sample_series r JOIN sample_rows s "
                                       "ON s.key >= r.id << 32 AND s.key < (r.id + 1) << 32 "
                                       "WHERE r.job_id=?1 AND r.attempt=?2"));
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
  ASSIGN_OR_RETURN(Statement * select,
                   db.Prepare(absl::StrCat(
                       "SELECT r.rank, (s.key & 4294967295) - 2147483648, ",
                       kSampleSelectColumns,
                       "FROM sample_series r "
                       "JOIN sample_rows s ON s.key >= (r.id << 32) + ?3 + 2147483648 "
                       "AND s.key < (r.id + 1) << 32 "
                       "WHERE r.job_id=?1 AND r.attempt=?2 ORDER BY r.rank, s.key")));
  select->Bind(1, job_id);
  select->Bind(2, int64_t{attempt});
  select->Bind(3, int64_t{from_iteration});
  return ReadSampleRows(*select, job_id, attempt);
}

absl::StatusOr<std::map<int, int64_t>> Store::CountSamplesByRank(const std::string& job_id,
                                                                 int attempt,
                                                                 const std::string& condition) {
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(Statement * select,
                   reader_db_->Prepare("SELECT r.rank, count(*) FROM sample_series r "
                                       "JOIN sample_rows s ON s.key >= r.id << 32 "
                                       "AND s.key < (r.id + 1) << 32 "
                                       "WHERE r.job_id=?1 AND r.attempt=?2" +
                                       condition + " GROUP BY r.rank"));
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
                   reader_db_->Prepare("SELECT r.rank, min(s.step_time_s) FROM sample_series r "
                                       "JOIN sample_rows s ON s.key >= r.id << 32 "
                                       "AND s.key < (r.id + 1) << 32 "
                                       "WHERE r.job_id=?1 AND r.attempt=?2 AND s.warmup = 0 "
                                       "AND s.step_time_s > 0 GROUP BY r.rank"));
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

absl::StatusOr<std::vector<IterationSample>> Store::ReadSamplesPage(
    const std::string& job_id, int attempt, int from_iteration, std::optional<int> rank,
    std::optional<SampleCursor> after, int limit) {
  std::lock_guard<std::mutex> lock(reader_mu_);
  // The cursor's rank continues after its iteration, later ranks from from_iteration.
  ASSIGN_OR_RETURN(
      Statement * select,
      reader_db_->Prepare(absl::StrCat(
          "SELECT r.rank, (s.key & 4294967295) - 2147483648, ", kSampleSelectColumns,
          "FROM sample_series r JOIN sample_rows s ON s.key >= (r.id << 32) + "
          "(CASE WHEN r.rank = ?3 THEN max(?4, ?5) ELSE ?5 END) + 2147483648 "
          "AND s.key < (r.id + 1) << 32 "
          "WHERE r.job_id=?1 AND r.attempt=?2 AND r.rank >= ?3 AND (?6 < 0 OR r.rank = ?6) "
          "ORDER BY r.rank, s.key LIMIT ?7")));
  select->Bind(1, job_id);
  select->Bind(2, int64_t{attempt});
  select->Bind(3, int64_t{after ? after->rank : -1});
  select->Bind(4, after ? int64_t{after->iteration} + 1 : int64_t{0});
  select->Bind(5, int64_t{from_iteration});
  select->Bind(6, int64_t{rank ? *rank : -1});
  select->Bind(7, int64_t{limit});
  return ReadSampleRows(*select, job_id, attempt);
}

absl::StatusOr<std::vector<Store::SampleBucket>> Store::ReadSampleBuckets(
    const std::string& job_id, int attempt, int from_iteration, std::optional<int> rank,
    int max_points) {
  if (max_points < 1) return absl::InvalidArgumentError("points must be >= 1");
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(Statement * series,
                   reader_db_->Prepare("SELECT id, rank FROM sample_series WHERE job_id=?1 "
                                       "AND attempt=?2 AND (?3 < 0 OR rank = ?3) ORDER BY rank"));
  series->Bind(1, job_id);
  series->Bind(2, int64_t{attempt});
  series->Bind(3, int64_t{rank ? *rank : -1});
  std::vector<std::pair<int64_t, int>> ids;
  while (true) {
    ASSIGN_OR_RETURN(bool row, series->Step());
    if (!row) break;
    ids.push_back({series->Int(0), static_cast<int>(series->Int(1))});
  }
  std::vector<SampleBucket> buckets;
  for (const auto& [id, series_rank] : ids) {
    const int64_t low = (id << 32) + int64_t{from_iteration} + (int64_t{1} << 31);
    const int64_t high = (id + 1) << 32;
    // The first and last stored keys, each from one step of the primary key's B-tree.
    int64_t first = 0;
    int64_t last = 0;
    for (const bool ascending : {true, false}) {
      ASSIGN_OR_RETURN(Statement * edge,
                       reader_db_->Prepare(ascending ? "SELECT key FROM sample_rows WHERE key >= ?1 "
                                                       "AND key < ?2 ORDER BY key LIMIT 1"
                                                     : "SELECT key FROM sample_rows WHERE key >= ?1 "
                                                       "AND key < ?2 ORDER BY key DESC LIMIT 1"));
      edge->Bind(1, low);
      edge->Bind(2, high);
      ASSIGN_OR_RETURN(bool row, edge->Step());
      (ascending ? first : last) = row ? edge->Int(0) : -1;
      // A statement left mid-result holds the reader's read transaction open, and every
      // later read on this connection would see this moment's database (a running job's
      // samples would stop growing): finish it now.
      edge->Reset();
    }
    if (first < 0 || last < first) continue;
    const int64_t width = (last - first + max_points) / max_points;  // ceil(span / points)
    ASSIGN_OR_RETURN(
        Statement * select,
        reader_db_->Prepare(
            "SELECT min(key), max(key), count(*), avg(step_time_s), avg(data_time_s), "
            "sum(images), sum(step_time_s), "
            "avg(CASE WHEN loss IS NOT NULL AND abs(loss) < 9e999 THEN loss END), "
            "sum(loss IS NULL OR abs(loss) = 9e999), max(elapsed_s), max(warmup), "
            "max(received_unix_ns), avg(compute_time_s), avg(forward_backward_time_s), "
            "avg(allreduce_wait_time_s), avg(optimizer_time_s) "
            "FROM sample_rows WHERE key >= ?1 AND key <= ?2 "
            "GROUP BY (key - ?1) / ?3 ORDER BY 1"));
    select->Bind(1, first);
    select->Bind(2, last);
    select->Bind(3, width);
    while (true) {
      ASSIGN_OR_RETURN(bool row, select->Step());
      if (!row) break;
      SampleBucket b;
      b.rank = series_rank;
      b.first_iteration = static_cast<int>((select->Int(0) & 4294967295) - 2147483648);
      b.last_iteration = static_cast<int>((select->Int(1) & 4294967295) - 2147483648);
      b.samples = select->Int(2);
      b.mean_step_time_s = select->Double(3);
      b.mean_data_time_s = select->Double(4);
      b.images = select->Int(5);
      b.step_time_sum_s = select->Double(6);
      if (!select->IsNull(7)) b.mean_loss = select->Double(7);
      b.nonfinite_losses = select->Int(8);
      b.elapsed_s = select->Double(9);
      b.warmup = select->Int(10) != 0;
      b.received_unix_ns = select->Int(11);
      b.mean_compute_time_s = OptionalDouble(*select, 12);
      b.mean_forward_backward_time_s = OptionalDouble(*select, 13);
      b.mean_allreduce_wait_time_s = OptionalDouble(*select, 14);
      b.mean_optimizer_time_s = OptionalDouble(*select, 15);
      buckets.push_back(b);
    }
  }
  return buckets;
}

}  // namespace bench
