// A rank report persists that report's ranks, not the whole job (issue 27, item 5): rows
// of other ranks that another connection removed from the real SQLite file stay removed
// after a report, and come back when the job next changes state (a whole rewrite). A
// report whose write failed makes the job's next write a whole one, so nothing it
// carried stays lost until the job ends; such a failure is logged once per job until
// one of its writes is stored.
#include <sqlite3.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "server/core/job_manager.h"
#include "server/core/job_manager_test_support.h"

namespace bench {
namespace {

constexpr int kRanks = 4;

class JobManagerRankRowsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_manager_rank_rows_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    path_ = dir_ + "/bench.db";
    store_ = std::move(Store::Open(path_)).value();
    manager_ = std::make_unique<JobManager>(store_.get(), JobManagerOptions{});
    RegisterCpuAgent(*manager_, "a", kRanks, &channel_);
    absl::StatusOr<SubmitResult> submitted = SubmitAndWait(*manager_, SmallJobSpec(kRanks));
    ASSERT_TRUE(submitted.ok()) << submitted.status();
    id_ = submitted->job_id;
    ASSERT_EQ(manager_->Get(id_)->job.state, JobState::kRunning);
    Flush();  // the RUNNING write is queued: no test's SQL races it for the file's lock
  }
  void TearDown() override {
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Every write queued before it has been committed (or has failed).
  void Flush() { ASSERT_TRUE(store_->AppendSamplesSync({}).ok()); }
  void Report(RankReport report) {
    ASSERT_TRUE(manager_->ReportStatus("a", id_, 1, 0, {std::move(report)}).ok());
    Flush();
  }
  static RankReport Started(int rank) {
    RankReport report;
    report.rank = rank;
    report.versions = {{"torch", absl::StrCat("2.3.", rank)}};
    return report;
  }
  static RankReport Succeeded(int rank) {
    RankReport report;
    report.rank = rank;
    report.outcome = RankOutcome::kSucceeded;
    report.summary = RankSummary{rank, 4, 0, 1.0, 0.25};  // no images: no samples needed
    return report;
  }
  // Runs `sql` beside the store's connections; for a SELECT, its first column's first row.
  // It waits for the file's write lock if the store's writer holds it.
  std::string Sql(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 60'000);
    std::string first;
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(
                  db, sql.c_str(),
                  [](void* out, int, char** values, char**) {
                    auto* s = static_cast<std::string*>(out);
                    if (s->empty() && values[0] != nullptr) *s = values[0];
                    return 0;
                  },
                  &first, &error),
              SQLITE_OK)
        << sql << ": " << (error != nullptr ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
    return first;
  }
  std::string VersionRows(int rank) {
    return Sql(
        absl::StrCat("SELECT count(*) FROM job_versions WHERE job_id='", id_, "' AND rank=", rank));
  }
  std::string SummaryRows(int rank) {
    return Sql(absl::StrCat("SELECT count(*) FROM rank_summaries WHERE job_id='", id_,
                            "' AND rank=", rank));
  }

  std::string dir_;
  std::string path_;
  FakeChannel channel_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
  std::string id_;
};

TEST_F(JobManagerRankRowsTest, ARankReportWritesItsRanksRowsOnly) {
  for (int rank = 0; rank < kRanks; ++rank) Report(Started(rank));
  for (int rank = 0; rank < kRanks; ++rank) ASSERT_EQ(VersionRows(rank), "1") << rank;
  // Rank 2's rows go missing behind the manager's back; reports of ranks 0, 1 and 3 do
  // not write them again (a whole rewrite would).
  Sql(absl::StrCat("DELETE FROM job_versions WHERE job_id='", id_, "' AND rank=2"));
  Report(Succeeded(0));
  Report(Succeeded(1));
  Report(Succeeded(3));
  EXPECT_EQ(VersionRows(2), "0");
  EXPECT_EQ(SummaryRows(0), "1");
  EXPECT_EQ(SummaryRows(3), "1");
  // The last rank ends the job: SUCCEEDED is a transition, the job is written whole.
  Report(Succeeded(2));
  ASSERT_EQ(manager_->Get(id_)->job.state, JobState::kSucceeded);
  EXPECT_EQ(VersionRows(2), "1");
  EXPECT_EQ(SummaryRows(2), "1");
}

TEST_F(JobManagerRankRowsTest, AfterAFailedWriteTheNextReportWritesTheJobWhole) {
  for (int rank = 0; rank < kRanks; ++rank) Report(Started(rank));
  // Rank 1's summary cannot be stored (as on a full disk): its write fails.
  Sql("CREATE TRIGGER refuse BEFORE INSERT ON rank_summaries "
      "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END");
  // The agent is told to send it again (UNAVAILABLE: its changes are not stored).
  absl::Status refused = manager_->ReportStatus("a", id_, 1, 0, {Succeeded(1)});
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  Flush();
  EXPECT_EQ(SummaryRows(1), "0");
  Sql("DROP TRIGGER refuse");
  // The next report, of another rank, repairs it: the job is written whole.
  Report(Succeeded(0));
  EXPECT_EQ(SummaryRows(1), "1");
  EXPECT_EQ(SummaryRows(0), "1");
  EXPECT_EQ(manager_->Get(id_)->job.state, JobState::kRunning);
}

// A job whose writes keep failing (as every running job's do on a full disk) is logged
// once, not once per write; after one of its writes is stored, a new failure is logged.
TEST_F(JobManagerRankRowsTest, AJobWhoseWritesKeepFailingIsLoggedOnceUntilOneIsStored) {
  const std::string refuse =
      "CREATE TRIGGER refuse BEFORE INSERT ON job_versions "
      "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END";
  const std::string line = absl::StrCat("could not persist job ", id_, ": ");
  auto count = [&line](const std::string& log) {
    int n = 0;
    for (size_t at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) ++n;
    return n;
  };
  Sql(refuse);
  ::testing::internal::CaptureStderr();
  for (int rank = 0; rank < kRanks; ++rank) {
    absl::Status refused = manager_->ReportStatus("a", id_, 1, 0, {Started(rank)});
    EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
    Flush();
  }
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(log), 1) << log;
  EXPECT_NE(log.find("refused by the test"), std::string::npos) << log;
  Sql("DROP TRIGGER refuse");
  Report(Succeeded(0));  // stored: the job written whole
  Sql("CREATE TRIGGER refuse BEFORE INSERT ON rank_summaries "
      "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END");
  ::testing::internal::CaptureStderr();
  absl::Status refused = manager_->ReportStatus("a", id_, 1, 0, {Succeeded(1)});
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  Flush();
  log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(log), 1) << log;
}

}  // namespace
}  // namespace bench
