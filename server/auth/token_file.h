// A bearer-token file (server/auth/auth.h's TokenTable) kept current: Find() looks at the
// file's modification time and size at most once per refresh interval and reloads it
// when they changed. A new file that does not load keeps the old table (and logs the
// error once per change), so a half-written file never locks everyone out. Thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/auth/auth.h"

namespace bench {

class TokenFile {
 public:
  // Loads `path` now: its errors (TokenTable::Load's) are returned, naming the file.
  static absl::StatusOr<std::unique_ptr<TokenFile>> Open(const std::string& path,
                                                         absl::Duration refresh);

  // The token's principal (via "token"), from the newest good table; nullopt if unknown.
  std::optional<Principal> Find(std::string_view token);

  // Checks the file now (tests; Find does so at most every refresh interval). Returns
  // the error that kept the old table, or OK.
  absl::Status ReloadIfChanged();

 private:
  TokenFile(std::string path, absl::Duration refresh) : path_(std::move(path)), refresh_(refresh) {}

  const std::string path_;
  const absl::Duration refresh_;
  absl::Mutex mu_;
  std::shared_ptr<const TokenTable> table_ ABSL_GUARDED_BY(mu_);
  absl::Time last_check_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::string stamp_ ABSL_GUARDED_BY(mu_);  // mtime and size of the file last seen
};

}  // namespace bench
