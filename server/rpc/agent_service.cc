#include "server/rpc/agent_service.h"

#include <vector>

#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "server/rpc/proto_convert.h"
#include "server/rpc/queued_writer.h"
#include "server/rpc/raw_rpc.h"

namespace bench {
namespace v1 = benchfleet::v1;
namespace {

// The controller's end of one agent's assignment stream.
class AssignmentStream final : public AgentChannel {
 public:
  explicit AssignmentStream(QueuedWriter<grpc::ByteBuffer>* writer) : writer_(writer) {}
  void SendAssignment(const AssignmentMessage& assignment) override {
    v1::AssignmentEvent event;
    ToProto(assignment, event.mutable_assign());
    PushMessage(writer_, event);
  }
  void SendCancel(const CancelMessage& cancel) override {
    v1::AssignmentEvent event;
    ToProto(cancel, event.mutable_cancel());
    PushMessage(writer_, event);
  }
  void Close(const absl::Status& status) override { writer_->Close(ToGrpcStatus(status)); }

 private:
  QueuedWriter<grpc::ByteBuffer>* writer_;
};

// The node a request acts for.
std::string_view NodeOf(const v1::RegisterRequest& request) { return request.inventory().name(); }
template <class Request>
std::string_view NodeOf(const Request& request) {
  return request.agent();
}

// OK when the caller is an agent (or security is off) and `open` is OK, both checked
// before parsing; then `raw` parsed into `request` (INVALID_ARGUMENT naming `method` when
// it does not parse), which must act for the caller's own node.
template <class Request>
absl::Status Admit(const GrpcAuthenticator& auth, const grpc::CallbackServerContext& context,
                   std::string_view method, const grpc::ByteBuffer& raw, Request* request,
                   const absl::Status& open = absl::OkStatus()) {
  std::optional<Principal> who = auth.PrincipalOf(context);
  RETURN_IF_ERROR(Authorize(who, Action::kAgent));
  RETURN_IF_ERROR(open);
  RETURN_IF_ERROR(ParseRequest(raw, v1::AgentService::service_full_name(), method, request));
  return CheckAgentNode(*who, NodeOf(*request));
}

using Method = AgentRpcCounters::Method;

// Counts the call (when there are counters) with the code it is answered, then answers it.
template <class Call>
grpc::ServerUnaryReactor* Answer(AgentRpcCounters* counters, Method method, Call* call,
                                 const absl::Status& status) {
  if (counters != nullptr) counters->CountCall(method, status.code());
  return call->Reply(status);
}

}  // namespace

// In a unary method: unless Admit lets the call through, replies with the refusal (counted
// as `method`'s) and returns. __func__, the adapter's own name, is the RPC's.
#define BENCH_ADMIT_OR_REPLY(call, method)                                       \
  if (absl::Status admitted =                                                    \
          Admit(auth_, *context, __func__, *request, (call)->mutable_request()); \
      !admitted.ok())                                                            \
  return Answer(counters_, method, call, admitted)

grpc::ServerUnaryReactor* AgentServiceImpl::Register(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* request,
                                                     grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::RegisterRequest, v1::RegisterResponse>(response);
  BENCH_ADMIT_OR_REPLY(call, Method::kRegister);
  absl::StatusOr<std::string> name =
      manager_->RegisterAgent(FromProto(call->request().inventory()));
  if (name.ok()) {
    call->response()->set_agent(*name);
    call->response()->set_heartbeat_interval_ms(
        static_cast<int32_t>(absl::ToInt64Milliseconds(manager_->heartbeat_interval())));
    call->response()->set_controller_id(manager_->controller_id());
  }
  return Answer(counters_, Method::kRegister, call, name.status());
}

grpc::ServerUnaryReactor* AgentServiceImpl::Heartbeat(grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request,
                                                      grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::HeartbeatRequest, v1::HeartbeatResponse>(response);
  BENCH_ADMIT_OR_REPLY(call, Method::kHeartbeat);
  const v1::HeartbeatRequest& beat = call->request();
  std::vector<RunningOnAgent> running;
  if (beat.running_size() > 0) {
    for (const v1::RunningJob& job : beat.running()) {
      running.push_back(
          RunningOnAgent{job.job_id(), job.attempt(), {job.ranks().begin(), job.ranks().end()}});
    }
  } else {
    for (const std::string& job_id : beat.running_jobs()) {
      running.push_back(RunningOnAgent{job_id, 0, {}});
    }
  }
  return Answer(counters_, Method::kHeartbeat, call, manager_->Heartbeat(beat.agent(), running));
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* AgentServiceImpl::StreamAssignments(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  auto* writer = new QueuedWriter<grpc::ByteBuffer>();
  v1::StreamAssignmentsRequest stream;
  if (absl::Status admitted = Admit(auth_, *context, __func__, *request, &stream); !admitted.ok()) {
    if (counters_ != nullptr) counters_->CountCall(Method::kStreamAssignments, admitted.code());
    writer->Close(ToGrpcStatus(admitted));
    return writer;
  }
  auto* channel = new AssignmentStream(writer);
  std::string agent = stream.agent();
  JobManager* manager = manager_;
  writer->set_on_done([manager, agent, channel] {
    manager->DetachChannel(agent, channel);
    delete channel;
  });
  absl::Status attached = manager_->AttachChannel(agent, channel);
  // The stream is counted as it opens, with the code of its attachment.
  if (counters_ != nullptr) counters_->CountCall(Method::kStreamAssignments, attached.code());
  if (!attached.ok()) writer->Close(ToGrpcStatus(attached));
  return writer;
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReportStatus(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request,
                                                         grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::ReportStatusRequest, v1::ReportStatusResponse>(response);
  BENCH_ADMIT_OR_REPLY(call, Method::kReportStatus);
  const v1::ReportStatusRequest& report = call->request();
  std::vector<RankReport> ranks;
  for (const v1::RankReport& rank : report.ranks()) ranks.push_back(FromProto(rank));
  // Answered once what the report changed is committed (JobManager::ReportStatus).
  manager_->ReportStatus(report.agent(), report.job_id(), report.attempt(), report.master_port(),
                         ranks, [call, counters = counters_](absl::Status status) {
                           Answer(counters, Method::kReportStatus, call, status);
                         });
  return call;
}

grpc::ServerUnaryReactor* AgentServiceImpl::Deregister(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* request,
                                                       grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::DeregisterRequest, v1::DeregisterResponse>(response);
  BENCH_ADMIT_OR_REPLY(call, Method::kDeregister);
  const v1::DeregisterRequest& goodbye = call->request();
  return Answer(counters_, Method::kDeregister, call,
                manager_->Deregister(goodbye.agent(), goodbye.reason(), goodbye.instance_id()));
}

grpc::ServerUnaryReactor* AgentServiceImpl::UploadSamples(grpc::CallbackServerContext* context,
                                                          const grpc::ByteBuffer* request,
                                                          grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::UploadSamplesRequest, v1::UploadSamplesResponse>(response);
  // Refused unparsed while benchd waits for its agents after a restart (UploadsAdmitted).
  if (absl::Status admitted = Admit(auth_, *context, __func__, *request, call->mutable_request(),
                                    manager_->UploadsAdmitted());
      !admitted.ok()) {
    return Answer(counters_, Method::kUploadSamples, call, admitted);
  }
  const v1::UploadSamplesRequest& upload = call->request();
  std::vector<IterationSample> samples;
  samples.reserve(upload.samples_size());
  for (const v1::IterationSample& sample : upload.samples()) {
    samples.push_back(FromProto(sample));
  }
  std::vector<GpuSample> gpu_samples;
  gpu_samples.reserve(upload.gpu_samples_size());
  for (const v1::GpuSample& sample : upload.gpu_samples()) {
    gpu_samples.push_back(FromProto(sample));
  }
  if (counters_ != nullptr)
    counters_->CountUpload(upload.samples_size(), upload.gpu_samples_size());
  call->response()->set_batch_id(upload.batch_id());
  manager_->UploadSamples(upload.agent(), std::move(samples), std::move(gpu_samples),
                          [call, counters = counters_](absl::StatusOr<AppendResult> result) {
                            if (result.ok()) {
                              v1::UploadSamplesResponse* acked = call->response();
                              acked->set_stored(result->stored);
                              acked->set_duplicates(result->duplicates);
                              acked->set_gpu_stored(result->gpu_stored);
                              acked->set_gpu_duplicates(result->gpu_duplicates);
                              acked->set_rejected(result->rejected);
                            }
                            Answer(counters, Method::kUploadSamples, call, result.status());
                          });
  return call;
}

#undef BENCH_ADMIT_OR_REPLY

grpc::ServerUnaryReactor* AgentServiceImpl::RequestCertificate(grpc::CallbackServerContext* context,
                                                               const grpc::ByteBuffer* request,
                                                               grpc::ByteBuffer* response) {
  auto* call =
      new UnaryCall<v1::RequestCertificateRequest, v1::RequestCertificateResponse>(response);
  auto reply = [this, call](const absl::Status& status) {
    return Answer(counters_, Method::kRequestCertificate, call, status);
  };
  std::optional<Principal> who = auth_.PrincipalOf(*context);
  // A caller with no credential at all is refused as on every other method
  // (UNAUTHENTICATED), before the transport is looked at.
  if (!who.has_value() && !SentJoinToken(*context)) {
    return reply(Authorize(who, Action::kRequestCertificate));
  }
  if (!CallIsTls(*context)) {
    return reply(absl::UnavailableError(
        "RequestCertificate is refused without TLS: benchd must run with --tls-cert, and the "
        "agent dial it with --tls-ca"));
  }
  if (!who.has_value()) return reply(JoinTokenRefused());
  if (absl::Status allowed = Authorize(who, Action::kRequestCertificate); !allowed.ok()) {
    return reply(allowed);
  }
  if (absl::Status parsed = ParseRequest(*request, v1::AgentService::service_full_name(), __func__,
                                         call->mutable_request());
      !parsed.ok()) {
    return reply(parsed);
  }
  if (bootstrap_ == nullptr) {
    return reply(absl::FailedPreconditionError(
        "benchd signs no agent certificates: start it with --agent-signing-cert and "
        "--agent-signing-key"));
  }
  absl::StatusOr<IssuedCertificate> issued = bootstrap_->RequestCertificate(
      *who, call->request().node(), call->request().csr_pem(), absl::Now());
  if (issued.ok()) {
    call->response()->set_certificate_chain_pem(issued->chain_pem);
    call->response()->set_not_before_unix_seconds(absl::ToUnixSeconds(issued->not_before));
    call->response()->set_not_after_unix_seconds(absl::ToUnixSeconds(issued->not_after));
  }
  return reply(issued.status());
}

}  // namespace bench
