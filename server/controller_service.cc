#include "server/controller_service.h"

#include <memory>

#include "common/grpc_status.h"
#include "server/proto_convert.h"
#include "server/queued_writer.h"
#include "server/rpc_finish.h"

namespace bench {
namespace v1 = benchfleet::v1;

absl::Status ControllerService::Allow(const grpc::CallbackServerContext* context, Action action,
                                      std::string_view job_owner, Principal* who) const {
  std::optional<Principal> principal = auth_.PrincipalOf(*context);
  absl::Status allowed = Authorize(principal, action, job_owner);
  if (allowed.ok() && who != nullptr) *who = *principal;
  return allowed;
}

#define BENCH_ALLOW_OR_FINISH(...)                                       \
  if (absl::Status allowed = Allow(context, __VA_ARGS__); !allowed.ok()) \
  return FinishNow(context, allowed)
grpc::ServerUnaryReactor* ControllerService::SubmitJob(grpc::CallbackServerContext* context,
                                                       const v1::SubmitJobRequest* request,
                                                       v1::SubmitJobResponse* response) {
  Principal who;
  BENCH_ALLOW_OR_FINISH(Action::kSubmit, "", &who);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  manager_->Submit(FromProto(request->spec()), who.name,
                   [reactor, response](absl::StatusOr<SubmitResult> result) {
                     if (result.ok()) {
                       response->set_job_id(result->job_id);
                       response->set_existing(result->existing);
                     }
                     reactor->Finish(ToGrpcStatus(result.status()));
                   });
  return reactor;
}

grpc::ServerUnaryReactor* ControllerService::GetJob(grpc::CallbackServerContext* context,
                                                    const v1::GetJobRequest* request,
                                                    v1::JobStatus* response) {
  BENCH_ALLOW_OR_FINISH(Action::kRead);
  absl::StatusOr<JobView> view = manager_->Get(request->job_id());
  if (view.ok()) ToProto(*view, response);
  return FinishNow(context, view.status());
}

grpc::ServerUnaryReactor* ControllerService::ListJobs(grpc::CallbackServerContext* context,
                                                      const v1::ListJobsRequest*,
                                                      v1::ListJobsResponse* response) {
  BENCH_ALLOW_OR_FINISH(Action::kRead);
  for (const JobView& view : manager_->List()) ToProto(view, response->add_jobs());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* ControllerService::CancelJob(grpc::CallbackServerContext* context,
                                                       const v1::CancelJobRequest* request,
                                                       v1::JobStatus* response) {
  BENCH_ALLOW_OR_FINISH(Action::kRead);
  absl::StatusOr<JobView> job = manager_->Get(request->job_id());
  if (!job.ok()) return FinishNow(context, job.status());
  BENCH_ALLOW_OR_FINISH(Action::kCancel, job->job.submitted_by);
  absl::StatusOr<JobView> view = manager_->Cancel(request->job_id());
  if (view.ok()) ToProto(*view, response);
  return FinishNow(context, view.status());
}

grpc::ServerWriteReactor<v1::JobStatus>* ControllerService::WatchJob(
    grpc::CallbackServerContext* context, const v1::WatchJobRequest* request) {
  auto* writer = new QueuedWriter<v1::JobStatus>(/*latest_only=*/true);
  if (absl::Status allowed = Allow(context, Action::kRead); !allowed.ok()) {
    writer->Close(ToGrpcStatus(allowed));
    return writer;
  }
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
  BENCH_ALLOW_OR_FINISH(Action::kRead);
  for (const ResultCell& cell : reads_->Results(FromProto(*request))) {
    ToProto(cell, response->add_cells());
  }
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* ControllerService::ListAgents(grpc::CallbackServerContext* context,
                                                        const v1::ListAgentsRequest*,
                                                        v1::ListAgentsResponse* response) {
  BENCH_ALLOW_OR_FINISH(Action::kRead);
  for (const AgentView& view : manager_->ListAgents()) ToProto(view, response->add_agents());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* ControllerService::ListQueue(grpc::CallbackServerContext* context,
                                                       const v1::ListQueueRequest*,
                                                       v1::ListQueueResponse* response) {
  BENCH_ALLOW_OR_FINISH(Action::kRead);
  for (const JobView& view : manager_->Queue()) ToProto(view, response->add_jobs());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* ControllerService::SetBaseline(grpc::CallbackServerContext* context,
                                                         const v1::SetBaselineRequest* request,
                                                         v1::Baseline* response) {
  BENCH_ALLOW_OR_FINISH(Action::kSetBaseline);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  manager_->SetBaseline(
      request->job_id(),
      request->has_lower_tolerance_pct() ? request->lower_tolerance_pct() : kDefaultTolerancePct,
      request->has_upper_tolerance_pct() ? request->upper_tolerance_pct() : kDefaultTolerancePct,
      [reactor, response](absl::StatusOr<Baseline> baseline) {
        if (baseline.ok()) ToProto(*baseline, response);
        reactor->Finish(ToGrpcStatus(baseline.status()));
      });
  return reactor;
}

grpc::ServerUnaryReactor* ControllerService::ListBaselines(grpc::CallbackServerContext* context,
                                                           const v1::ListBaselinesRequest*,
                                                           v1::ListBaselinesResponse* response) {
  BENCH_ALLOW_OR_FINISH(Action::kRead);
  for (const Baseline& baseline : reads_->ListBaselines()) {
    ToProto(baseline, response->add_baselines());
  }
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* ControllerService::GpuVariability(
    grpc::CallbackServerContext* context, const v1::GpuVariabilityRequest* request,
    v1::GpuVariabilityResponse* response) {
  BENCH_ALLOW_OR_FINISH(Action::kRead);
  absl::StatusOr<VariabilityReport> report =
      reads_->Variability(request->threshold_pct(), request->model());
  if (report.ok()) {
    for (const bench::GpuVariability& gpu : report->gpus) ToProto(gpu, response->add_gpus());
    response->set_threshold_pct(report->threshold_pct);
  }
  return FinishNow(context, report.status());
}

grpc::ServerUnaryReactor* ControllerService::GetSamples(grpc::CallbackServerContext* context,
                                                        const v1::GetSamplesRequest* request,
                                                        v1::GetSamplesResponse* response) {
  BENCH_ALLOW_OR_FINISH(Action::kRead);
  absl::StatusOr<SamplesView> samples =
      reads_->GetSamples(request->job_id(), request->from_iteration(),
                         request->has_rank() ? std::optional<int>(request->rank()) : std::nullopt);
  if (samples.ok()) {
    ToProto(samples->view, response->mutable_job());
    for (const IterationSample& sample : samples->samples) {
      ToProto(sample, response->add_samples());
    }
  }
  return FinishNow(context, samples.status());
}

#undef BENCH_ALLOW_OR_FINISH

}  // namespace bench
