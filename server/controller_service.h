// The gRPC adapter for benchfleet.v1.Controller (benchctl's API): proto ⇄ domain and
// status mapping around JobManager (jobs, agents, baselines set) and ReadService (results,
// baselines, variability, samples); no logic of its own. Every RPC first asks the injected
// GrpcAuthenticator who calls and server/auth.h's Authorize whether it may (reads: view;
// SubmitJob: submit; CancelJob: submit for its own jobs, admin any; SetBaseline: admin).
// Thread-safe.
#pragma once

#include "benchfleet/v1/controller.grpc.pb.h"
#include "server/grpc_auth.h"
#include "server/job_manager.h"
#include "server/read_service.h"

namespace bench {

class ControllerService final : public benchfleet::v1::Controller::CallbackService {
 public:
  // Neither is owned. `auth` defaults to security off (every caller an anonymous admin).
  ControllerService(JobManager* manager, ReadService* reads,
                    GrpcAuthenticator auth = GrpcAuthenticator::Off())
      : manager_(manager), reads_(reads), auth_(auth) {}

  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* context,
                                      const benchfleet::v1::SubmitJobRequest* request,
                                      benchfleet::v1::SubmitJobResponse* response) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context,
                                   const benchfleet::v1::GetJobRequest* request,
                                   benchfleet::v1::JobStatus* response) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context,
                                     const benchfleet::v1::ListJobsRequest* request,
                                     benchfleet::v1::ListJobsResponse* response) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* context,
                                      const benchfleet::v1::CancelJobRequest* request,
                                      benchfleet::v1::JobStatus* response) override;
  grpc::ServerWriteReactor<benchfleet::v1::JobStatus>* WatchJob(
      grpc::CallbackServerContext* context,
      const benchfleet::v1::WatchJobRequest* request) override;
  grpc::ServerUnaryReactor* Results(grpc::CallbackServerContext* context,
                                    const benchfleet::v1::ResultsRequest* request,
                                    benchfleet::v1::ResultsResponse* response) override;
  grpc::ServerUnaryReactor* ListAgents(grpc::CallbackServerContext* context,
                                       const benchfleet::v1::ListAgentsRequest* request,
                                       benchfleet::v1::ListAgentsResponse* response) override;
  grpc::ServerUnaryReactor* ListQueue(grpc::CallbackServerContext* context,
                                      const benchfleet::v1::ListQueueRequest* request,
                                      benchfleet::v1::ListQueueResponse* response) override;
  grpc::ServerUnaryReactor* SetBaseline(grpc::CallbackServerContext* context,
                                        const benchfleet::v1::SetBaselineRequest* request,
                                        benchfleet::v1::Baseline* response) override;
  grpc::ServerUnaryReactor* ListBaselines(grpc::CallbackServerContext* context,
                                          const benchfleet::v1::ListBaselinesRequest* request,
                                          benchfleet::v1::ListBaselinesResponse* response) override;
  grpc::ServerUnaryReactor* GpuVariability(
      grpc::CallbackServerContext* context, const benchfleet::v1::GpuVariabilityRequest* request,
      benchfleet::v1::GpuVariabilityResponse* response) override;
  grpc::ServerUnaryReactor* GetSamples(grpc::CallbackServerContext* context,
                                       const benchfleet::v1::GetSamplesRequest* request,
                                       benchfleet::v1::GetSamplesResponse* response) override;

 private:
  // OK or the refusal; `who` (optional) receives the principal.
  absl::Status Allow(const grpc::CallbackServerContext* context, Action action,
                     std::string_view job_owner = "", Principal* who = nullptr) const;

  JobManager* const manager_;
  ReadService* const reads_;
  const GrpcAuthenticator auth_;
};

}  // namespace bench
