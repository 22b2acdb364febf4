// Store's samples: iteration and GPU samples are stored exactly once and counted (new,
// duplicate, non-finite, per rank), read back as they were, and only a repeated
// identity is a duplicate.
#include "server/store/store.h"

#include <sqlite3.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/store/store_test_fixture.h"

namespace bench {
namespace {

// Counts the files SQLite opens as sub-journals (the pages a savepoint or a statement
// may have to roll back), through a VFS made the default that wraps the default one.
class SubJournalFiles {
 public:
  SubJournalFiles() : real_(sqlite3_vfs_find(nullptr)), shim_(*real_) {
    shim_.zName = "bench-count-subjournals";
    shim_.pAppData = this;
    shim_.xOpen = &Open;
    sqlite3_vfs_register(&shim_, /*makeDflt=*/1);
  }
  ~SubJournalFiles() {
    sqlite3_vfs_unregister(&shim_);
    sqlite3_vfs_register(real_, /*makeDflt=*/1);
  }
  int opened() const { return opened_; }

 private:
  static int Open(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags,
                  int* out_flags) {
    auto* self = static_cast<SubJournalFiles*>(vfs->pAppData);
    if ((flags & SQLITE_OPEN_SUBJOURNAL) != 0) ++self->opened_;
    return self->real_->xOpen(self->real_, name, file, flags, out_flags);
  }
  sqlite3_vfs* real_;
  sqlite3_vfs shim_;
  int opened_ = 0;
};

// One upload touches the stored tail pages of many running jobs: the copies SQLite keeps
// to roll that operation back alone stay in memory, never a temporary file written page
// by page (docs/PERFORMANCE.md, "The writer's sub-journal").
TEST_F(StoreTest, AWriteOverManyStoredPagesKeepsItsRollbackCopiesInMemory) {
  SubJournalFiles sub_journals;
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  constexpr int kJobs = 64;
  std::vector<IterationSample> first;
  for (int job = 1; job <= kJobs; ++job) {
    ASSERT_TRUE((*store)->InsertJob(MakeJob(job)).ok());
    for (int it = 1; it <= 40; ++it) first.push_back(Sample("job-" + std::to_string(job), 0, it));
  }
  ASSERT_TRUE((*store)->AppendSamplesSync(first).ok());
  std::vector<IterationSample> next;
  for (int job = 1; job <= kJobs; ++job) next.push_back(Sample("job-" + std::to_string(job), 0, 41));
  absl::StatusOr<AppendResult> appended = (*store)->AppendSamplesSync(next);
  ASSERT_TRUE(appended.ok()) << appended.status();
  EXPECT_EQ(appended->stored, kJobs);
  EXPECT_EQ(sub_journals.opened(), 0);
  EXPECT_EQ(*(*store)->CountSamples("job-64", 1), 41);
}

TEST_F(StoreTest, SamplesAreStoredExactlyOnce) {
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->InsertJob(MakeJob(1)).ok());
  std::vector<IterationSample> batch;
  for (int rank = 0; rank < 2; ++rank) {
    for (int it = 1; it <= 5; ++it) batch.push_back(Sample("job-1", rank, it));
  }
  auto first = (*store)->AppendSamplesSync(batch);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->stored, 10);
  EXPECT_EQ(first->duplicates, 0);
  // A redelivered batch (at-least-once) changes nothing.
  auto again = (*store)->AppendSamplesSync(batch);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->stored, 0);
  EXPECT_EQ(again->duplicates, 10);
  EXPECT_EQ(*(*store)->CountSamples("job-1", 1), 10);
  auto by_rank = (*store)->IterationsByRank("job-1", 1);
  ASSERT_TRUE(by_rank.ok());
  EXPECT_EQ(by_rank->at(0), 5);
  EXPECT_EQ(by_rank->at(1), 5);
  auto samples = (*store)->ReadSamples("job-1", 1);
  ASSERT_TRUE(samples.ok());
  EXPECT_DOUBLE_EQ(samples->at(2).step_time_s, 0.3);
}

