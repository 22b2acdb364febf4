#include "ctl/client.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

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
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(512 << 20);
  std::shared_ptr<v1::Controller::Stub> stub = v1::Controller::NewStub(
      grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), channel_args));
  auto client = std::make_unique<Client>(stub.get(), server);
  client->owned_ = std::move(stub);
  return client;
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
