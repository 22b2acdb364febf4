// A thin RAII layer over one sqlite3 connection: statements are prepared once and
// cached; SQLite result codes become absl::Status with the database path in the text.
// Not thread-safe: each connection has one owner thread (or a mutex around it).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace bench {

// Maps a SQLite result code: a full, read-only or unopenable disk and a busy database
// are UNAVAILABLE; a corrupt file or not-a-database is DATA_LOSS; a constraint is
// ALREADY_EXISTS; the rest INTERNAL.
absl::Status SqliteStatus(int code, absl::string_view what, sqlite3* db);

// How long a connection waits for a lock held by another connection.
constexpr int kBusyTimeoutMs = 5000;

class Statement {
 public:
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  // Resets and clears bindings, ready for a new execution.
  void Reset();
  void Bind(int index, int64_t value);
  void Bind(int index, double value);
  void Bind(int index, absl::string_view value);
  // Without a copy: `value` must stay alive and unchanged until the next Reset.
  void BindUnowned(int index, absl::string_view value);
  void BindNull(int index);
  // As a BLOB (Text reads it back).
  void BindBlob(int index, absl::string_view value);
  // SQLITE_ROW (true), SQLITE_DONE (false), or an error.
  absl::StatusOr<bool> Step();
  // Runs to completion, ignoring rows.
  absl::Status Run();
  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  double Double(int column) const { return sqlite3_column_double(stmt_, column); }
  std::string Text(int column) const;
  bool IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  // The column's value in one call (read it with sqlite3_value_type/_double/_int64), valid
  // until the next Step or Reset: for reads of many nullable columns per row.
  sqlite3_value* Value(int column) const { return sqlite3_column_value(stmt_, column); }
  int changes() const;

 private:
  sqlite3_stmt* stmt_;
};

class Database {
 public:
  // Opens (creating if asked) the file; sets WAL, synchronous=NORMAL, foreign keys, a
  // page cache of up to 32 MiB and a busy timeout. A file that is not a SQLite database
  // is DATA_LOSS naming the path.
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& path,
                                                        bool create);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  absl::Status Exec(absl::string_view sql);
  // A cached prepared statement, reset and ready to bind. Owned by the Database.
  absl::StatusOr<Statement*> Prepare(const std::string& sql);
  const std::string& path() const { return path_; }
  sqlite3* handle() { return db_; }

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
  std::map<std::string, std::pair<sqlite3_stmt*, std::unique_ptr<Statement>>> cache_;
};

}  // namespace bench