// Batches large enough for the multi-row inserts, interleaved by rank as agents send
// them, with repeats inside a batch and across batches: each identity is stored once,
// the first copy wins, and the counts add up per rank.
TEST_F(StoreTest, LargeInterleavedBatchesCountStoredAndDuplicatesPerRank) {
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->InsertJob(MakeJob(1)).ok());
  ASSERT_TRUE((*store)->InsertJob(MakeJob(2)).ok());
  std::vector<IterationSample> batch;
  for (int it = 1; it <= 150; ++it) {
    for (int rank = 0; rank < 3; ++rank) batch.push_back(Sample("job-1", rank, it));
    batch.push_back(Sample("job-2", 0, it));
  }
  IterationSample repeat = Sample("job-1", 1, 7);
  repeat.step_time_s = 99;  // a later copy of a stored identity: not stored
  batch.push_back(repeat);
  auto first = (*store)->AppendSamplesSync(batch);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->stored, 600);
  EXPECT_EQ(first->duplicates, 1);
  EXPECT_EQ((first->stored_by_rank.at({"job-1", 1, 1})), 150);
  EXPECT_EQ((first->stored_by_rank.at({"job-2", 1, 0})), 150);

  std::vector<IterationSample> second;
  for (int it = 140; it <= 160; ++it) second.push_back(Sample("job-1", 2, it));
  auto again = (*store)->AppendSamplesSync(second);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->stored, 10);
  EXPECT_EQ(again->duplicates, 11);
  EXPECT_EQ(again->stored_by_rank.size(), 1u);
  EXPECT_EQ(*(*store)->CountSamples("job-1", 1), 460);
  auto samples = (*store)->ReadSamples("job-1", 1);
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 460u);
  EXPECT_EQ(samples->at(150 + 6).rank, 1);
  EXPECT_EQ(samples->at(150 + 6).iteration, 7);
  EXPECT_DOUBLE_EQ(samples->at(150 + 6).step_time_s, 0.7);
}

TEST_F(StoreTest, ReadSamplesFromAnIteration) {
  auto store = std::move(Store::Open(path_)).value();
  ASSERT_TRUE(store->InsertJob(MakeJob(1)).ok());
  std::vector<IterationSample> batch;
  for (int rank = 0; rank < 2; ++rank) {
    for (int it = 1; it <= 4; ++it) batch.push_back(Sample("job-1", rank, it));
  }
  ASSERT_TRUE(store->AppendSamplesSync(batch).ok());
  auto from3 = store->ReadSamples("job-1", 1, 3);
  ASSERT_TRUE(from3.ok());
  ASSERT_EQ(from3->size(), 4u);
  EXPECT_EQ((*from3)[0].rank, 0);
  EXPECT_EQ((*from3)[0].iteration, 3);
  EXPECT_EQ((*from3)[3].rank, 1);
  EXPECT_EQ((*from3)[3].iteration, 4);
}

