// The gRPC adapter for benchfleet.v1.AgentService (the agents' side): proto ⇄ domain
// and status mapping around JobManager. Thread-safe.
#pragma once

#include "benchfleet/v1/agent.grpc.pb.h"
#include "server/job_manager.h"

namespace bench {

class AgentServiceImpl final : public benchfleet::v1::AgentService::CallbackService {
 public:
  explicit AgentServiceImpl(JobManager* manager) : manager_(manager) {}

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
  JobManager* const manager_;
};

}  // namespace bench
