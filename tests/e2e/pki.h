// For the end-to-end tests that secure their cluster: a shell script run for its output,
// deploy/pki's scripts (the ones operators use) run at test time, a file read back, and
// benchd's flags for the PKI those scripts made in a directory. Needs BENCH_SOURCE_DIR
// defined (the source tree). Test-only; header-only.
#pragma once

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace bench::testing {

// Runs `script` under sh in `dir`; returns its stdout (a failed EXPECT if it exits
// non-zero).
inline std::string Shell(const std::string& script, const std::string& dir = "/") {
  const std::string command = absl::StrCat("cd '", dir, "' && (", script, ")");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << script;
    return "";
  }
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0) << "script failed: " << script << "\n" << out;
  return out;
}

// Runs deploy/pki/`script` with `args` (certificates valid for 2 days unless DAYS says
// otherwise); returns its stdout, trimmed: a token from new-token.sh.
inline std::string Pki(const std::string& script, const std::string& args) {
  return std::string(absl::StripAsciiWhitespace(Shell(absl::StrCat(
      "BENCH_PKI_DAYS=2 bash '", BENCH_SOURCE_DIR, "/deploy/pki/", script, "' ", args))));
}

// The whole file at `path`; "" if it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// benchd's TLS and authentication flags for the PKI in `pki`: server.pem/.key (made by
// make-server-cert.sh as "server"), ca.pem as the client CA, the token file `tokens`.
inline std::vector<std::string> SecureBenchdFlags(const std::string& pki) {
  return {"--tls-cert",  pki + "/server.pem", "--tls-key", pki + "/server.key",
          "--client-ca", pki + "/ca.pem",     "--tokens",  pki + "/tokens"};
}

}  // namespace bench::testing
