// Store operations on the variability report's per-job summaries
// (server/results/variability_summary.h): kept in `job_variability`, one row per job and
// attempt, the summary as EncodeJobVariability's bytes; written once per job, read back by
// ReadService::Variability after a restart instead of the job's samples.
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/store/sqlite_db.h"
#include "server/store/store.h"

namespace bench {

absl::StatusOr<std::vector<std::optional<JobVariability>>> Store::ReadJobVariability(
    const std::vector<std::pair<std::string, int>>& attempts) {
  std::vector<std::optional<JobVariability>> out(attempts.size());
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(Statement * select, reader_db_->Prepare("SELECT summary FROM job_variability "
                                                           "WHERE job_id=?1 AND attempt=?2"));
  for (size_t i = 0; i < attempts.size(); ++i) {
    select->Bind(1, attempts[i].first);
    select->Bind(2, int64_t{attempts[i].second});
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (row) {
      absl::StatusOr<JobVariability> summary = DecodeJobVariability(select->Text(0));
      if (!summary.ok()) {
        select->Reset();
        return absl::DataLossError(absl::StrCat("job ", attempts[i].first, " attempt ",
                                                attempts[i].second, ": ",
                                                summary.status().message()));
      }
      out[i] = std::move(*summary);
    }
    select->Reset();
  }
  return out;
}

void Store::WriteJobVariabilityAsync(std::vector<JobVariabilityRow> rows,
                                     std::function<void(absl::Status)> done) {
  auto encoded = std::make_shared<std::vector<std::pair<const JobVariabilityRow*, std::string>>>();
  auto owned = std::make_shared<std::vector<JobVariabilityRow>>(std::move(rows));
  for (const JobVariabilityRow& row : *owned) {
    encoded->emplace_back(&row, EncodeJobVariability(row.summary));
  }
  auto apply = [owned, encoded](Database& db) -> absl::Status {
    ASSIGN_OR_RETURN(Statement * insert,
                     db.Prepare("INSERT OR REPLACE INTO job_variability (job_id, attempt, "
                                "summary) VALUES (?1, ?2, ?3)"));
    for (const auto& [row, bytes] : *encoded) {
      insert->Reset();
      insert->Bind(1, row->job_id);
      insert->Bind(2, int64_t{row->attempt});
      insert->BindBlob(3, bytes);
      RETURN_IF_ERROR(insert->Run());
    }
    return absl::OkStatus();
  };
  // Once stopping the op is dropped: the summaries are made again when next asked for.
  (void)TryEnqueue({std::move(apply), std::move(done)});
}

}  // namespace bench
