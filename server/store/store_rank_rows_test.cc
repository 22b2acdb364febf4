// Store::UpdateRanks: a rank report's write. A sequence of rank reports applied to two
// real SQLite files, one rewritten whole by UpdateJob after each report and one written
// by UpdateRanks for the reported ranks only, leaves every table's rows the same after
// every step (jobs.updated_ms aside, the time of the write, and meta, the file's own
// id); and UpdateRanks writes only
// the ranks it is given.
#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "server/store/store.h"
#include "server/store/store_test_fixture.h"

namespace bench {
namespace {

constexpr int kAgents = 4;
constexpr int kRanksPerAgent = 8;
constexpr int kRanks = kAgents * kRanksPerAgent;

// Every table's rows as text, sorted, by table name (jobs.updated_ms and meta, which
// holds each file's own database id, left out).
std::map<std::string, std::vector<std::string>> TablesOf(const std::string& path) {
  std::map<std::string, std::vector<std::string>> tables;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::vector<std::string> names;
  sqlite3_stmt* list = nullptr;
  sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type='table'", -1, &list, nullptr);
  while (sqlite3_step(list) == SQLITE_ROW) {
    names.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(list, 0)));
  }
  sqlite3_finalize(list);
  for (const std::string& name : names) {
    if (name == "meta") continue;
    sqlite3_stmt* rows = nullptr;
    std::string sql = absl::StrCat("SELECT * FROM \"", name, "\"");
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &rows, nullptr), SQLITE_OK) << name;
    std::vector<std::string>& out = tables[name];
    while (sqlite3_step(rows) == SQLITE_ROW) {
      std::string row;
      for (int c = 0; c < sqlite3_column_count(rows); ++c) {
        if (name == "jobs" && std::string(sqlite3_column_name(rows, c)) == "updated_ms") continue;
        const unsigned char* text = sqlite3_column_text(rows, c);
        absl::StrAppend(&row, sqlite3_column_name(rows, c), "=",
                        text == nullptr ? "NULL" : reinterpret_cast<const char*>(text), "|");
      }
      out.push_back(row);
    }
    sqlite3_finalize(rows);
    std::sort(out.begin(), out.end());
  }
  sqlite3_close(db);
  return tables;
}

