// The gRPC side of identity: who a call is (a client certificate's URI SAN, else an
// `authorization: Bearer` token, else nobody) and benchd's server credentials (TLS
// whose key, certificate and client CA are re-read from disk when they change).
// Adapter code: server/auth/auth.h decides what a principal may do.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_context.h"
#include "server/auth/auth.h"
#include "server/auth/join_tokens.h"
#include "server/auth/token_file.h"

namespace bench {

class GrpcAuthenticator {
 public:
  // Security off: every call is an anonymous admin (via "none").
  static GrpcAuthenticator Off() { return GrpcAuthenticator(false, nullptr, nullptr); }
  // Security on: certificates (when the transport has verified one) and, when `tokens`
  // is given (not owned; may be null), bearer tokens; when `join` is given (not owned; may
  // be null), join tokens (`Bearer bj1.…`: role join, server/auth/join_tokens.h).
  static GrpcAuthenticator On(TokenFile* tokens, JoinTokens* join = nullptr) {
    return GrpcAuthenticator(true, tokens, join);
  }

  // The caller's principal; nullopt when it presented no usable credential. A client
  // certificate whose URI SAN is not a benchfleet identity counts as none; a token
  // that is unknown counts as none, and so does a join token that is unknown, wrong,
  // expired, revoked or used up (checked against the store at the time of the call).
  std::optional<Principal> PrincipalOf(const grpc::ServerContextBase& context) const;

  bool security_on() const { return on_; }

 private:
  GrpcAuthenticator(bool on, TokenFile* tokens, JoinTokens* join)
      : on_(on), tokens_(tokens), join_(join) {}
  bool on_;
  TokenFile* tokens_;
  JoinTokens* join_;
};

// Whether the call carries `authorization: Bearer bj1.…` (a join token, good or not).
bool SentJoinToken(const grpc::ServerContextBase& context);

// Whether the call came over TLS (gRPC's transport security type "ssl").
bool CallIsTls(const grpc::ServerContextBase& context);

// TLS with benchd's key and certificate chain, and when `client_ca` is not empty client
// certificates requested and, when sent, verified against it (a caller may instead use a
// token). All files are checked for changes every `refresh` (at least 1 s). Errors name
// the flag whose file cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeTlsServerCredentials(
    const std::string& cert_file, const std::string& key_file, const std::string& client_ca,
    absl::Duration refresh);

}  // namespace bench
