#include "server/rpc/controller_service.h"

#include <memory>

#include "common/grpc_status.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/rpc/proto_convert.h"
#include "server/rpc/queued_writer.h"
#include "server/rpc/raw_rpc.h"
#include "server/rpc/screening_convert.h"

namespace bench {
namespace v1 = benchfleet::v1;

absl::Status ControllerService::Allow(const grpc::CallbackServerContext* context, Action action,
                                      std::string_view job_owner, Principal* who) const {
  std::optional<Principal> principal = auth_.PrincipalOf(*context);
  absl::Status allowed = Authorize(principal, action, job_owner);
  if (allowed.ok() && who != nullptr) *who = *principal;
  return allowed;
}

absl::Status ControllerService::Admit(const grpc::CallbackServerContext* context,
                                      std::string_view method, const grpc::ByteBuffer& raw,
                                      google::protobuf::MessageLite* request, Action action,
                                      Principal* who) const {
  RETURN_IF_ERROR(Allow(context, action, "", who));
  return ParseRequest(raw, v1::Controller::service_full_name(), method, request);
}

// In a unary method: unless the caller may take the action (Admit's trailing arguments)
// and the raw `request` parses into `call`'s request, replies with the refusal and
// returns. __func__, the adapter's own name, is the RPC's.
#define BENCH_ADMIT_OR_REPLY(call, ...)                                               \
  if (absl::Status admitted =                                                         \
          Admit(context, __func__, *request, (call)->mutable_request(), __VA_ARGS__); \
      !admitted.ok())                                                                 \
  return (call)->Reply(admitted)

grpc::ServerUnaryReactor* ControllerService::SubmitJob(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* request,
                                                       grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::SubmitJobRequest, v1::SubmitJobResponse>(response);
  Principal who;
  BENCH_ADMIT_OR_REPLY(call, Action::kSubmit, &who);
  manager_->Submit(FromProto(call->request().spec()), who.name,
                   [call](absl::StatusOr<SubmitResult> result) {
                     if (result.ok()) {
                       call->response()->set_job_id(result->job_id);
                       call->response()->set_existing(result->existing);
                     }
                     call->Reply(result.status());
                   });
  return call;
}

grpc::ServerUnaryReactor* ControllerService::GetJob(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::GetJobRequest, v1::JobStatus>(response);
  BENCH_ADMIT_OR_REPLY(call, Action::kRead);
  absl::StatusOr<JobView> view = manager_->Get(call->request().job_id());
  if (view.ok()) ToProto(*view, call->response());
  return call->Reply(view.status());
}

grpc::ServerUnaryReactor* ControllerService::ListJobs(grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request,
                                                      grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::ListJobsRequest, v1::ListJobsResponse>(response);
  BENCH_ADMIT_OR_REPLY(call, Action::kRead);
  for (const JobView& view : manager_->List()) ToProto(view, call->response()->add_jobs());
  return call->Reply(absl::OkStatus());
}

grpc::ServerUnaryReactor* ControllerService::CancelJob(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* request,
                                                       grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::CancelJobRequest, v1::JobStatus>(response);
  BENCH_ADMIT_OR_REPLY(call, Action::kRead);
  absl::StatusOr<JobView> job = manager_->Get(call->request().job_id());
  if (!job.ok()) return call->Reply(job.status());
  if (absl::Status allowed = Allow(context, Action::kCancel, job->job.submitted_by);
      !allowed.ok()) {
    return call->Reply(allowed);
  }
  absl::StatusOr<JobView> view = manager_->Cancel(call->request().job_id());
  if (view.ok()) ToProto(*view, call->response());
  return call->Reply(view.status());
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* ControllerService::WatchJob(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  auto* writer = new QueuedWriter<grpc::ByteBuffer>(/*latest_only=*/true);
  v1::WatchJobRequest watch;
  if (absl::Status admitted = Admit(context, __func__, *request, &watch, Action::kRead);
      !admitted.ok()) {
    writer->Close(ToGrpcStatus(admitted));
    return writer;
  }
  absl::StatusOr<int64_t> handle = manager_->Watch(
      watch.job_id(),
      [writer](const JobView& view, bool final) {
        v1::JobStatus status;
        ToProto(view, &status);
        PushMessage(writer, status);
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
                                                     const grpc::ByteBuffer* request,
                                                     grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::ResultsRequest, v1::ResultsResponse>(response);
  BENCH_ADMIT_OR_REPLY(call, Action::kRead);
  for (const ResultCell& cell : reads_->Results(FromProto(call->request()))) {
    ToProto(cell, call->response()->add_cells());
  }
  return call->Reply(absl::OkStatus());
}

grpc::ServerUnaryReactor* ControllerService::ListAgents(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* request,
                                                        grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::ListAgentsRequest, v1::ListAgentsResponse>(response);
  BENCH_ADMIT_OR_REPLY(call, Action::kRead);
  for (const AgentView& view : manager_->ListAgents()) {
    ToProto(view, call->response()->add_agents());
  }
  return call->Reply(absl::OkStatus());
}

grpc::ServerUnaryReactor* ControllerService::ListQueue(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* request,
                                                       grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::ListQueueRequest, v1::ListQueueResponse>(response);
  BENCH_ADMIT_OR_REPLY(call, Action::kRead);
  for (const JobView& view : manager_->Queue()) ToProto(view, call->response()->add_jobs());
  return call->Reply(absl::OkStatus());
}

grpc::ServerUnaryReactor* ControllerService::SetBaseline(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request,
                                                         grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::SetBaselineRequest, v1::Baseline>(response);
  BENCH_ADMIT_OR_REPLY(call, Action::kSetBaseline);
  const v1::SetBaselineRequest& set = call->request();
  manager_->SetBaseline(
      set.job_id(),
      set.has_lower_tolerance_pct() ? set.lower_tolerance_pct() : kDefaultTolerancePct,
      set.has_upper_tolerance_pct() ? set.upper_tolerance_pct() : kDefaultTolerancePct,
      [call](absl::StatusOr<Baseline> baseline) {
        if (baseline.ok()) ToProto(*baseline, call->response());
        call->Reply(baseline.status());
      });
  return call;
}

grpc::ServerUnaryReactor* ControllerService::ListBaselines(grpc::CallbackServerContext* context,
                                                           const grpc::ByteBuffer* request,
                                                           grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::ListBaselinesRequest, v1::ListBaselinesResponse>(response);
  BENCH_ADMIT_OR_REPLY(call, Action::kRead);
  for (const Baseline& baseline : reads_->ListBaselines()) {
    ToProto(baseline, call->response()->add_baselines());
  }
  return call->Reply(absl::OkStatus());
}

grpc::ServerUnaryReactor* ControllerService::GpuVariability(grpc::CallbackServerContext* context,
                                                            const grpc::ByteBuffer* request,
                                                            grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::GpuVariabilityRequest, v1::GpuVariabilityResponse>(response);
  BENCH_ADMIT_OR_REPLY(call, Action::kRead);
  absl::StatusOr<VariabilityReport> report =
      reads_->Variability(call->request().threshold_pct(), call->request().model());
  if (report.ok()) {
    for (const bench::GpuVariability& gpu : report->gpus) {
      ToProto(gpu, call->response()->add_gpus());
    }
    call->response()->set_threshold_pct(report->threshold_pct);
  }
  return call->Reply(report.status());
}

grpc::ServerUnaryReactor* ControllerService::GetScreening(grpc::CallbackServerContext* context,
                                                          const grpc::ByteBuffer* request,
                                                          grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::ScreeningRequest, v1::ScreeningReport>(response);
  BENCH_ADMIT_OR_REPLY(call, Action::kRead);
  absl::StatusOr<ScreeningView> view = reads_->Screening(call->request().screening_id());
  if (view.ok()) ToProto(*view, call->response());
  return call->Reply(view.status());
}

grpc::ServerUnaryReactor* ControllerService::ListScreenings(grpc::CallbackServerContext* context,
                                                            const grpc::ByteBuffer* request,
                                                            grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::ListScreeningsRequest, v1::ListScreeningsResponse>(response);
  BENCH_ADMIT_OR_REPLY(call, Action::kRead);
  for (const ScreeningListEntry& entry : reads_->ListScreenings()) {
    ToProto(entry, call->response()->add_screenings());
  }
  return call->Reply(absl::OkStatus());
}

grpc::ServerUnaryReactor* ControllerService::GetSamples(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* request,
                                                        grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::GetSamplesRequest, v1::GetSamplesResponse>(response);
  BENCH_ADMIT_OR_REPLY(call, Action::kRead);
  const v1::GetSamplesRequest& get = call->request();
  absl::StatusOr<SamplesView> samples =
      reads_->GetSamples(get.job_id(), get.from_iteration(),
                         get.has_rank() ? std::optional<int>(get.rank()) : std::nullopt);
  if (samples.ok()) {
    ToProto(samples->view, call->response()->mutable_job());
    for (const IterationSample& sample : samples->samples) {
      ToProto(sample, call->response()->add_samples());
    }
  }
  return call->Reply(samples.status());
}

grpc::ServerUnaryReactor* ControllerService::DiagnoseJob(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request,
                                                         grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::DiagnoseJobRequest, v1::DiagnoseJobResponse>(response);
  BENCH_ADMIT_OR_REPLY(call, Action::kRead);
  const std::string& job_id = call->request().job_id();
  absl::StatusOr<JobDiagnosis> diagnosis = reads_->Diagnose(job_id);
  if (diagnosis.ok()) {
    call->response()->set_job_id(job_id);
    ToProto(*diagnosis, call->response()->mutable_diagnosis());
  }
  return call->Reply(diagnosis.status());
}

namespace {
absl::Status NoJoinTokens() {
  return absl::FailedPreconditionError("this benchd keeps no join tokens");
}
}  // namespace

grpc::ServerUnaryReactor* ControllerService::CreateJoinToken(grpc::CallbackServerContext* context,
                                                             const grpc::ByteBuffer* request,
                                                             grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::CreateJoinTokenRequest, v1::CreateJoinTokenResponse>(response);
  Principal who;
  BENCH_ADMIT_OR_REPLY(call, Action::kManageJoinTokens, &who);
  if (join_tokens_ == nullptr) return call->Reply(NoJoinTokens());
  const v1::CreateJoinTokenRequest& create = call->request();
  absl::StatusOr<JoinTokens::Created> created =
      join_tokens_->Create(create.uses(), absl::Seconds(create.ttl_seconds()),
                           create.allow_replace(), create.description(), absl::Now());
  if (created.ok()) {
    call->response()->set_token(created->token);
    ToProto(created->record, call->response()->mutable_info());
    Log("join token ", created->record.id, " created by ", who.Describe(), " (",
        created->record.uses, " uses", created->record.allow_replace ? ", allow-replace" : "", ")");
  }
  return call->Reply(created.status());
}

grpc::ServerUnaryReactor* ControllerService::ListJoinTokens(grpc::CallbackServerContext* context,
                                                            const grpc::ByteBuffer* request,
                                                            grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::ListJoinTokensRequest, v1::ListJoinTokensResponse>(response);
  BENCH_ADMIT_OR_REPLY(call, Action::kManageJoinTokens);
  if (join_tokens_ == nullptr) return call->Reply(NoJoinTokens());
  absl::StatusOr<std::vector<JoinTokenRecord>> tokens = join_tokens_->List();
  if (tokens.ok()) {
    for (const JoinTokenRecord& token : *tokens) ToProto(token, call->response()->add_tokens());
  }
  return call->Reply(tokens.status());
}

grpc::ServerUnaryReactor* ControllerService::RevokeJoinToken(grpc::CallbackServerContext* context,
                                                             const grpc::ByteBuffer* request,
                                                             grpc::ByteBuffer* response) {
  auto* call = new UnaryCall<v1::RevokeJoinTokenRequest, v1::RevokeJoinTokenResponse>(response);
  Principal who;
  BENCH_ADMIT_OR_REPLY(call, Action::kManageJoinTokens, &who);
  if (join_tokens_ == nullptr) return call->Reply(NoJoinTokens());
  absl::Status revoked = join_tokens_->Revoke(call->request().id());
  if (revoked.ok()) Log("join token ", call->request().id(), " revoked by ", who.Describe());
  return call->Reply(revoked);
}

#undef BENCH_ADMIT_OR_REPLY

}  // namespace bench
