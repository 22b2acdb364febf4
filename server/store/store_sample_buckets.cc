// Store operation for charts (the web API's /samples?points=N): an attempt's stored
// iterations cut per rank into buckets of equal width in iterations, each summarised.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "common/status_macros.h"
#include "server/store/sqlite_db.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace bench {

namespace {

// One bucket of ReadSampleBuckets being summed, in iteration order.
struct BucketSums {
  Store::SampleBucket bucket;
  double step_time_sum = 0;
  double data_time_sum = 0;
  double finite_loss_sum = 0;
  int64_t finite_losses = 0;
  // The step split's sums and counts (compute, forward+backward, all-reduce wait,
  // optimizer) over the iterations that have it.
  double split_sum[4] = {0, 0, 0, 0};
  int64_t split_count[4] = {0, 0, 0, 0};
};

std::optional<double> MeanOf(double sum, int64_t count) {
  if (count == 0) return std::nullopt;
  return sum / static_cast<double>(count);
}

}  // namespace

absl::StatusOr<std::vector<Store::SampleBucket>> Store::ReadSampleBuckets(
    const std::string& job_id, int attempt, int from_iteration, std::optional<int> rank,
    int max_points) {
  if (max_points < 1) return absl::InvalidArgumentError("points must be >= 1");
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(std::optional<int64_t> series,
                   AttemptSeriesId(*reader_db_, job_id, attempt, /*make=*/false));
  if (!series) return std::vector<SampleBucket>{};
  // Two passes over the attempt's rows, each in the key's order: each rank's first and
  // last stored iteration (its bucket width), then every row summed into its bucket.
  ASSIGN_OR_RETURN(Statement * edges,
                   reader_db_->Prepare("SELECT rank, min(iteration), max(iteration) "
                                       "FROM iteration_rows WHERE series = ?1 AND iteration >= ?2 "
                                       "AND (?3 < 0 OR rank = ?3) GROUP BY rank"));
  edges->Bind(1, *series);
  edges->Bind(2, int64_t{from_iteration});
  edges->Bind(3, int64_t{rank ? *rank : -1});
  struct Span {
    int64_t first = 0;
    int64_t width = 1;  // ceil((last - first + 1) / max_points)
    std::map<int64_t, BucketSums> buckets;  // by (iteration - first) / width
  };
  std::map<int, Span> spans;
  while (true) {
    ASSIGN_OR_RETURN(bool row, edges->Step());
    if (!row) break;
    Span& span = spans[static_cast<int>(edges->Int(0))];
    span.first = edges->Int(1);
    span.width = (edges->Int(2) - span.first + max_points) / max_points;
  }
  edges->Reset();
  if (spans.empty()) return std::vector<SampleBucket>{};
  ASSIGN_OR_RETURN(Statement * select,
                   reader_db_->Prepare(
                       "SELECT rank, iteration, step_time_s, data_time_s, images, loss, "
                       "elapsed_s, warmup, received_unix_ns, compute_time_s, "
                       "forward_backward_time_s, allreduce_wait_time_s, optimizer_time_s "
                       "FROM iteration_rows WHERE series = ?1 AND iteration >= ?2 "
                       "AND (?3 < 0 OR rank = ?3)"));
  select->Bind(1, *series);
  select->Bind(2, int64_t{from_iteration});
  select->Bind(3, int64_t{rank ? *rank : -1});
  while (true) {
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    const int row_rank = static_cast<int>(select->Int(0));
    auto span = spans.find(row_rank);
    if (span == spans.end()) continue;  // stored after the first pass
    const int64_t iteration = select->Int(1);
    auto [at, added] =
        span->second.buckets.try_emplace((iteration - span->second.first) / span->second.width);
    BucketSums& sums = at->second;
    SampleBucket& b = sums.bucket;
    if (added) {
      b.rank = row_rank;
      b.first_iteration = static_cast<int>(iteration);
      b.elapsed_s = select->Double(6);
    }
    b.last_iteration = static_cast<int>(iteration);
    ++b.samples;
    sums.step_time_sum += select->Double(2);
    sums.data_time_sum += select->Double(3);
    b.images += select->Int(4);
    if (!select->IsNull(5) && std::isfinite(select->Double(5))) {
      sums.finite_loss_sum += select->Double(5);
      ++sums.finite_losses;
    } else {
      ++b.nonfinite_losses;  // NULL is a NaN loss
    }
    b.elapsed_s = std::max(b.elapsed_s, select->Double(6));
    b.warmup = b.warmup || select->Int(7) != 0;
    b.received_unix_ns = std::max(b.received_unix_ns, select->Int(8));
    for (int part = 0; part < 4; ++part) {
      if (select->IsNull(9 + part)) continue;
      sums.split_sum[part] += select->Double(9 + part);
      ++sums.split_count[part];
    }
  }
  select->Reset();
  std::vector<SampleBucket> buckets;
  for (auto& [span_rank, span] : spans) {
    for (auto& [index, sums] : span.buckets) {
      SampleBucket& b = sums.bucket;
      b.mean_step_time_s = sums.step_time_sum / static_cast<double>(b.samples);
      b.mean_data_time_s = sums.data_time_sum / static_cast<double>(b.samples);
      b.step_time_sum_s = sums.step_time_sum;
      b.mean_loss = MeanOf(sums.finite_loss_sum, sums.finite_losses);
      b.mean_compute_time_s = MeanOf(sums.split_sum[0], sums.split_count[0]);
      b.mean_forward_backward_time_s = MeanOf(sums.split_sum[1], sums.split_count[1]);
      b.mean_allreduce_wait_time_s = MeanOf(sums.split_sum[2], sums.split_count[2]);
      b.mean_optimizer_time_s = MeanOf(sums.split_sum[3], sums.split_count[3]);
      buckets.push_back(b);
    }
  }
  return buckets;
}

}  // namespace bench
