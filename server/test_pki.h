// For tests that need certificates and tokens: runs deploy/pki's scripts, the ones
// operators use, in a test-time directory. Needs BENCH_SOURCE_DIR defined (the source
// tree). Test-only; header-only.
#pragma once

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace bench::test_pki {

// Runs `command` (e.g. "./make-ca.sh /tmp/x/ca") in deploy/pki with BENCH_PKI_DAYS=2 unless
// the command sets it; returns its stdout. A non-zero exit fails the test.
inline std::string Run(const std::string& command) {
  const std::string line = "cd '" BENCH_SOURCE_DIR "/deploy/pki' && export BENCH_PKI_DAYS=2 && " +
                           command + " 2>/dev/null";
  std::string out;
  FILE* pipe = popen(line.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << line;
    return out;
  }
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  int rc = pclose(pipe);
  EXPECT_EQ(rc, 0) << line;
  return out;
}

// A new token of `role` for `name`, its hash appended to `tokens_file`.
inline std::string NewToken(const std::string& role, const std::string& name,
                            const std::string& tokens_file) {
  std::string token = Run("./new-token.sh " + role + " " + name + " '" + tokens_file + "'");
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  return token;
}

}  // namespace bench::test_pki
