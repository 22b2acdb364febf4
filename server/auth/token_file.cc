#include "server/auth/token_file.h"

#include <sys/stat.h>

#include <cstdio>

#include "absl/strings/str_cat.h"

namespace bench {
namespace {

// "" when the file cannot be stat'ed (a reload then reports why).
std::string Stamp(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "";
  return absl::StrCat(st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, ":", st.st_size, ":", st.st_ino);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TokenFile>> TokenFile::Open(const std::string& path,
                                                           absl::Duration refresh) {
  std::string stamp = Stamp(path);
  absl::StatusOr<TokenTable> table = TokenTable::Load(path);
  if (!table.ok()) return table.status();
  std::unique_ptr<TokenFile> file(new TokenFile(path, refresh));
  absl::MutexLock lock(&file->mu_);
  file->table_ = std::make_shared<const TokenTable>(*std::move(table));
  file->stamp_ = stamp;
  file->last_check_ = absl::Now();
  return file;
}

absl::Status TokenFile::ReloadIfChanged() {
  std::string stamp = Stamp(path_);
  {
    absl::MutexLock lock(&mu_);
    last_check_ = absl::Now();
    if (stamp == stamp_) return absl::OkStatus();
    stamp_ = stamp;  // a bad file is reported once, not on every check
  }
  absl::StatusOr<TokenTable> table = TokenTable::Load(path_);
  if (!table.ok()) {
    std::fprintf(stderr, "benchd: token file not reloaded, keeping the previous tokens: %s\n",
                 std::string(table.status().message()).c_str());
    return table.status();
  }
  auto fresh = std::make_shared<const TokenTable>(*std::move(table));
  absl::MutexLock lock(&mu_);
  table_ = std::move(fresh);
  return absl::OkStatus();
}

std::optional<Principal> TokenFile::Find(std::string_view token) {
  bool due;
  {
    absl::MutexLock lock(&mu_);
    due = absl::Now() - last_check_ >= refresh_;
  }
  if (due) ReloadIfChanged().IgnoreError();
  std::shared_ptr<const TokenTable> table;
  {
    absl::MutexLock lock(&mu_);
    table = table_;
  }
  return table->Find(token);
}

}  // namespace bench