// The step split (issue 26) round-trips per (rank, iteration) through each insert size (64,
// 8 and 1 rows): a figure the trainer wrote comes back as itself, 0 included, and one it
// did not write comes back unset (NULL), never 0; chart buckets average only the iterations
// that have it.
TEST_F(StoreTest, StepSplitTimesRoundTripWithNoDataKeptUnset) {
  auto store = std::move(Store::Open(path_)).value();
  ASSERT_TRUE(store->InsertJob(MakeJob(1)).ok());
  std::vector<IterationSample> batch;
  for (int it = 1; it <= 73; ++it) {  // 64 + 8 + 1 rows
    IterationSample s = Sample("job-1", 0, it);
    if (it % 2 == 1) {  // odd iterations have the split, even ones none
      s.compute_time_s = 0.01 * it;
      s.forward_backward_time_s = 0.005 * it;
      s.allreduce_wait_time_s = it == 1 ? 0.0 : 0.001 * it;
      s.optimizer_time_s = 0.002 * it;
    }
    if (it == 72) s.compute_time_s = 0.5;  // one field alone
    batch.push_back(s);
  }
  ASSERT_TRUE(store->AppendSamplesSync(batch).ok());
  auto samples = store->ReadSamples("job-1", 1);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 73u);
  for (const IterationSample& s : *samples) {
    SCOPED_TRACE(s.iteration);
    const IterationSample& sent = batch[s.iteration - 1];
    EXPECT_EQ(s.compute_time_s, sent.compute_time_s);
    EXPECT_EQ(s.forward_backward_time_s, sent.forward_backward_time_s);
    EXPECT_EQ(s.allreduce_wait_time_s, sent.allreduce_wait_time_s);
    EXPECT_EQ(s.optimizer_time_s, sent.optimizer_time_s);
  }
  ASSERT_TRUE((*samples)[0].allreduce_wait_time_s.has_value());
  EXPECT_EQ(*(*samples)[0].allreduce_wait_time_s, 0.0);
  EXPECT_FALSE((*samples)[1].compute_time_s.has_value());
  EXPECT_EQ((*samples)[71].compute_time_s, 0.5);
  EXPECT_FALSE((*samples)[71].optimizer_time_s.has_value());

  auto page = store->ReadSamplesPage("job-1", 1, 3, std::nullopt, std::nullopt, 2);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].optimizer_time_s, 0.002 * 3);
  EXPECT_FALSE((*page)[1].optimizer_time_s.has_value());

  // Buckets of 2 iterations: (1, 2) averages iteration 1's figures alone.
  auto buckets = store->ReadSampleBuckets("job-1", 1, 0, std::nullopt, 37);
  ASSERT_TRUE(buckets.ok()) << buckets.status();
  ASSERT_EQ(buckets->size(), 37u);
  EXPECT_EQ((*buckets)[0].mean_compute_time_s, 0.01);
  EXPECT_EQ((*buckets)[0].mean_allreduce_wait_time_s, 0.0);
  EXPECT_EQ((*buckets)[0].mean_optimizer_time_s, 0.002);
  EXPECT_EQ((*buckets)[0].mean_forward_backward_time_s, 0.005);
  auto only_even = store->ReadSampleBuckets("job-1", 1, 0, std::nullopt, 73);
  ASSERT_TRUE(only_even.ok()) << only_even.status();
  ASSERT_EQ(only_even->size(), 73u);
  EXPECT_FALSE((*only_even)[1].mean_compute_time_s.has_value());
  EXPECT_FALSE((*only_even)[1].mean_optimizer_time_s.has_value());
}

// Reads leave no read transaction open: rows appended after a read (a running job's) are
// seen by the next one, by buckets and pages alike.
TEST_F(StoreTest, ReadsAfterAppendsSeeTheNewRows) {
  auto store = std::move(Store::Open(path_)).value();
  ASSERT_TRUE(store->InsertJob(MakeJob(1)).ok());
  for (int round = 1; round <= 3; ++round) {
    std::vector<IterationSample> batch;
    for (int it = 4 * round - 3; it <= 4 * round; ++it) batch.push_back(Sample("job-1", 0, it));
    ASSERT_TRUE(store->AppendSamplesSync(batch).ok());
    auto buckets = store->ReadSampleBuckets("job-1", 1, 0, std::nullopt, 100);
    ASSERT_TRUE(buckets.ok()) << buckets.status();
    ASSERT_FALSE(buckets->empty());
    EXPECT_EQ(buckets->back().last_iteration, 4 * round);
    auto page = store->ReadSamplesPage("job-1", 1, 0, std::nullopt, std::nullopt, 1000);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_EQ(page->size(), static_cast<size_t>(4 * round));
  }
}

