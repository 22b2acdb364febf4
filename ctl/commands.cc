#include "ctl/commands.h"

#include <chrono>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/spec_names.h"
#include "common/status_macros.h"
#include "ctl/grid.h"
#include "ctl/json_output.h"
#include "ctl/progress.h"
#include "ctl/views.h"
#include <grpcpp/client_context.h>

namespace bench::ctl {
namespace {

namespace v1 = benchfleet::v1;

void SetDeadline(grpc::ClientContext* rpc, const CommandContext& context) {
  rpc->set_deadline(std::chrono::system_clock::now() +
                    absl::ToChronoMilliseconds(context.rpc_timeout));
}

absl::StatusOr<v1::JobStatus> GetJob(const std::string& job_id, const CommandContext& context) {
  grpc::ClientContext rpc;
  SetDeadline(&rpc, context);
  v1::GetJobRequest request;
  request.set_job_id(job_id);
  v1::JobStatus job;
  grpc::Status status = context.stub->GetJob(&rpc, request, &job);
  if (!status.ok()) return RpcError(status, context.server);
  return job;
}

}  // namespace

absl::Status RpcError(const grpc::Status& status, const std::string& server) {
  if (status.ok()) return absl::OkStatus();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StrCat("cannot reach benchd at ", server, ": ",
                                     status.error_message()));
  }
  return FromGrpcStatus(status);
}

absl::StatusOr<int> RunSubmit(const SubmitOptions& options, const CommandContext& context) {
  grpc::ClientContext rpc;
  SetDeadline(&rpc, context);
  v1::SubmitJobRequest request;
  *request.mutable_spec() = options.spec;
  v1::SubmitJobResponse response;
  grpc::Status status = context.stub->SubmitJob(&rpc, request, &response);
  if (!status.ok()) return RpcError(status, context.server);
  *context.out << response.job_id() << "\n" << std::flush;
  if (response.existing()) {
    *context.err << "benchctl: request id \"" << options.spec.request_id()
                 << "\" matched an earlier submit; not submitted again\n";
  }
  if (!options.wait) return 0;
  return WaitForJob(response.job_id(), context);
}

absl::StatusOr<int> WaitForJob(const std::string& job_id, const CommandContext& context) {
  grpc::ClientContext rpc;  // no deadline: a job may run for hours
  v1::WatchJobRequest request;
  request.set_job_id(job_id);
  std::unique_ptr<grpc::ClientReaderInterface<v1::JobStatus>> reader =
      context.stub->WatchJob(&rpc, request);
  v1::JobStatus job;
  bool have_job = false;
  bool bar_drawn = false;
  PlainProgressThrottle throttle;
  v1::JobStatus update;
  while (reader->Read(&update)) {
    job = update;
    have_job = true;
    if (context.err_is_terminal) {
      *context.err << "\r" << ProgressBarFor(job) << "\x1b[K" << std::flush;
      bar_drawn = true;
    } else if (throttle.ShouldPrint(job)) {
      *context.err << ProgressLine(job) << "\n" << std::flush;
    }
    if (IsTerminal(job.state())) break;
  }
  if (bar_drawn) *context.err << "\n" << std::flush;
  if (have_job && IsTerminal(job.state())) {
    rpc.TryCancel();
    reader->Finish();
  } else {
    grpc::Status status = reader->Finish();
    if (!status.ok()) return RpcError(status, context.server);
    // The stream ended cleanly without a terminal state: ask once more.
    ASSIGN_OR_RETURN(job, GetJob(job_id, context));
    if (!IsTerminal(job.state())) {
      return absl::UnavailableError(absl::StrCat("watch of job ", job_id,
                                                 " ended while it is ",
                                                 JobStateName(job.state())));
    }
  }
  *context.out << FinalSummary(job) << std::flush;
  return job.state() == v1::JOB_STATE_SUCCEEDED ? 0 : 1;
}

absl::StatusOr<int> RunStatus(const std::string& job_id, OutputFormat format,
                           const CommandContext& context) {
  ASSIGN_OR_RETURN(v1::JobStatus job, GetJob(job_id, context));
  *context.out << (format == OutputFormat::kJson ? ToJson(job) : FormatJobText(job));
  return 0;
}

