// For tests that run benchd in-process with the PKI test_pki.h made in a directory: the
// options for benchd on 127.0.0.1:0 (no web port) with its database, server certificate,
// client CA and token file all in that directory, as make-ca.sh, make-server-cert.sh
// (named "server") and new-token.sh lay them out. Test-only; header-only.
#pragma once

#include <string>

#include "server/benchd.h"

namespace bench::test_pki {

// DIR/bench.db, DIR/server.pem and .key, DIR/ca.pem as the client CA, DIR/tokens.
inline BenchdOptions SecureBenchdOptions(const std::string& dir) {
  BenchdOptions options;
  options.listen = "127.0.0.1:0";
  options.http = "";
  options.db = dir + "/bench.db";
  options.tls_cert = dir + "/server.pem";
  options.tls_key = dir + "/server.key";
  options.client_ca = dir + "/ca.pem";
  options.tokens = dir + "/tokens";
  return options;
}

}  // namespace bench::test_pki