// A diverged run's iterations are data: a NaN, +Inf or -Inf loss is stored (it used to
// break `loss REAL NOT NULL` and be dropped as a "duplicate"), read back as itself, and
// counted per rank; a redelivery of them is a duplicate like any other.
TEST_F(StoreTest, NonFiniteLossesAreStoredReadBackAndCounted) {
  auto store = std::move(Store::Open(path_)).value();
  ASSERT_TRUE(store->InsertJob(MakeJob(1)).ok());
  const double kNaN = std::numeric_limits<double>::quiet_NaN();
  const double kInf = std::numeric_limits<double>::infinity();
  // Rank 0: enough samples for the 64- and 8-row inserts, with non-finite runs inside;
  // rank 1: one NaN.
  std::vector<IterationSample> batch;
  for (int it = 1; it <= 80; ++it) {
    IterationSample s = Sample("job-1", 0, it);
    if (it == 3) s.loss = kNaN;
    if (it == 4) s.loss = kInf;
    if (it == 5) s.loss = -kInf;
    if (it >= 70) s.loss = kNaN;  // diverged for good
    batch.push_back(s);
  }
  IterationSample other = Sample("job-1", 1, 1);
  other.loss = kNaN;
  batch.push_back(other);
  auto first = store->AppendSamplesSync(batch);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->stored, 81);
  EXPECT_EQ(first->duplicates, 0);
  EXPECT_EQ(first->nonfinite_losses, 3 + 11 + 1);
  EXPECT_EQ(first->nonfinite_by_rank,
            (std::map<std::tuple<std::string, int, int>, int>{{{"job-1", 1, 0}, 14},
                                                              {{"job-1", 1, 1}, 1}}));
  auto again = store->AppendSamplesSync(batch);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->stored, 0);
  EXPECT_EQ(again->duplicates, 81);
  EXPECT_EQ(again->nonfinite_losses, 0);

  EXPECT_EQ(*store->CountSamples("job-1", 1), 81);
  EXPECT_EQ(*store->NonFiniteLossesByRank("job-1", 1),
            (std::map<int, int64_t>{{0, 14}, {1, 1}}));
  auto samples = store->ReadSamples("job-1", 1);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 81u);
  EXPECT_EQ((*samples)[1].loss, 6.9);
  EXPECT_TRUE(std::isnan((*samples)[2].loss));
  EXPECT_EQ((*samples)[3].loss, kInf);
  EXPECT_EQ((*samples)[4].loss, -kInf);
  EXPECT_EQ((*samples)[5].loss, 6.9);
  EXPECT_TRUE(std::isnan((*samples)[79].loss));
  EXPECT_EQ((*samples)[79].step_time_s, 0.1 * 80);  // the rest of the row is intact
  EXPECT_TRUE(std::isnan((*samples)[80].loss));
  EXPECT_EQ((*samples)[80].rank, 1);
}

// Only a repeated identity is a duplicate: a sample that breaks another constraint (a
// NaN time in a NOT NULL column) fails the write instead of vanishing as a duplicate.
TEST_F(StoreTest, AConstraintOtherThanTheIdentityIsAnErrorNotADuplicate) {
  auto store = std::move(Store::Open(path_)).value();
  IterationSample bad = Sample("job-1", 0, 1);
  bad.step_time_s = std::numeric_limits<double>::quiet_NaN();
  auto result = store->AppendSamplesSync({bad});
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(*store->CountSamples("job-1", 1), 0);
}

