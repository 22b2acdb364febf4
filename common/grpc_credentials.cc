#include "common/grpc_credentials.h"

#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <grpcpp/support/client_interceptor.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/loopback.h"
#include "common/quote.h"

namespace bench {

namespace {

// A path is the operator's own input: shown whole up to this length.
constexpr size_t kMaxPathShown = 256;

absl::StatusOr<std::string> ReadWhole(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": cannot read ", QuotePrefix(path, kMaxPathShown), " (missing or unreadable)"));
  }
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": ", QuotePrefix(path, kMaxPathShown), " is empty"));
  }
  return data;
}

// Adds `authorization: Bearer <token>` to every call's initial metadata.
class BearerInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit BearerInterceptor(const std::string* header) : header_(header) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace("authorization", *header_);
    }
    methods->Proceed();
  }

 private:
  const std::string* header_;
};

class BearerInterceptorFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerInterceptorFactory(const std::string& token)
      : header_(absl::StrCat("Bearer ", token)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* /*info*/) override {
    return new BearerInterceptor(&header_);
  }

 private:
  const std::string header_;  // outlives the channel's interceptors: the channel owns us
};

// OK when a bearer token may go to `target` without TLS: a Unix socket, or hosts that are
// all loopback only (every address of an ipv4:/ipv6: list: gRPC may pick any).
absl::Status CheckPlaintextTokenTarget(const std::string& target,
                                       const ClientCredentialOptions& options) {
  std::vector<std::string> hosts;
  bool local_socket = false;
  absl::Status why = TargetHosts(target, &hosts, &local_socket);
  for (size_t i = 0; why.ok() && i < hosts.size(); ++i) why = CheckLoopbackHost(hosts[i]);
  if (why.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("refusing to send the bearer token in the clear to ",
                   QuotePrefix(target, kMaxPathShown), " (", why.message(), "): give ",
                   options.ca_flag, " CA.pem, or ", options.insecure_flag, " to send it anyway"));
}

}  // namespace

absl::StatusOr<std::string> ReadTokenFile(const std::string& path, const std::string& flag) {
  absl::StatusOr<std::string> data = ReadWhole(path, flag);
  if (!data.ok()) return data.status();
  std::string first = data->substr(0, data->find('\n'));
  std::string token(absl::StripAsciiWhitespace(first));
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", QuotePrefix(path, kMaxPathShown),
                                                   " has no token on its first line"));
  }
  return token;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> DialChannel(const std::string& target,
                                                           const ClientCredentialOptions& options,
                                                           const grpc::ChannelArguments& args) {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.tls_ca.empty()) {
    if (!options.tls_cert.empty() || !options.tls_key.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(options.cert_flag, "/", options.key_flag,
                                                     " need ", options.ca_flag,
                                                     " (a client certificate needs TLS)"));
    }
    if (!options.token.empty() && !options.insecure) {
      if (absl::Status plain = CheckPlaintextTokenTarget(target, options); !plain.ok()) {
        return plain;
      }
    }
    credentials = grpc::InsecureChannelCredentials();
  } else {
    if (options.tls_cert.empty() != options.tls_key.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(options.cert_flag, " and ", options.key_flag, " go together"));
    }
    if (absl::StatusOr<std::string> ca = ReadWhole(options.tls_ca, options.ca_flag); !ca.ok()) {
      return ca.status();
    }
    std::shared_ptr<grpc::experimental::CertificateProviderInterface> provider;
    const unsigned refresh = options.refresh_seconds == 0 ? 1 : options.refresh_seconds;
    if (options.tls_cert.empty()) {
      provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
          options.tls_ca, refresh);
    } else {
      for (const auto& [path, flag] : {std::pair{options.tls_cert, options.cert_flag},
                                       std::pair{options.tls_key, options.key_flag}}) {
        if (absl::StatusOr<std::string> data = ReadWhole(path, flag); !data.ok()) {
          return data.status();
        }
      }
      provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
          options.tls_key, options.tls_cert, options.tls_ca, refresh);
    }
    grpc::experimental::TlsChannelCredentialsOptions tls;
    tls.set_certificate_provider(provider);
    tls.watch_root_certs();
    if (!options.tls_cert.empty()) tls.watch_identity_key_cert_pairs();
    tls.set_verify_server_certs(true);
    credentials = grpc::experimental::TlsCredentials(tls);
    if (credentials == nullptr) {
      return absl::InternalError(absl::StrCat("cannot make TLS credentials from ", options.ca_flag,
                                              " ", QuotePrefix(options.tls_ca)));
    }
  }
  if (options.token.empty()) return grpc::CreateCustomChannel(target, credentials, args);
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<BearerInterceptorFactory>(options.token));
  return grpc::experimental::CreateCustomChannelWithInterceptors(target, credentials, args,
                                                                 std::move(interceptors));
}

}  // namespace bench
