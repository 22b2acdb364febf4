#include "worker/agent/controller_client.h"

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "common/grpc_status.h"

namespace bench::agent {

namespace {

// gRPC's default reconnect back-off grows to minutes (1 s × 1.6 per failure, up to
// 120 s), so after a few benchd restarts in a row an agent would come back long after
// benchd's reconcile grace. The agent retries on its own schedule; the channel may try
// again within a second. (GRPC_ARG_MIN_RECONNECT_BACKOFF_MS is left alone: it is the
// connect timeout, and a short one cuts off handshakes with a benchd still starting.)
absl::StatusOr<std::shared_ptr<grpc::Channel>> ControllerChannel(
    const ControllerClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return DialChannel(options.target, options.credentials, args);
}

}  // namespace

ControllerClient::ControllerClient(ControllerClientOptions options)
    : ControllerClient(*ControllerChannel(options), options) {}

absl::StatusOr<std::unique_ptr<ControllerClient>> ControllerClient::Create(
    ControllerClientOptions options) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = ControllerChannel(options);
  if (!channel.ok()) return channel.status();
  return std::make_unique<ControllerClient>(*std::move(channel), std::move(options));
}

ControllerClient::ControllerClient(std::shared_ptr<grpc::Channel> channel,
                                   ControllerClientOptions options)
    : options_(std::move(options)),
      channel_(std::move(channel)),
      stub_(benchfleet::v1::AgentService::NewStub(channel_)) {}

void ControllerClient::SetDeadline(grpc::ClientContext* context) const {
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(options_.rpc_timeout));
}

absl::StatusOr<benchfleet::v1::RegisterResponse> ControllerClient::Register(
    const benchfleet::v1::AgentInventory& inventory) {
  grpc::ClientContext context;
  SetDeadline(&context);
  context.set_wait_for_ready(true);
  if (!Track(&context)) return absl::CancelledError("controller client shut down");
  grpc::experimental::ChannelResetConnectionBackoff(channel_.get());
  benchfleet::v1::RegisterRequest request;
  *request.mutable_inventory() = inventory;
  benchfleet::v1::RegisterResponse response;
  grpc::Status status = stub_->Register(&context, request, &response);
  Untrack(&context);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::Status ControllerClient::Heartbeat(const benchfleet::v1::HeartbeatRequest& request) {
  grpc::ClientContext context;
  SetDeadline(&context);
  if (!Track(&context)) return absl::CancelledError("controller client shut down");
  benchfleet::v1::HeartbeatResponse response;
  grpc::Status status = stub_->Heartbeat(&context, request, &response);
  Untrack(&context);
  return FromGrpcStatus(status);
}

absl::StatusOr<benchfleet::v1::RequestCertificateResponse> ControllerClient::RequestCertificate(
    const benchfleet::v1::RequestCertificateRequest& request) {
  grpc::ClientContext context;
  SetDeadline(&context);
  if (!Track(&context)) return absl::CancelledError("controller client shut down");
  grpc::experimental::ChannelResetConnectionBackoff(channel_.get());
  benchfleet::v1::RequestCertificateResponse response;
  grpc::Status status = stub_->RequestCertificate(&context, request, &response);
  Untrack(&context);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::Status ControllerClient::ReportStatus(
    const benchfleet::v1::ReportStatusRequest& request) {
  grpc::ClientContext context;
  SetDeadline(&context);
  benchfleet::v1::ReportStatusResponse response;
  return FromGrpcStatus(stub_->ReportStatus(&context, request, &response));
}

absl::Status ControllerClient::Deregister(const benchfleet::v1::DeregisterRequest& request) {
  grpc::ClientContext context;
  SetDeadline(&context);
  benchfleet::v1::DeregisterResponse response;
  return FromGrpcStatus(stub_->Deregister(&context, request, &response));
}

absl::Status ControllerClient::UploadSamples(
    const benchfleet::v1::UploadSamplesRequest& request,
    benchfleet::v1::UploadSamplesResponse* response) {
  grpc::ClientContext context;
  SetDeadline(&context);
  return FromGrpcStatus(stub_->UploadSamples(&context, request, response));
}

absl::Status ControllerClient::StreamAssignments(
    const std::string& agent,
    const std::function<void(const benchfleet::v1::AssignmentEvent&)>& on_event) {
  grpc::ClientContext context;
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return absl::CancelledError("controller client shut down");
    stream_context_ = &context;
  }
  benchfleet::v1::StreamAssignmentsRequest request;
  request.set_agent(agent);
  auto reader = stub_->StreamAssignments(&context, request);
  benchfleet::v1::AssignmentEvent event;
  while (reader->Read(&event)) on_event(event);
  grpc::Status status = reader->Finish();
  {
    absl::MutexLock lock(&mu_);
    stream_context_ = nullptr;
  }
  return FromGrpcStatus(status);
}

void ControllerClient::InterruptStream() {
  absl::MutexLock lock(&mu_);
  if (stream_context_ != nullptr) stream_context_->TryCancel();
}

void ControllerClient::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  if (stream_context_ != nullptr) stream_context_->TryCancel();
  for (grpc::ClientContext* context : cancellable_) context->TryCancel();
}

bool ControllerClient::Track(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  if (shutdown_) return false;
  cancellable_.insert(context);
  return true;
}

void ControllerClient::Untrack(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  cancellable_.erase(context);
}

}  // namespace bench::agent
