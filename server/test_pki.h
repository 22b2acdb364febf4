// For tests that need certificates and tokens: runs deploy/pki's scripts, the ones
// operators use, in a test-time directory, reads back what they made, and gives benchd's
// options for such a directory. Needs BENCH_SOURCE_DIR defined (the source tree).
// Test-only; header-only.
#pragma once

#include <cstdio>
#include <fstream>
#include <iterator>
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

// Runs deploy/pki/`script` with `args` (as Run); its stdout without surrounding whitespace
// (a token from new-token.sh).
inline std::string Script(const std::string& script, const std::string& args) {
  std::string out = Run("./" + script + " " + args);
  const size_t first = out.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return out.substr(first, out.find_last_not_of(" \t\r\n") - first + 1);
}

// The whole file at `path` (a PEM, a key); "" if it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A new token of `role` for `name`, its hash appended to `tokens_file`.
inline std::string NewToken(const std::string& role, const std::string& name,
                            const std::string& tokens_file) {
  std::string token = Run("./new-token.sh " + role + " " + name + " '" + tokens_file + "'");
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  return token;
}

}  // namespace bench::test_pki
