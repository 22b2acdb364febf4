// A client's channel to benchd: plain (insecure, as before issue 15) or TLS verifying benchd
// against a CA file, with an optional client certificate/key (reloaded from disk when they
// change) and an optional bearer token sent as `authorization: Bearer <token>` on every call.
// The token is added by a client interceptor, so it is sent over a plaintext loopback channel
// too (gRPC's AccessTokenCredentials refuse to), for a benchd running with --tokens and no TLS.
// Off this machine a token goes in the clear only when asked (`insecure`): without TLS,
// DialChannel refuses a token unless the target is a Unix socket or its host is loopback
// only (common/loopback.h: every address it resolves to).
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"

namespace bench {

struct ClientCredentialOptions {
  std::string tls_ca;    // CA file verifying benchd; non-empty turns TLS on
  std::string tls_cert;  // client certificate (PEM), with tls_key; needs tls_ca
  std::string tls_key;
  std::string token;              // bearer token itself (not a file); empty: none
  unsigned refresh_seconds = 60;  // how often cert/key/CA files are re-read
  bool insecure = false;          // the token may go without TLS to a host that is not loopback
  // Names used in error messages (the flags the values came from).
  std::string ca_flag = "--tls-ca";
  std::string cert_flag = "--tls-cert";
  std::string key_flag = "--tls-key";
  std::string insecure_flag = "--insecure";
};

// Reads a token file: its first line, surrounding blanks trimmed. Errors name `flag` and the
// file when it is missing, unreadable or empty.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path, const std::string& flag);

// Checks the files exist and are readable (errors name the flag and the file) and that a
// token would not travel in the clear off this machine (INVALID_ARGUMENT naming the target
// and both ways out), then makes the channel. Does not connect; may resolve the target's
// host to see that it is loopback.
absl::StatusOr<std::shared_ptr<grpc::Channel>> DialChannel(const std::string& target,
                                                           const ClientCredentialOptions& options,
                                                           const grpc::ChannelArguments& args);

}  // namespace bench
