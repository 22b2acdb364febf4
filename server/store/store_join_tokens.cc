// Store operations on the `join_tokens` table (server/auth/join_token.h says what a token is):
// the secret only as its hash, the uses counted durably.
#include "common/status_macros.h"
#include "server/store/sqlite_db.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace bench {
namespace {

constexpr char kColumns[] =
    "id, secret_hash, description, uses, used, created_ms, expires_ms, allow_replace, revoked";

JoinTokenRecord ReadRecord(const Statement& row) {
  JoinTokenRecord r;
  r.id = row.Text(0);
  r.secret_hash = row.Text(1);
  r.description = row.Text(2);
  r.uses = static_cast<int>(row.Int(3));
  r.used = static_cast<int>(row.Int(4));
  r.created = FromMs(row.Int(5));
  r.expires = FromMs(row.Int(6));
  r.allow_replace = row.Int(7) != 0;
  r.revoked = row.Int(8) != 0;
  return r;
}

}  // namespace

absl::Status Store::InsertJoinToken(const JoinTokenRecord& record) {
  return Write([record](Database& db) -> absl::Status {
    ASSIGN_OR_RETURN(Statement * exists, db.Prepare("SELECT 1 FROM join_tokens WHERE id = ?1"));
    exists->Bind(1, record.id);
    ASSIGN_OR_RETURN(bool taken, exists->Step());
    exists->Reset();
    if (taken) return absl::AlreadyExistsError("join token id " + record.id + " is taken");
    ASSIGN_OR_RETURN(Statement * insert,
                     db.Prepare(std::string("INSERT INTO join_tokens (") + kColumns +
                                ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"));
    insert->Bind(1, record.id);
    insert->Bind(2, record.secret_hash);
    insert->Bind(3, record.description);
    insert->Bind(4, int64_t{record.uses});
    insert->Bind(5, int64_t{record.used});
    insert->Bind(6, ToMs(record.created));
    insert->Bind(7, ToMs(record.expires));
    insert->Bind(8, int64_t{record.allow_replace ? 1 : 0});
    insert->Bind(9, int64_t{record.revoked ? 1 : 0});
    return insert->Run();
  });
}

absl::StatusOr<std::vector<JoinTokenRecord>> Store::LoadJoinTokens() {
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(Statement * select,
                   reader_db_->Prepare(std::string("SELECT ") + kColumns +
                                       " FROM join_tokens ORDER BY created_ms, id"));
  std::vector<JoinTokenRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, select->Step());
    if (!row) break;
    out.push_back(ReadRecord(*select));
  }
  return out;
}

absl::StatusOr<std::optional<JoinTokenRecord>> Store::FindJoinToken(const std::string& id) {
  std::lock_guard<std::mutex> lock(reader_mu_);
  ASSIGN_OR_RETURN(Statement * select, reader_db_->Prepare(std::string("SELECT ") + kColumns +
                                                           " FROM join_tokens WHERE id = ?1"));
  select->Bind(1, id);
  ASSIGN_OR_RETURN(bool row, select->Step());
  std::optional<JoinTokenRecord> out;
  if (row) out = ReadRecord(*select);
  select->Reset();
  return out;
}

absl::StatusOr<bool> Store::RevokeJoinToken(const std::string& id) {
  auto found = std::make_shared<bool>(false);
  RETURN_IF_ERROR(Write([id, found](Database& db) -> absl::Status {
    ASSIGN_OR_RETURN(Statement * update,
                     db.Prepare("UPDATE join_tokens SET revoked = 1 WHERE id = ?1"));
    update->Bind(1, id);
    RETURN_IF_ERROR(update->Run());
    *found = update->changes() > 0;
    return absl::OkStatus();
  }));
  return *found;
}

absl::StatusOr<bool> Store::SpendJoinTokenUse(const std::string& id, absl::Time now) {
  auto spent = std::make_shared<bool>(false);
  RETURN_IF_ERROR(Write([id, now, spent](Database& db) -> absl::Status {
    ASSIGN_OR_RETURN(Statement * update,
                     db.Prepare("UPDATE join_tokens SET used = used + 1 WHERE id = ?1 AND "
                                "revoked = 0 AND used < uses AND expires_ms > ?2"));
    update->Bind(1, id);
    update->Bind(2, ToMs(now));
    RETURN_IF_ERROR(update->Run());
    *spent = update->changes() > 0;
    return absl::OkStatus();
  }));
  return *spent;
}

}  // namespace bench
