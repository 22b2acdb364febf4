#include "server/rpc/grpc_auth.h"

#include <grpc/grpc_security_constants.h>

#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/quote.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace bench {

namespace {

// The token of the call's `authorization: Bearer <token>` (the scheme in any case, RFC
// 6750); nullopt without one.
std::optional<std::string_view> BearerToken(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return std::nullopt;
  std::string_view value(it->second.data(), it->second.size());
  constexpr std::string_view kBearer = "Bearer ";
  if (value.size() <= kBearer.size() ||
      !absl::StartsWithIgnoreCase(absl::string_view(value.data(), value.size()),
                                  absl::string_view(kBearer.data(), kBearer.size()))) {
    return std::nullopt;
  }
  return value.substr(kBearer.size());
}

}  // namespace

std::optional<Principal> GrpcAuthenticator::PrincipalOf(
    const grpc::ServerContextBase& context) const {
  if (!on_) return Principal{"", Role::kAdmin, "none"};
  // A certificate first. gRPC 1.51 puts each URI SAN of the verified peer certificate
  // in "peer_uri" (GRPC_PEER_URI_PROPERTY_NAME); an unverified cert never gets here.
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr && auth->IsPeerAuthenticated()) {
    for (const grpc::string_ref& uri : auth->FindPropertyValues(GRPC_PEER_URI_PROPERTY_NAME)) {
      absl::StatusOr<Principal> who =
          PrincipalFromCertUri(std::string_view(uri.data(), uri.size()));
      if (who.ok()) return *who;
    }
  }
  std::optional<std::string_view> token = BearerToken(context);
  if (!token.has_value()) return std::nullopt;
  if (token->substr(0, kJoinTokenPrefix.size()) == kJoinTokenPrefix) {
    if (join_ != nullptr) return join_->PrincipalOf(*token, absl::Now());
    return std::nullopt;
  }
  if (tokens_ != nullptr) return tokens_->Find(*token);
  return std::nullopt;
}

bool SentJoinToken(const grpc::ServerContextBase& context) {
  std::optional<std::string_view> token = BearerToken(context);
  return token.has_value() && token->substr(0, kJoinTokenPrefix.size()) == kJoinTokenPrefix;
}

bool CallIsTls(const grpc::ServerContextBase& context) {
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr) return false;
  for (const grpc::string_ref& type :
       auth->FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME)) {
    // "ssl" from SslServerCredentials, "tls" from TlsServerCredentials (benchd's).
    const std::string_view value(type.data(), type.size());
    if (value == GRPC_SSL_TRANSPORT_SECURITY_TYPE || value == GRPC_TLS_TRANSPORT_SECURITY_TYPE) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeTlsServerCredentials(
    const std::string& cert_file, const std::string& key_file, const std::string& client_ca,
    absl::Duration refresh) {
  // Read once here so a wrong path fails at start with the flag's name, not later in a
  // handshake (the provider itself only logs).
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string*>{"--tls-cert", &cert_file},
        {"--tls-key", &key_file},
        {"--client-ca", &client_ca}}) {
    if (path->empty()) continue;
    std::ifstream in(*path);
    std::string first;
    if (!in || !std::getline(in, first)) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read ", QuotePrefix(*path)));
    }
  }
  const unsigned seconds =
      static_cast<unsigned>(std::max<int64_t>(1, absl::ToInt64Seconds(refresh)));
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      key_file, cert_file, client_ca, seconds);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (!client_ca.empty()) {
    options.watch_root_certs();
    // Requested, verified when sent, not required: token users send none.
    options.set_cert_request_type(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return grpc::experimental::TlsServerCredentials(options);
}

}  // namespace bench