TEST_F(StoreTest, GpuSamplesAreStoredExactlyOnceWithUnsetReadingsKeptUnset) {
  auto store = std::move(Store::Open(path_)).value();
  ASSERT_TRUE(store->InsertJob(MakeJob(1)).ok());
  GpuSample full;
  full.job_id = "job-1";
  full.attempt = 1;
  full.rank = 0;
  full.seq = 1;
  full.gpu_uuid = "GPU-x";
  full.time_unix_ns = 1'700'000'000'000'000'000;
  full.power_w = 301.5;
  full.energy_j = 1e6;
  full.throttle_reasons = uint64_t{1} << 63;  // the top bit survives SQLite's signed integer
  full.memory_used_bytes = int64_t{80} << 30;
  GpuSample sparse = full;
  sparse.seq = 2;
  sparse.power_w.reset();
  sparse.throttle_reasons.reset();
  auto first = store->AppendSamplesSync({}, {full, sparse});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->gpu_stored, 2);
  auto again = store->AppendSamplesSync({}, {full});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->gpu_stored, 0);
  EXPECT_EQ(again->gpu_duplicates, 1);

  auto read = store->ReadGpuSamples("job-1", 1);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->size(), 2u);
  EXPECT_DOUBLE_EQ(*(*read)[0].power_w, 301.5);
  EXPECT_EQ(*(*read)[0].throttle_reasons, uint64_t{1} << 63);
  EXPECT_EQ(*(*read)[0].memory_used_bytes, int64_t{80} << 30);
  EXPECT_FALSE((*read)[1].power_w.has_value());
  EXPECT_FALSE((*read)[1].throttle_reasons.has_value());
  EXPECT_FALSE((*read)[1].sm_clock_mhz.has_value());
}

TEST_F(StoreTest, GpuSampleLinkClockLimitAndErrorFieldsRoundTrip) {
  auto store = std::move(Store::Open(path_)).value();
  ASSERT_TRUE(store->InsertJob(MakeJob(1)).ok());
  GpuSample full;
  full.job_id = "job-1";
  full.attempt = 1;
  full.seq = 1;
  full.gpu_uuid = "GPU-x";
  full.time_unix_ns = 1'700'000'000'000'000'000;
  full.pcie_gen = 3;
  full.pcie_gen_max = 5;
  full.pcie_width = 8;
  full.pcie_width_max = 16;
  full.max_sm_clock_mhz = 1980;
  full.max_memory_clock_mhz = 2619;
  full.power_limit_w = 700;
  full.ecc_corrected = int64_t{1} << 40;
  full.ecc_uncorrected = 2;
  full.xid_errors = 0;  // zero is a reading, not "no data"
  GpuSample sparse = full;
  sparse.seq = 2;
  sparse.pcie_gen.reset();
  sparse.max_memory_clock_mhz.reset();
  sparse.power_limit_w.reset();
  sparse.ecc_corrected.reset();
  sparse.xid_errors.reset();
  auto stored = store->AppendSamplesSync({}, {full, sparse});
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->gpu_stored, 2);

  auto read = store->ReadGpuSamples("job-1", 1);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 2u);
  const GpuSample& a = (*read)[0];
  EXPECT_EQ(a.pcie_gen, 3);
  EXPECT_EQ(a.pcie_gen_max, 5);
  EXPECT_EQ(a.pcie_width, 8);
  EXPECT_EQ(a.pcie_width_max, 16);
  EXPECT_EQ(a.max_sm_clock_mhz, 1980.0);
  EXPECT_EQ(a.max_memory_clock_mhz, 2619.0);
  EXPECT_EQ(a.power_limit_w, 700.0);
  EXPECT_EQ(a.ecc_corrected, int64_t{1} << 40);
  EXPECT_EQ(a.ecc_uncorrected, 2);
  EXPECT_EQ(a.xid_errors, 0);
  const GpuSample& b = (*read)[1];
  EXPECT_FALSE(b.pcie_gen.has_value());
  EXPECT_EQ(b.pcie_gen_max, 5);
  EXPECT_FALSE(b.max_memory_clock_mhz.has_value());
  EXPECT_FALSE(b.power_limit_w.has_value());
  EXPECT_FALSE(b.ecc_corrected.has_value());
  EXPECT_EQ(b.ecc_uncorrected, 2);
  EXPECT_FALSE(b.xid_errors.has_value());

  // ReadGpuSamplesAfter (the live stream's reader) reads the same columns.
  auto after = store->ReadGpuSamplesAfter("job-1", 1, {0, -1}, 10);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), 2u);
  EXPECT_EQ((*after)[0].pcie_width, 8);
  EXPECT_EQ((*after)[0].ecc_corrected, int64_t{1} << 40);
}

}  // namespace
}  // namespace bench
