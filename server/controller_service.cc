#include "server/controller_service.h"

#include <memory>

#include "common/grpc_status.h"
#include "server/proto_convert.h"
#include "server/queued_writer.h"
#include "server/rpc_finish.h"

namespace bench {
namespace v1 = benchfleet::v1;
grpc::ServerUnaryReactor* ControllerService::SubmitJob(grpc::CallbackServerContext* context,
                                                       const v1::SubmitJobRequest* request,
                                                       v1::SubmitJobResponse* response) {
  absl::StatusOr<SubmitResult> result = manager_->Submit(FromProto(request->spec()));
  if (result.ok()) {
    response->set_job_id(result->job_id);
    response->set_existing(result->existing);
  }
  return FinishNow(context, result.status());
}

grpc::ServerUnaryReactor* ControllerService::GetJob(grpc::CallbackServerContext* context,
                                                    const v1::GetJobRequest* request,
                                                    v1::JobStatus* response) {
  absl::StatusOr<JobView> view = manager_->Get(request->job_id());
  if (view.ok()) ToProto(*view, response);
  return FinishNow(context, view.status());
}

grpc::ServerUnaryReactor* ControllerService::ListJobs(grpc::CallbackServerContext* context,
                                                      const v1::ListJobsRequest*,
                                                      v1::ListJobsResponse* response) {
  for (const JobView& view : manager_->List()) ToProto(view, response->add_jobs());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* ControllerService::CancelJob(grpc::CallbackServerContext* context,
                                                       const v1::CancelJobRequest* request,
                                                       v1::JobStatus* response) {
  absl::StatusOr<JobView> view = manager_->Cancel(request->job_id());
  if (view.ok()) ToProto(*view, response);
  return FinishNow(context, view.status());
}

grpc::ServerWriteReactor<v1::JobStatus>* ControllerService::WatchJob(
    grpc::CallbackServerContext*, const v1::WatchJobRequest* request) {
  auto* writer = new QueuedWriter<v1::JobStatus>(/*latest_only=*/true);
  absl::StatusOr<int64_t> handle = manager_->Watch(
      request->job_id(),
      [writer](const JobView& view, bool final) {
        v1::JobStatus status;
        ToProto(view, &status);
        writer->Push(std::move(status));
        if (final) writer->Close(grpc::Status::OK);
      },
      [writer](const absl::Status& status) { writer->Close(ToGrpcStatus(status)); });
  if (!handle.ok()) {
    writer->Close(ToGrpcStatus(handle.status()));
    return writer;
  }
  JobManager* manager = manager_;
  int64_t id = *handle;
  writer->set_on_done([manager, id] { manager->Unwatch(id); });
  return writer;
}

grpc::ServerUnaryReactor* ControllerService::Results(grpc::CallbackServerContext* context,
                                                     const v1::ResultsRequest* request,
                                                     v1::ResultsResponse* response) {
  for (const ResultCell& cell : manager_->Results(request->model())) {
    ToProto(cell, response->add_cells());
  }
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* ControllerService::ListAgents(grpc::CallbackServerContext* context,
                                                        const v1::ListAgentsRequest*,
                                                        v1::ListAgentsResponse* response) {
  for (const AgentView& view : manager_->ListAgents()) ToProto(view, response->add_agents());
  return FinishNow(context, absl::OkStatus());
}

}  // namespace bench
