#include "ctl/client.h"

#include <utility>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"

namespace bench::ctl {
namespace {

namespace v1 = benchfleet::v1;

// gRPC's own words for a connection that failed (as opposed to benchd answering
// UNAVAILABLE, e.g. because its database cannot be written).
bool IsTransportFailure(const std::string& message) {
  for (const char* phrase :
       {"failed to connect", "Socket closed", "Connection reset", "Connection refused",
        "DNS resolution failed", "empty address list", "Broken pipe", "Endpoint read failed",
        "keepalive", "connections to all backends failing", "Network is unreachable"}) {
    if (absl::StrContains(message, phrase)) return true;
  }
  return message.empty();
}

}  // namespace

absl::Status RpcError(const grpc::Status& status, const std::string& server) {
  if (status.ok()) return absl::OkStatus();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
      !IsTransportFailure(status.error_message())) {
    return absl::UnavailableError(absl::StrCat("benchd at ", server, " answered UNAVAILABLE: ",
                                               status.error_message()));
  }
  if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
    return absl::UnauthenticatedError(absl::StrCat(
        "benchd at ", server, " wants credentials (UNAUTHENTICATED): ", status.error_message(),
        " (give a token with --token-file or $BENCH_TOKEN, or a client certificate with "
        "--tls-cert/--tls-key)"));
  }
  if (status.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
    return absl::PermissionDeniedError(absl::StrCat(
        "benchd at ", server, " refused (PERMISSION_DENIED): ", status.error_message()));
  }
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StrCat("cannot reach benchd at ", server, ": ",
                                     status.error_message()));
  }
  if (status.error_message().empty()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StatusCodeToString(
                            static_cast<absl::StatusCode>(status.error_code())));
  }
  return FromGrpcStatus(status);
}

std::unique_ptr<Client> Client::Dial(const std::string& server) {
  return *Dial(server, ClientCredentialOptions());  // plain: cannot fail
}

absl::StatusOr<std::unique_ptr<Client>> Client::Dial(const std::string& server,
                                                     const ClientCredentialOptions& credentials) {
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(512 << 20);
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      DialChannel(server, credentials, channel_args);
  if (!channel.ok()) return channel.status();
  std::shared_ptr<v1::Controller::Stub> stub = v1::Controller::NewStub(*std::move(channel));
  auto client = std::make_unique<Client>(stub.get(), server);
  client->owned_ = std::move(stub);
  return client;
}

absl::StatusOr<ClientCredentialOptions> ResolveCredentials(const ConnectionFlags& flags,
                                                           const CredentialEnv& env) {
  ClientCredentialOptions options;
  auto pick = [](const std::string& flag_value, const char* flag, const std::string& env_value,
                 const char* env_name, std::string* value, std::string* name) {
    if (!flag_value.empty()) {
      *value = flag_value;
      *name = flag;
    } else if (!env_value.empty()) {
      *value = env_value;
      *name = env_name;
    }
  };
  pick(flags.tls_ca, "--tls-ca", env.tls_ca, "BENCH_TLS_CA", &options.tls_ca, &options.ca_flag);
  pick(flags.tls_cert, "--tls-cert", env.tls_cert, "BENCH_TLS_CERT", &options.tls_cert,
       &options.cert_flag);
  pick(flags.tls_key, "--tls-key", env.tls_key, "BENCH_TLS_KEY", &options.tls_key,
       &options.key_flag);
  options.insecure = flags.insecure;
  if (!flags.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(flags.token_file, "--token-file");
    if (!token.ok()) return token.status();
    options.token = *std::move(token);
  } else if (!env.token.empty()) {
    options.token = std::string(absl::StripAsciiWhitespace(env.token));
  } else if (!env.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(env.token_file, "BENCH_TOKEN_FILE");
    if (!token.ok()) return token.status();
    options.token = *std::move(token);
  }
  return options;
}

Client::Client(Stub* stub, std::string server, absl::Duration rpc_timeout)
    : stub_(stub), server_(std::move(server)), rpc_timeout_(rpc_timeout) {}

absl::Status Client::Watch(
    const std::string& job_id,
    const std::function<bool(const v1::JobStatus&)>& on_update) const {
  grpc::ClientContext rpc;
  v1::WatchJobRequest request;
  request.set_job_id(job_id);
  std::unique_ptr<grpc::ClientReaderInterface<v1::JobStatus>> reader =
      stub_->WatchJob(&rpc, request);
  v1::JobStatus update;
  while (reader->Read(&update)) {
    if (!on_update(update)) {
      rpc.TryCancel();
      reader->Finish();
      return absl::OkStatus();
    }
  }
  return RpcError(reader->Finish(), server_);
}

}  // namespace bench::ctl
