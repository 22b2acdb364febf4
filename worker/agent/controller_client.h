// A thin wrapper over AgentService's stub: each call has a deadline and returns
// absl::Status. Implements the RPC interfaces of SampleUploader and StatusReporter.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "benchfleet/v1/agent.grpc.pb.h"
#include "common/grpc_credentials.h"
#include "worker/agent/cert_bootstrap.h"
#include "worker/agent/sample_uploader.h"
#include "worker/agent/status_reporter.h"

namespace bench::agent {

struct ControllerClientOptions {
  std::string target;  // HOST:PORT (any gRPC target)
  absl::Duration rpc_timeout = absl::Seconds(10);
  // Plain by default; TLS with the node's certificate (--tls-ca/--tls-cert/--tls-key),
  // the certificate and key re-read when they change.
  ClientCredentialOptions credentials;
};

// Thread-safe: any method may be called from any thread, concurrently.
class ControllerClient : public SampleUploadRpc, public StatusReportRpc, public CertificateRpc {
 public:
  // Plain channels only (options.credentials must be empty; use Create for TLS).
  explicit ControllerClient(ControllerClientOptions options);
  // Any credentials; an unreadable CA/cert/key file is an error naming its flag.
  static absl::StatusOr<std::unique_ptr<ControllerClient>> Create(ControllerClientOptions options);
  // For tests: over an existing channel.
  ControllerClient(std::shared_ptr<grpc::Channel> channel, ControllerClientOptions options);

  // Waits for the connection (up to rpc_timeout): registering is how the agent comes
  // back after benchd restarted, on the agent's own retry schedule, so gRPC's
  // connection back-off is reset first.
  absl::StatusOr<benchfleet::v1::RegisterResponse> Register(
      const benchfleet::v1::AgentInventory& inventory);
  absl::Status Heartbeat(const benchfleet::v1::HeartbeatRequest& request);
  absl::Status ReportStatus(const benchfleet::v1::ReportStatusRequest& request) override;
  absl::Status UploadSamples(const benchfleet::v1::UploadSamplesRequest& request,
                             benchfleet::v1::UploadSamplesResponse* response) override;
  // A certificate for this node's key (the bootstrap with a join token, or a renewal over the
  // agent's own certificate). Cancelled by Shutdown, like Register.
  absl::StatusOr<benchfleet::v1::RequestCertificateResponse> RequestCertificate(
      const benchfleet::v1::RequestCertificateRequest& request) override;
  // Works after Shutdown (it is the last call of a stopping agent).
  absl::Status Deregister(const benchfleet::v1::DeregisterRequest& request);

  // Opens StreamAssignments for `agent` and calls `on_event` (on this thread) for each
  // event; blocks until the stream ends and returns its final status. Only one stream
  // at a time. The stream has no deadline.
  absl::Status StreamAssignments(
      const std::string& agent,
      const std::function<void(const benchfleet::v1::AssignmentEvent&)>& on_event);
  // Ends the open stream, if any (StreamAssignments then returns CANCELLED).
  void InterruptStream();
  // Ends the open stream and any Register/Heartbeat/RequestCertificate in flight, and makes
  // later StreamAssignments/Register/Heartbeat/RequestCertificate calls return CANCELLED at once.
  // ReportStatus, UploadSamples and Deregister keep working (for the final flush and goodbye).
  void Shutdown();

 private:
  void SetDeadline(grpc::ClientContext* context) const;
  // Tracks `context` so that Shutdown() can cancel it; false if already shut down.
  bool Track(grpc::ClientContext* context);
  void Untrack(grpc::ClientContext* context);

  const ControllerClientOptions options_;
  const std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<benchfleet::v1::AgentService::Stub> stub_;

  absl::Mutex mu_;
  grpc::ClientContext* stream_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::set<grpc::ClientContext*> cancellable_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace bench::agent
