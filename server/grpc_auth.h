// The gRPC side of identity: who a call is (a client certificate's URI SAN, else an
// `authorization: Bearer` token, else nobody) and benchd's server credentials (TLS
// whose key, certificate and client CA are re-read from disk when they change).
// Adapter code: server/auth.h decides what a principal may do.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_context.h"
#include "server/auth.h"
#include "server/token_file.h"

namespace bench {

class GrpcAuthenticator {
 public:
  // Security off: every call is an anonymous admin (via "none").
  static GrpcAuthenticator Off() { return GrpcAuthenticator(false, nullptr); }
  // Security on: certificates (when the transport has verified one) and, when `tokens`
  // is given (not owned; may be null), bearer tokens.
  static GrpcAuthenticator On(TokenFile* tokens) { return GrpcAuthenticator(true, tokens); }

  // The caller's principal; nullopt when it presented no usable credential. A client
  // certificate whose URI SAN is not a benchfleet identity counts as none; a token
  // that is unknown counts as none.
  std::optional<Principal> PrincipalOf(const grpc::ServerContextBase& context) const;

  bool security_on() const { return on_; }

 private:
  GrpcAuthenticator(bool on, TokenFile* tokens) : on_(on), tokens_(tokens) {}
  bool on_;
  TokenFile* tokens_;
};

// TLS with benchd's key and certificate chain, and when `client_ca` is not empty client
// certificates requested and, when sent, verified against it (a caller may instead use a
// token). All files are checked for changes every `refresh` (at least 1 s). Errors name
// the flag whose file cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeTlsServerCredentials(
    const std::string& cert_file, const std::string& key_file, const std::string& client_ca,
    absl::Duration refresh);

}  // namespace bench
