#include "server/store/sqlite_db.h"

#include "absl/strings/str_cat.h"

namespace bench {

absl::Status SqliteStatus(int code, absl::string_view what, sqlite3* db) {
  std::string message = absl::StrCat(what, ": ", sqlite3_errstr(code));
  if (db != nullptr) {
    const char* detail = sqlite3_errmsg(db);
    if (detail != nullptr && message.find(detail) == std::string::npos) {
      absl::StrAppend(&message, " (", detail, ")");
    }
  }
  switch (code & 0xff) {
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_PERM:
      return absl::UnavailableError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    case SQLITE_CONSTRAINT:
      return absl::AlreadyExistsError(message);
    default:
      return absl::InternalError(message);
  }
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

void Statement::Bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
void Statement::Bind(int index, double value) { sqlite3_bind_double(stmt_, index, value); }
void Statement::Bind(int index, absl::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                    SQLITE_TRANSIENT);
}
void Statement::BindBlob(int index, absl::string_view value) {
  sqlite3_bind_blob(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
}
void Statement::BindUnowned(int index, absl::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
}
void Statement::BindNull(int index) { sqlite3_bind_null(stmt_, index); }

absl::StatusOr<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3* db = sqlite3_db_handle(stmt_);
  absl::Status status = SqliteStatus(rc, sqlite3_sql(stmt_), db);
  sqlite3_reset(stmt_);
  return status;
}

absl::Status Statement::Run() {
  while (true) {
    absl::StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
  }
}

std::string Statement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

int Statement::changes() const { return sqlite3_changes(sqlite3_db_handle(stmt_)); }

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path,
                                                         bool create) {
  sqlite3* db = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = SqliteStatus(rc, absl::StrCat("cannot open database ", path), db);
    sqlite3_close(db);
    return status;
  }
  auto database = std::unique_ptr<Database>(new Database(db, path));
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  // The first statement that reads the file tells a corrupt or foreign file apart.
  absl::Status status = database->Exec("PRAGMA journal_mode=WAL");
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat("database ", path, " is unusable: ", status.message()));
  }
  for (const char* pragma : {"PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=ON",
                             "PRAGMA cache_size=-32768"}) {
    absl::Status s = database->Exec(pragma);
    if (!s.ok()) return s;
  }
  return database;
}

Database::~Database() {
  for (auto& [sql, entry] : cache_) sqlite3_finalize(entry.first);
  sqlite3_close(db_);
}

absl::Status Database::Exec(absl::string_view sql) {
  std::string text(sql);
  char* error = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  if (error != nullptr) sqlite3_free(error);
  if (rc != SQLITE_OK) return SqliteStatus(rc, text, db_);
  return absl::OkStatus();
}

absl::StatusOr<Statement*> Database::Prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt,
                                nullptr);
    if (rc != SQLITE_OK) return SqliteStatus(rc, sql, db_);
    auto statement = std::make_unique<Statement>(stmt);
    it = cache_.emplace(sql, std::make_pair(stmt, std::move(statement))).first;
  }
  it->second.second->Reset();
  return it->second.second.get();
}

}  // namespace bench
