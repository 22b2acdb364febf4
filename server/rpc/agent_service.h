// The gRPC adapter for benchfleet.v1.AgentService (the agents' side): proto ⇄ domain
// and status mapping around JobManager. Every RPC needs an agent principal (server/auth/auth.h
// kAgent), checked before the request is parsed, acting for its own node: the request's
// agent name (Register: the inventory's name) must be the one its certificate names
// (CheckAgentNode). RequestCertificate (issue 24's bootstrap) is the exception: over TLS
// only (UNAVAILABLE otherwise), for a join token or an agent's own certificate, decided by
// server/auth/agent_bootstrap.h. The methods are raw (server/rpc/raw_rpc.h says why): a request
// that does not parse is INVALID_ARGUMENT naming the method. Each call that reaches a method
// is counted, with the code it is answered, in the AgentRpcCounters given (when one is: benchd
// gives its LiveMetrics', so /metrics shows them), and each admitted upload's batch sizes.
// Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include "benchfleet/v1/agent.grpc.pb.h"
#include "server/auth/agent_bootstrap.h"
#include "server/core/job_manager.h"
#include "server/metrics/agent_rpc_counters.h"
#include "server/rpc/grpc_auth.h"

namespace bench {

// benchfleet.v1.AgentService with every method raw. An rpc added to the .proto but not
// here would be served by the generated synchronous default (UNIMPLEMENTED):
// ControllerServiceTest's EveryMethodAnswersUnparsableBytesWithInvalidArgument walks the
// service's descriptor.
namespace raw_agent {
using A = benchfleet::v1::AgentService;
// clang-format off
using Service =
    A::WithRawCallbackMethod_Register<
    A::WithRawCallbackMethod_Heartbeat<
    A::WithRawCallbackMethod_StreamAssignments<
    A::WithRawCallbackMethod_ReportStatus<
    A::WithRawCallbackMethod_UploadSamples<
    A::WithRawCallbackMethod_Deregister<
    A::WithRawCallbackMethod_RequestCertificate<
    A::Service>>>>>>>;
// clang-format on
}  // namespace raw_agent

class AgentServiceImpl final : public raw_agent::Service {
 public:
  // `manager` and `bootstrap` not owned. `auth` defaults to security off (any caller acts
  // for any node). Without `bootstrap` RequestCertificate is FAILED_PRECONDITION.
  // `counters` (not owned; none: nothing counted) outlives the service.
  explicit AgentServiceImpl(JobManager* manager, GrpcAuthenticator auth = GrpcAuthenticator::Off(),
                            AgentBootstrap* bootstrap = nullptr,
                            AgentRpcCounters* counters = nullptr)
      : manager_(manager), auth_(auth), bootstrap_(bootstrap), counters_(counters) {}

  // Request and response are the method's messages, serialized (server/rpc/raw_rpc.h).
  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* StreamAssignments(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* ReportStatus(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
  // Answers only after the samples are committed: the response is the acknowledgement.
  grpc::ServerUnaryReactor* UploadSamples(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Deregister(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* RequestCertificate(grpc::CallbackServerContext* context,
                                               const grpc::ByteBuffer* request,
                                               grpc::ByteBuffer* response) override;

 private:
  JobManager* const manager_;
  const GrpcAuthenticator auth_;
  AgentBootstrap* const bootstrap_;
  AgentRpcCounters* const counters_;
};

}  // namespace bench