// Runs `sql` on the file beside the store's connections.
void Execute(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error != nullptr ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

class StoreRankRowsTest : public StoreTest {
 protected:
  // A kRanks-rank CUDA job placed on kAgents agents (attempt `attempt`), as StartJob
  // leaves it: placements, rank devices, agent versions, nothing reported yet.
  static void Place(Job& job, int attempt) {
    job.attempt = attempt;
    job.state = JobState::kRunning;
    job.reason = "placed";
    job.device_kind = DeviceKind::kCuda;
    job.history.push_back({JobState::kRunning, "placed", absl::FromUnixMillis(1700000001000)});
    job.placements.clear();
    job.rank_devices.clear();
    job.agent_versions.clear();
    job.rank_versions.clear();
    job.rank_precisions.clear();
    job.summaries.clear();
    for (int a = 0; a < kAgents; ++a) {
      std::string agent = absl::StrCat("node-", a, "-", attempt);
      Placement placement{agent, {}, {}};
      for (int d = 0; d < kRanksPerAgent; ++d) {
        int rank = a * kRanksPerAgent + d;
        placement.ranks.push_back(rank);
        placement.device_indices.push_back(d);
        job.rank_devices.push_back(
            {rank, agent, agent + ".example", d, absl::StrCat("GPU-", attempt, "-", rank), "H100"});
      }
      job.placements.push_back(placement);
      job.agent_versions[agent] = {{"driver", "550.54"}, {"cuda_driver", "12.4"}};
    }
  }

  // Both files: `full` rewritten whole, `ranks` by UpdateRanks(reported).
  void Apply(const Job& job, const std::set<int>& reported) {
    ASSERT_TRUE(full_->UpdateJob(job).ok());
    ASSERT_TRUE(ranks_->UpdateRanks(job, reported).ok());
  }
  void ExpectSameTables(const std::string& step) {
    auto full = TablesOf(full_path_);
    auto ranks = TablesOf(path_);
    ASSERT_EQ(full.size(), ranks.size()) << step;
    for (const auto& [name, rows] : full) {
      EXPECT_EQ(rows, ranks[name]) << step << ": table " << name;
    }
  }

  std::string full_path_;
  std::unique_ptr<Store> full_;
  std::unique_ptr<Store> ranks_;
};

TEST_F(StoreRankRowsTest, UpdateRanksLeavesTheRowsUpdateJobWould) {
  full_path_ = dir_ + "/full.db";
  full_ = std::move(Store::Open(full_path_)).value();
  ranks_ = std::move(Store::Open(path_)).value();
  Job job = MakeJob(1);
  job.spec.devices = kRanks;
  ASSERT_TRUE(full_->InsertJob(job).ok());
  ASSERT_TRUE(ranks_->InsertJob(job).ok());
  for (int attempt = 1; attempt <= 2; ++attempt) {
    // Placement (a Transition): both files rewritten whole, as the JobManager does.
    Place(job, attempt);
    ASSERT_TRUE(full_->UpdateJob(job).ok());
    ASSERT_TRUE(ranks_->UpdateJob(job).ok());
    ExpectSameTables(absl::StrCat("attempt ", attempt, " placed"));
    // STARTED, one agent's ranks at a time: versions, precision, parameters, simulated.
    for (int a = 0; a < kAgents; ++a) {
      std::set<int> reported;
      for (int d = 0; d < kRanksPerAgent; ++d) {
        int rank = a * kRanksPerAgent + d;
        job.rank_versions[rank] = {{"torch", "2.3.0"}, {"bench_train", "1.4"}};
        if (rank % 3 != 0) job.rank_precisions[rank] = rank % 2 == 0 ? "tf32" : "fp32";
        reported.insert(rank);
      }
      job.parameters = 25557032;
      if (a == 2) job.simulated = true;
      Apply(job, reported);
      ExpectSameTables(absl::StrCat("attempt ", attempt, " agent ", a, " started"));
    }
    // A rank reports again with fewer versions and another precision.
    job.rank_versions[5] = {{"torch", "2.3.1"}};
    job.rank_precisions[5] = "amp_bf16";
    Apply(job, {5});
    ExpectSameTables(absl::StrCat("attempt ", attempt, " rank 5 again"));
    // SUCCEEDED, one rank at a time; the last one's report ends the job (a Transition).
    for (int rank = 0; rank < kRanks; ++rank) {
      job.summaries[rank] = RankSummary{rank, 4, 32 + rank, 1.5, 0.3};
      if (rank + 1 < kRanks || attempt == 1) {
        Apply(job, {rank});
      } else {
        job.state = JobState::kSucceeded;
        job.history.push_back({JobState::kSucceeded, "done", absl::FromUnixMillis(1700000002000)});
        ASSERT_TRUE(full_->UpdateJob(job).ok());
        ASSERT_TRUE(ranks_->UpdateJob(job).ok());
      }
      if (rank % 7 == 0 || rank + 1 == kRanks) {
        ExpectSameTables(absl::StrCat("attempt ", attempt, " rank ", rank, " succeeded"));
      }
    }
  }
  // And what LoadJobs reads back is the same job.
  auto from_full = full_->LoadJobs();
  auto from_ranks = ranks_->LoadJobs();
  ASSERT_TRUE(from_full.ok() && from_ranks.ok());
  ASSERT_EQ(from_ranks->size(), 1u);
  EXPECT_EQ(from_ranks->front().summaries.size(), static_cast<size_t>(kRanks));
  EXPECT_EQ(from_ranks->front().rank_versions, from_full->front().rank_versions);
  EXPECT_EQ(from_ranks->front().rank_precisions, from_full->front().rank_precisions);
}

TEST_F(StoreRankRowsTest, UpdateRanksWritesOnlyTheRanksItIsGiven) {
  ranks_ = std::move(Store::Open(path_)).value();
  Job job = MakeJob(1);
  job.spec.devices = kRanks;
  ASSERT_TRUE(ranks_->InsertJob(job).ok());
  Place(job, 1);
  for (int rank = 0; rank < kRanks; ++rank) job.rank_versions[rank] = {{"torch", "2.3.0"}};
  ASSERT_TRUE(ranks_->UpdateJob(job).ok());
  // Another connection removes two ranks' rows; a write of rank 3 puts back rank 3's only.
  Execute(path_,
          "DELETE FROM job_versions WHERE rank IN (3, 9); "
          "DELETE FROM job_ranks WHERE rank IN (3, 9)");
  job.summaries[3] = RankSummary{3, 4, 32, 1.5, 0.3};
  job.reason = "rank 3 done";
  ASSERT_TRUE(ranks_->UpdateRanks(job, {3}).ok());
  auto tables = TablesOf(path_);
  auto count = [&](const std::string& table, const std::string& needle) {
    return std::count_if(tables[table].begin(), tables[table].end(), [&](const std::string& row) {
      return row.find(needle) != std::string::npos;
    });
  };
  EXPECT_EQ(count("job_versions", "|rank=3|"), 1);
  EXPECT_EQ(count("job_versions", "|rank=9|"), 0);
  EXPECT_EQ(count("job_ranks", "|rank=3|"), 1);
  EXPECT_EQ(count("job_ranks", "|rank=9|"), 0);
  EXPECT_EQ(count("rank_summaries", "|rank=3|"), 1);
  EXPECT_EQ(count("jobs", "reason=rank 3 done|"), 1);
  // UpdateJob, the whole job, puts rank 9's back.
  ASSERT_TRUE(ranks_->UpdateJob(job).ok());
  tables = TablesOf(path_);
  EXPECT_EQ(count("job_versions", "|rank=9|"), 1);
  EXPECT_EQ(count("job_ranks", "|rank=9|"), 1);
}

}  // namespace
}  // namespace bench
