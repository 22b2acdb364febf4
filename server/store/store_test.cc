// Store as a whole: opening (the database id, a corrupt file, a newer schema, a missing
// directory), the writer thread (concurrent appends, background WAL checkpoints) and
// the health check.
// The table families and the migrations have their own store_*_test.cc.
#include "server/store/store.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "server/store/store_test_fixture.h"

namespace bench {
namespace {

TEST_F(StoreTest, TheDatabaseIdIsKeptAcrossReopensAndNewForANewDatabase) {
  std::string id;
  {
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    id = (*store)->database_id();
    EXPECT_EQ(id.size(), 32u);
  }
  auto again = Store::Open(path_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->database_id(), id);
  auto other = Store::Open(dir_ + "/other.db");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE((*other)->database_id(), id);
}

TEST_F(StoreTest, ManyConcurrentAppendsAllCommit) {
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok());
  std::atomic<int> stored{0}, done{0};
  for (int batch = 0; batch < 200; ++batch) {
    std::vector<IterationSample> samples;
    for (int i = 0; i < 50; ++i) samples.push_back(Sample("job-x", batch, i + 1));
    (*store)->AppendSamples(std::move(samples), [&](absl::StatusOr<AppendResult> r) {
      if (r.ok()) stored += r->stored;
      ++done;
    });
  }
  while (done < 200) usleep(1000);
  EXPECT_EQ(stored, 10000);
  EXPECT_EQ(*(*store)->CountSamples("job-x", 1), 10000);
}

TEST_F(StoreTest, TheHealthCheckNeedsTheReaderAndAnAnsweringWriter) {
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE((*store)->Check(absl::Seconds(2)).ok());

  // A completion that takes 1.5 s holds the writer thread: the check must not wait it out.
  std::atomic<bool> released{false};
  (*store)->AppendSamples({Sample("job-x", 1, 1)}, [&](absl::StatusOr<AppendResult>) {
    usleep(1'500'000);
    released = true;
  });
  absl::Status stuck = (*store)->Check(absl::Milliseconds(100));
  EXPECT_EQ(stuck.code(), absl::StatusCode::kUnavailable) << stuck;
  EXPECT_NE(stuck.message().find("writer did not answer within 100ms"), std::string::npos) << stuck;
  while (!released) usleep(10'000);
  EXPECT_TRUE((*store)->Check(absl::Seconds(2)).ok());
}

TEST_F(StoreTest, TheWalIsCheckpointedInTheBackgroundAndStaysBounded) {
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok());
  // Each commit rewrites one leaf page per rank, so the WAL passes kCheckpointFrames
  // several times over; without checkpoints it would grow to well over 100 MiB.
  constexpr int kCommits = 1500;
  constexpr int kRanks = 64;
  uintmax_t max_wal = 0;
  for (int i = 1; i <= kCommits; ++i) {
    std::vector<IterationSample> samples;
    for (int rank = 0; rank < kRanks; ++rank) samples.push_back(Sample("job-w", rank, i));
    auto result = (*store)->AppendSamplesSync(std::move(samples));
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->stored, kRanks);
    std::error_code error;
    max_wal = std::max(max_wal, std::filesystem::file_size(path_ + "-wal", error));
  }
  EXPECT_LT(max_wal, uintmax_t{3} * Store::kCheckpointFrames * 4096);
  EXPECT_EQ(*(*store)->CountSamples("job-w", 1), kCommits * kRanks);
  store->reset();
  auto reopened = Store::Open(path_);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(*(*reopened)->CountSamples("job-w", 1), kCommits * kRanks);
}

TEST_F(StoreTest, ACorruptFileIsAClearErrorAndIsLeftAsItWas) {
  {
    std::ofstream out(path_);
    out << std::string(8192, 'x');
  }
  auto store = Store::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_NE(store.status().message().find(path_), std::string::npos);
  EXPECT_EQ(std::filesystem::file_size(path_), 8192u);
}

TEST_F(StoreTest, ANewerSchemaIsRefused) {
  { ASSERT_TRUE(Store::Open(path_).ok()); }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "INSERT INTO schema_version VALUES (99)", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = Store::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("99"), std::string::npos);
}

TEST_F(StoreTest, AMissingDirectoryIsUnavailable) {
  auto store = Store::Open(dir_ + "/no/such/dir/bench.db");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable) << store.status();
}

}  // namespace
}  // namespace bench
