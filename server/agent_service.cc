#include "server/agent_service.h"

#include <vector>

#include "common/grpc_status.h"
#include "server/proto_convert.h"
#include "server/queued_writer.h"
#include "server/rpc_finish.h"

namespace bench {
namespace v1 = benchfleet::v1;
namespace {

// The controller's end of one agent's assignment stream.
class AssignmentStream final : public AgentChannel {
 public:
  explicit AssignmentStream(QueuedWriter<v1::AssignmentEvent>* writer) : writer_(writer) {}
  void SendAssignment(const AssignmentMessage& assignment) override {
    v1::AssignmentEvent event;
    ToProto(assignment, event.mutable_assign());
    writer_->Push(std::move(event));
  }
  void SendCancel(const CancelMessage& cancel) override {
    v1::AssignmentEvent event;
    ToProto(cancel, event.mutable_cancel());
    writer_->Push(std::move(event));
  }
  void Close(const absl::Status& status) override { writer_->Close(ToGrpcStatus(status)); }

 private:
  QueuedWriter<v1::AssignmentEvent>* writer_;
};

}  // namespace

absl::Status AgentServiceImpl::AllowFor(const grpc::CallbackServerContext* context,
                                        std::string_view node) const {
  std::optional<Principal> who = auth_.PrincipalOf(*context);
  absl::Status allowed = Authorize(who, Action::kAgent);
  if (!allowed.ok()) return allowed;
  return CheckAgentNode(*who, node);
}

grpc::ServerUnaryReactor* AgentServiceImpl::Register(grpc::CallbackServerContext* context,
                                                     const v1::RegisterRequest* request,
                                                     v1::RegisterResponse* response) {
  if (absl::Status allowed = AllowFor(context, request->inventory().name()); !allowed.ok()) {
    return FinishNow(context, allowed);
  }
  absl::StatusOr<std::string> name = manager_->RegisterAgent(FromProto(request->inventory()));
  if (name.ok()) {
    response->set_agent(*name);
    response->set_heartbeat_interval_ms(
        static_cast<int32_t>(absl::ToInt64Milliseconds(manager_->heartbeat_interval())));
    response->set_controller_id(manager_->controller_id());
  }
  return FinishNow(context, name.status());
}

grpc::ServerUnaryReactor* AgentServiceImpl::Heartbeat(grpc::CallbackServerContext* context,
                                                      const v1::HeartbeatRequest* request,
                                                      v1::HeartbeatResponse*) {
  if (absl::Status allowed = AllowFor(context, request->agent()); !allowed.ok()) {
    return FinishNow(context, allowed);
  }
  std::vector<RunningOnAgent> running;
  if (request->running_size() > 0) {
    for (const v1::RunningJob& job : request->running()) {
      running.push_back(
          RunningOnAgent{job.job_id(), job.attempt(), {job.ranks().begin(), job.ranks().end()}});
    }
  } else {
    for (const std::string& job_id : request->running_jobs()) {
      running.push_back(RunningOnAgent{job_id, 0, {}});
    }
  }
  return FinishNow(context, manager_->Heartbeat(request->agent(), running));
}

grpc::ServerWriteReactor<v1::AssignmentEvent>* AgentServiceImpl::StreamAssignments(
    grpc::CallbackServerContext* context, const v1::StreamAssignmentsRequest* request) {
  auto* writer = new QueuedWriter<v1::AssignmentEvent>();
  if (absl::Status allowed = AllowFor(context, request->agent()); !allowed.ok()) {
    writer->Close(ToGrpcStatus(allowed));
    return writer;
  }
  auto* channel = new AssignmentStream(writer);
  std::string agent = request->agent();
  JobManager* manager = manager_;
  writer->set_on_done([manager, agent, channel] {
    manager->DetachChannel(agent, channel);
    delete channel;
  });
  absl::Status attached = manager_->AttachChannel(agent, channel);
  if (!attached.ok()) writer->Close(ToGrpcStatus(attached));
  return writer;
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReportStatus(grpc::CallbackServerContext* context,
                                                         const v1::ReportStatusRequest* request,
                                                         v1::ReportStatusResponse*) {
  if (absl::Status allowed = AllowFor(context, request->agent()); !allowed.ok()) {
    return FinishNow(context, allowed);
  }
  std::vector<RankReport> ranks;
  for (const v1::RankReport& report : request->ranks()) ranks.push_back(FromProto(report));
  return FinishNow(context,
                   manager_->ReportStatus(request->agent(), request->job_id(), request->attempt(),
                                          request->master_port(), ranks));
}

grpc::ServerUnaryReactor* AgentServiceImpl::UploadSamples(grpc::CallbackServerContext* context,
                                                          const v1::UploadSamplesRequest* request,
                                                          v1::UploadSamplesResponse* response) {
  if (absl::Status allowed = AllowFor(context, request->agent()); !allowed.ok()) {
    return FinishNow(context, allowed);
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  std::vector<IterationSample> samples;
  samples.reserve(request->samples_size());
  for (const v1::IterationSample& sample : request->samples()) {
    samples.push_back(FromProto(sample));
  }
  std::vector<GpuSample> gpu_samples;
  gpu_samples.reserve(request->gpu_samples_size());
  for (const v1::GpuSample& sample : request->gpu_samples()) {
    gpu_samples.push_back(FromProto(sample));
  }
  response->set_batch_id(request->batch_id());
  manager_->UploadSamples(request->agent(), std::move(samples), std::move(gpu_samples),
                          [reactor, response](absl::StatusOr<AppendResult> result) {
                            if (result.ok()) {
                              response->set_stored(result->stored);
                              response->set_duplicates(result->duplicates);
                              response->set_gpu_stored(result->gpu_stored);
                              response->set_gpu_duplicates(result->gpu_duplicates);
                              response->set_rejected(result->rejected);
                            }
                            reactor->Finish(ToGrpcStatus(result.status()));
                          });
  return reactor;
}

}  // namespace bench
