// The gRPC adapter for benchfleet.v1.AgentService (the agents' side): proto ⇄ domain
// and status mapping around JobManager. Every RPC needs an agent principal (server/auth.h
// kAgent) acting for its own node: the request's agent name (Register: the inventory's
// name) must be the one its certificate names (CheckAgentNode). Thread-safe.
#pragma once

#include "benchfleet/v1/agent.grpc.pb.h"
#include "server/grpc_auth.h"
#include "server/job_manager.h"

namespace bench {

class AgentServiceImpl final : public benchfleet::v1::AgentService::CallbackService {
 public:
  // `manager` not owned. `auth` defaults to security off (any caller acts for any node).
  explicit AgentServiceImpl(JobManager* manager, GrpcAuthenticator auth = GrpcAuthenticator::Off())
      : manager_(manager), auth_(auth) {}

  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* context,
                                     const benchfleet::v1::RegisterRequest* request,
                                     benchfleet::v1::RegisterResponse* response) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* context,
                                      const benchfleet::v1::HeartbeatRequest* request,
                                      benchfleet::v1::HeartbeatResponse* response) override;
  grpc::ServerWriteReactor<benchfleet::v1::AssignmentEvent>* StreamAssignments(
      grpc::CallbackServerContext* context,
      const benchfleet::v1::StreamAssignmentsRequest* request) override;
  grpc::ServerUnaryReactor* ReportStatus(grpc::CallbackServerContext* context,
                                         const benchfleet::v1::ReportStatusRequest* request,
                                         benchfleet::v1::ReportStatusResponse* response) override;
  // Answers only after the samples are committed: the response is the acknowledgement.
  grpc::ServerUnaryReactor* UploadSamples(grpc::CallbackServerContext* context,
                                          const benchfleet::v1::UploadSamplesRequest* request,
                                          benchfleet::v1::UploadSamplesResponse* response) override;

 private:
  // OK when the caller is an agent (or security is off) acting for `node`.
  absl::Status AllowFor(const grpc::CallbackServerContext* context, std::string_view node) const;

  JobManager* const manager_;
  const GrpcAuthenticator auth_;
};

}  // namespace bench