absl::StatusOr<int> RunList(OutputFormat format, const CommandContext& context) {
  grpc::ClientContext rpc;
  SetDeadline(&rpc, context);
  v1::ListJobsResponse response;
  grpc::Status status = context.stub->ListJobs(&rpc, v1::ListJobsRequest(), &response);
  if (!status.ok()) return RpcError(status, context.server);
  std::vector<v1::JobStatus> jobs(response.jobs().begin(), response.jobs().end());
  *context.out << (format == OutputFormat::kJson ? ToJsonArray(jobs) : FormatJobsTable(jobs));
  return 0;
}

absl::StatusOr<int> RunCancel(const std::string& job_id, const CommandContext& context) {
  grpc::ClientContext rpc;
  SetDeadline(&rpc, context);
  v1::CancelJobRequest request;
  request.set_job_id(job_id);
  v1::JobStatus job;
  grpc::Status status = context.stub->CancelJob(&rpc, request, &job);
  if (!status.ok()) return RpcError(status, context.server);
  *context.out << "job " << (job.id().empty() ? job_id : job.id()) << ": "
               << JobStateName(job.state());
  if (!job.reason().empty()) *context.out << " (" << job.reason() << ")";
  *context.out << "\n";
  return 0;
}

absl::StatusOr<int> RunAgents(OutputFormat format, const CommandContext& context) {
  grpc::ClientContext rpc;
  SetDeadline(&rpc, context);
  v1::ListAgentsResponse response;
  grpc::Status status = context.stub->ListAgents(&rpc, v1::ListAgentsRequest(), &response);
  if (!status.ok()) return RpcError(status, context.server);
  std::vector<v1::AgentStatus> agents(response.agents().begin(), response.agents().end());
  *context.out << (format == OutputFormat::kJson ? ToJsonArray(agents)
                                                 : FormatAgentsTable(agents));
  return 0;
}

absl::StatusOr<int> RunResults(const std::string& model, OutputFormat format, GridMetric metric,
                            const CommandContext& context) {
  grpc::ClientContext rpc;
  SetDeadline(&rpc, context);
  v1::ResultsRequest request;
  request.set_model(model);
  v1::ResultsResponse response;
  grpc::Status status = context.stub->Results(&rpc, request, &response);
  if (!status.ok()) return RpcError(status, context.server);
  std::vector<v1::ResultCell> cells;
  for (const v1::ResultCell& cell : response.cells()) {
    if (model.empty() || cell.model() == model) cells.push_back(cell);
  }
  switch (format) {
    case OutputFormat::kCsv:
      *context.out << RenderCellsCsv(cells);
      break;
    case OutputFormat::kJson:
      *context.out << RenderCellsJson(cells);
      break;
    case OutputFormat::kMarkdown:
    case OutputFormat::kTable:
    default: {
      if (cells.empty() && !model.empty()) {
        *context.out << "no results yet for model " << model << "\n";
        break;
      }
      const auto grids = BuildGrids(cells, metric);
      *context.out << (format == OutputFormat::kMarkdown ? RenderGridsMarkdown(grids)
                                                         : RenderGridsTable(grids));
    }
  }
  return 0;
}

int RunCommand(const CliOptions& options, const CommandContext& context) {
  absl::StatusOr<int> result;
  switch (options.command) {
    case Command::kHelp:
      *context.out << UsageText();
      return 0;
    case Command::kSubmit:
      result = RunSubmit(options.submit, context);
      break;
    case Command::kStatus:
      result = RunStatus(options.job_id, options.format, context);
      break;
    case Command::kList:
      result = RunList(options.format, context);
      break;
    case Command::kCancel:
      result = RunCancel(options.job_id, context);
      break;
    case Command::kAgents:
      result = RunAgents(options.format, context);
      break;
    case Command::kResults:
      result = RunResults(options.model, options.format, options.metric, context);
      break;
  }
  if (!result.ok()) {
    *context.err << "benchctl: " << result.status().message() << "\n" << std::flush;
    return 1;
  }
  return *result;
}

}  // namespace bench::ctl
