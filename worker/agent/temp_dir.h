// Test helpers for worker/agent's tests (header-only; not part of the agent).
//
// TempDir: a fresh directory "$TMPDIR/<prefix>XXXXXX" (/tmp when TMPDIR is unset or
// empty), made with mkdtemp(3) in the constructor and removed with everything below it
// (std::filesystem::remove_all; errors ignored) in the destructor. ok() is false when
// the directory could not be made: a fixture ASSERTs on it before using path(), which
// is then empty. Not copyable or movable (the destructor owns the removal).
//
// OpenSpoolIn(dir, subpath, options): Spool::Open at dir.path() + "/" + subpath
// (parents are created by the spool); a failure is EXPECTed (with its status) and
// nullptr returned, so a caller ASSERTs on the pointer where it needs the spool.
//
// SpoolOrMemoryTest<Queue>: the fixture base of a queue tested both on a spool and in
// memory (the sample uploader's and the status reporter's): a TempDir and, for one
// parameter value, a Spool opened in it.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "worker/agent/spool.h"

namespace bench::agent {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    const char* tmpdir = getenv("TMPDIR");
    std::string base = (tmpdir != nullptr && *tmpdir != '\0') ? tmpdir : "/tmp";
    std::string pattern = base + "/" + prefix + "XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) != nullptr) path_ = buffer.data();
  }
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::unique_ptr<Spool> OpenSpoolIn(const TempDir& dir, const std::string& subpath,
                                          SpoolOptions options = {}) {
  auto spool = Spool::Open(dir.path() + "/" + subpath, options);
  EXPECT_TRUE(spool.ok()) << spool.status();
  return spool.ok() ? std::move(*spool) : nullptr;
}

// A parameterised fixture for a queue that runs on a spool or in memory: temp_, and,
// when GetParam() is `spooled`, spool_ opened at <temp_>/<subpath> in SetUp (ASSERTed;
// nullptr for the other values).
template <typename Queue>
class SpoolOrMemoryTest : public ::testing::TestWithParam<Queue> {
 protected:
  SpoolOrMemoryTest(const std::string& prefix, Queue spooled, std::string subpath)
      : temp_(prefix), spooled_(spooled), subpath_(std::move(subpath)) {}
  void SetUp() override {
    ASSERT_TRUE(temp_.ok());
    if (this->GetParam() == spooled_) {
      spool_ = OpenSpoolIn(temp_, subpath_);
      ASSERT_NE(spool_, nullptr);
    }
  }

  TempDir temp_;  // declared first: removed after the spool is closed
  std::unique_ptr<Spool> spool_;

 private:
  const Queue spooled_;
  const std::string subpath_;
};

}  // namespace bench::agent
