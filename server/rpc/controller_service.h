// The gRPC adapter for benchfleet.v1.Controller (benchctl's API): proto ⇄ domain and
// status mapping around JobManager (jobs, agents, baselines set) and ReadService (results,
// baselines, variability, samples); no logic of its own. Every RPC first asks the injected
// GrpcAuthenticator who calls and server/auth/auth.h's Authorize whether it may (reads: view;
// SubmitJob: submit; CancelJob: submit for its own jobs, admin any; SetBaseline and the
// join tokens (Create/List/RevokeJoinToken, server/auth/join_tokens.h): admin),
// then parses the request: the methods are raw (server/rpc/raw_rpc.h says why), so a request
// that does not parse is INVALID_ARGUMENT naming the method, and a caller without
// credentials is UNAUTHENTICATED whatever it sent. Thread-safe.
#pragma once

#include <string_view>

#include <grpcpp/grpcpp.h>

#include "benchfleet/v1/controller.grpc.pb.h"
#include "server/auth/join_tokens.h"
#include "server/core/job_manager.h"
#include "server/core/read_service.h"
#include "server/rpc/grpc_auth.h"

namespace bench {

// benchfleet.v1.Controller with every method raw. An rpc added to the .proto but not here
// would be served by the generated synchronous default (UNIMPLEMENTED): ControllerServiceTest's
// EveryMethodAnswersUnparsableBytesWithInvalidArgument walks the service's descriptor.
namespace raw_controller {
using C = benchfleet::v1::Controller;
// clang-format off
using Service =
    C::WithRawCallbackMethod_SubmitJob<
    C::WithRawCallbackMethod_GetJob<
    C::WithRawCallbackMethod_ListJobs<
    C::WithRawCallbackMethod_CancelJob<
    C::WithRawCallbackMethod_WatchJob<
    C::WithRawCallbackMethod_Results<
    C::WithRawCallbackMethod_ListAgents<
    C::WithRawCallbackMethod_ListQueue<
    C::WithRawCallbackMethod_SetBaseline<
    C::WithRawCallbackMethod_ListBaselines<
    C::WithRawCallbackMethod_GpuVariability<
    C::WithRawCallbackMethod_GetSamples<
    C::WithRawCallbackMethod_DiagnoseJob<
    C::WithRawCallbackMethod_CreateJoinToken<
    C::WithRawCallbackMethod_ListJoinTokens<
    C::WithRawCallbackMethod_RevokeJoinToken<
    C::WithRawCallbackMethod_GetScreening<
    C::WithRawCallbackMethod_ListScreenings<
    C::Service>>>>>>>>>>>>>>>>>>;
// clang-format on
}  // namespace raw_controller

class ControllerService final : public raw_controller::Service {
 public:
  // None is owned. `auth` defaults to security off (every caller an anonymous admin).
  // Without `join_tokens` the join-token methods are FAILED_PRECONDITION.
  ControllerService(JobManager* manager, ReadService* reads,
                    GrpcAuthenticator auth = GrpcAuthenticator::Off(),
                    JoinTokens* join_tokens = nullptr)
      : manager_(manager), reads_(reads), auth_(auth), join_tokens_(join_tokens) {}

  // Request and response are the method's messages, serialized (server/rpc/raw_rpc.h).
  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* WatchJob(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* Results(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListAgents(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListQueue(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* SetBaseline(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListBaselines(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GpuVariability(grpc::CallbackServerContext* context,
                                           const grpc::ByteBuffer* request,
                                           grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetSamples(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* DiagnoseJob(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* CreateJoinToken(grpc::CallbackServerContext* context,
                                            const grpc::ByteBuffer* request,
                                            grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListJoinTokens(grpc::CallbackServerContext* context,
                                           const grpc::ByteBuffer* request,
                                           grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* RevokeJoinToken(grpc::CallbackServerContext* context,
                                            const grpc::ByteBuffer* request,
                                            grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetScreening(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListScreenings(grpc::CallbackServerContext* context,
                                           const grpc::ByteBuffer* request,
                                           grpc::ByteBuffer* response) override;

 private:
  // OK or the refusal; `who` (optional) receives the principal.
  absl::Status Allow(const grpc::CallbackServerContext* context, Action action,
                     std::string_view job_owner = "", Principal* who = nullptr) const;
  // Allow(context, action, "", who), then `raw` parsed into `request` (INVALID_ARGUMENT
  // naming `method` when it does not parse).
  absl::Status Admit(const grpc::CallbackServerContext* context, std::string_view method,
                     const grpc::ByteBuffer& raw, google::protobuf::MessageLite* request,
                     Action action, Principal* who = nullptr) const;

  JobManager* const manager_;
  ReadService* const reads_;
  const GrpcAuthenticator auth_;
  JoinTokens* const join_tokens_;
};

}  // namespace bench
