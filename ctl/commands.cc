#include "ctl/commands.h"

#include <map>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/spec_names.h"
#include "common/status_macros.h"
#include "ctl/command_table.h"
#include "report/compare.h"
#include "ctl/fleet_views.h"
#include "report/grid.h"
#include "report/job_logs.h"
#include "report/json_output.h"
#include "ctl/progress.h"
#include "ctl/queue_view.h"
#include "ctl/sweep.h"
#include "ctl/views.h"

namespace bench::ctl {
namespace {

namespace v1 = benchfleet::v1;

using report::BuildGrids;
using report::ComparisonJson;
using report::FormatComparison;
using report::RenderCellsCsv;
using report::RenderGridsMarkdown;
using report::RenderGridsTable;
using report::ToJson;
using report::ToJsonArray;
using Stub = Client::Stub;

absl::StatusOr<v1::JobStatus> GetJob(const std::string& job_id, const CommandContext& context) {
  v1::GetJobRequest request;
  request.set_job_id(job_id);
  return context.client->Call(&Stub::GetJob, request);
}

absl::StatusOr<v1::SubmitJobResponse> Submit(const v1::JobSpec& spec,
                                             const CommandContext& context) {
  v1::SubmitJobRequest request;
  *request.mutable_spec() = spec;
  return context.client->Call(&Stub::SubmitJob, request);
}

absl::StatusOr<std::vector<v1::JobStatus>> ListJobs(const CommandContext& context) {
  ASSIGN_OR_RETURN(v1::ListJobsResponse response,
                   context.client->Call(&Stub::ListJobs, v1::ListJobsRequest()));
  return std::vector<v1::JobStatus>(response.jobs().begin(), response.jobs().end());
}

// A finished job that left its cell without a figure: failed, cancelled, or succeeded
// without a measured throughput (e.g. no measured images).
bool EndedWithoutAFigure(const v1::JobStatus& job) {
  return job.state() == v1::JOB_STATE_FAILED || job.state() == v1::JOB_STATE_CANCELLED ||
         (job.state() == v1::JOB_STATE_SUCCEEDED && !job.has_throughput());
}

// A sweep job's outcome: the job and how it came to be.
struct SweepSubmitted {
  std::string job_id;
  const char* how;  // "new", "existing", "resubmitted"
};

constexpr int kMaxSweepRetries = 100;

absl::StatusOr<SweepSubmitted> SubmitSweepJob(const SweepJob& job,
                                              const CommandContext& context) {
  for (int retry = 0; retry <= kMaxSweepRetries; ++retry) {
    v1::JobSpec spec = job.spec;
    spec.set_request_id(RetryRequestId(job.spec.request_id(), retry));
    ASSIGN_OR_RETURN(v1::SubmitJobResponse response, Submit(spec, context));
    if (!response.existing()) {
      return SweepSubmitted{response.job_id(), retry == 0 ? "new" : "resubmitted"};
    }
    ASSIGN_OR_RETURN(v1::JobStatus existing, GetJob(response.job_id(), context));
    if (!EndedWithoutAFigure(existing)) return SweepSubmitted{response.job_id(), "existing"};
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "cell ", job.cell, ": more than ", kMaxSweepRetries,
      " attempts that ended without a figure; not resubmitting (use --again for fresh jobs)"));
}

std::string SweepNonce() {
  return absl::StrCat(absl::ToUnixNanos(absl::Now()), "-", getpid());
}

void SleepFor(const CommandContext& context) { absl::SleepFor(context.poll_interval); }

}  // namespace

absl::StatusOr<int> RunSubmit(const SubmitOptions& options, const CommandContext& context) {
  ASSIGN_OR_RETURN(v1::SubmitJobResponse response, Submit(options.spec, context));
  *context.out << response.job_id() << "\n" << std::flush;
  if (response.existing()) {
    *context.err << "benchctl: request id \"" << options.spec.request_id()
                 << "\" matched an earlier submit; not submitted again\n";
  }
  if (!options.wait) return 0;
  return WaitForJob(response.job_id(), context);
}

absl::StatusOr<int> WaitForJob(const std::string& job_id, const CommandContext& context) {
  v1::JobStatus job;
  bool have_job = false;
  bool bar_drawn = false;
  PlainProgressThrottle throttle;
  const absl::Status watched = context.client->Watch(job_id, [&](const v1::JobStatus& update) {
    job = update;
    have_job = true;
    if (context.err_is_terminal) {
      *context.err << "\r" << ProgressBarFor(job) << "\x1b[K" << std::flush;
      bar_drawn = true;
    } else if (throttle.ShouldPrint(job)) {
      *context.err << ProgressLine(job) << "\n" << std::flush;
    }
    return !IsTerminal(job.state());
  });
  if (bar_drawn) *context.err << "\n" << std::flush;
  if (!have_job || !IsTerminal(job.state())) {
    RETURN_IF_ERROR(watched);
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
  if (format == OutputFormat::kJson) {
    *context.out << ToJson(job);
    return 0;
  }
  // The measured window's data wait, from the stored samples (the API's samples carry
  // data_time_s; JobStatus has no figure of it).
  std::string data_wait;
  if (job.samples_stored() > 0) {
    v1::GetSamplesRequest request;
    request.set_job_id(job.id());
    request.set_from_iteration(job.spec().warmup_iterations() + 1);
    absl::StatusOr<v1::GetSamplesResponse> response =
        context.client->Call(&Stub::GetSamples, request);
    if (response.ok()) {
      data_wait = DataWaitText(
          std::vector<v1::IterationSample>(response->samples().begin(), response->samples().end()));
    } else {
      data_wait = absl::StrCat("unknown (GetSamples: ", response.status().message(), ")");
    }
  }
  *context.out << FormatJobText(job, data_wait);
  return 0;
}

absl::StatusOr<int> RunDiagnose(const std::string& job_id, OutputFormat format,
                                const CommandContext& context) {
  v1::DiagnoseJobRequest request;
  request.set_job_id(job_id);
  ASSIGN_OR_RETURN(v1::DiagnoseJobResponse response,
                   context.client->Call(&Stub::DiagnoseJob, request));
  if (format == OutputFormat::kJson) {
    *context.out << ToJson(response.diagnosis());
    return 0;
  }
  *context.out << FormatDiagnosisSection(response.diagnosis());
  return 0;
}

absl::StatusOr<int> RunList(OutputFormat format, const CommandContext& context) {
  ASSIGN_OR_RETURN(std::vector<v1::JobStatus> jobs, ListJobs(context));
  *context.out << (format == OutputFormat::kJson ? ToJsonArray(jobs) : FormatJobsTable(jobs));
  return 0;
}

absl::StatusOr<int> RunCancel(const std::string& job_id, const CommandContext& context) {
  v1::CancelJobRequest request;
  request.set_job_id(job_id);
  ASSIGN_OR_RETURN(v1::JobStatus job, context.client->Call(&Stub::CancelJob, request));
  *context.out << "job " << (job.id().empty() ? job_id : job.id()) << ": "
               << JobStateName(job.state());
  if (!job.reason().empty()) *context.out << " (" << job.reason() << ")";
  *context.out << "\n";
  return 0;
}

absl::StatusOr<int> RunAgents(OutputFormat format, const CommandContext& context) {
  ASSIGN_OR_RETURN(v1::ListAgentsResponse response,
                   context.client->Call(&Stub::ListAgents, v1::ListAgentsRequest()));
  std::vector<v1::AgentStatus> agents(response.agents().begin(), response.agents().end());
  *context.out << (format == OutputFormat::kJson ? ToJsonArray(agents)
                                                 : FormatAgentsTable(agents));
  return 0;
}

absl::StatusOr<int> RunQueue(OutputFormat format, const CommandContext& context) {
  absl::StatusOr<v1::ListQueueResponse> response =
      context.client->Call(&Stub::ListQueue, v1::ListQueueRequest());
  if (absl::IsUnimplemented(response.status())) {
    // RpcError put the code's name where the server sent no message.
    const absl::string_view detail = response.status().message();
    return absl::UnimplementedError(absl::StrCat(
        "benchd at ", context.client->server(), " does not implement ListQueue (UNIMPLEMENTED",
        detail == "UNIMPLEMENTED" ? "" : absl::StrCat(": ", detail), ")"));
  }
  RETURN_IF_ERROR(response.status());
  std::vector<v1::JobStatus> jobs(response->jobs().begin(), response->jobs().end());
  const absl::Time now = context.now.value_or(absl::Now());
  switch (format) {
    case OutputFormat::kJson:
      *context.out << ToJsonArray(jobs);
      break;
    case OutputFormat::kCsv:
      *context.out << RenderQueueCsv(jobs, now);
      break;
    default:
      *context.out << FormatQueueTable(jobs, now);
  }
  return 0;
}

absl::StatusOr<int> RunResults(const std::string& model, const ResultsFilter& filter,
                               OutputFormat format, GridMetric metric,
                               const CommandContext& context) {
  v1::ResultsRequest request;
  request.set_model(model);
  request.set_gpu_model(filter.gpu_model);
  request.set_node(filter.node);
  const absl::Time now = context.now.value_or(absl::Now());
  request.set_since_unix_ms(ResolveTimeBound(filter.since, now));
  request.set_until_unix_ms(ResolveTimeBound(filter.until, now));
  for (const auto& [key, value] : filter.labels) (*request.mutable_labels())[key] = value;
  request.set_simulated(filter.simulated);
  request.set_strict(filter.strict);
  ASSIGN_OR_RETURN(v1::ResultsResponse response, context.client->Call(&Stub::Results, request));
  if (format == OutputFormat::kJson) {  // the same bytes as GET /api/v1/results
    *context.out << report::RenderResultsJson(request, response);
    return 0;
  }
  const std::vector<v1::ResultCell> cells = report::CellsMatching(request, response);
  switch (format) {
    case OutputFormat::kCsv:
      *context.out << RenderCellsCsv(cells);
      break;
    case OutputFormat::kMarkdown:
    case OutputFormat::kTable:
    default: {
      if (cells.empty() && !model.empty()) {
        *context.out << "no results yet for model " << model << "\n";
        break;
      }
      if (cells.empty() && request.ByteSizeLong() > 0) {
        *context.out << "no results match the filters\n";
        break;
      }
      const auto grids = BuildGrids(cells, metric);
      *context.out << (format == OutputFormat::kMarkdown ? RenderGridsMarkdown(grids)
                                                         : RenderGridsTable(grids))
                   << report::FailingChecksFootnote(cells);
    }
  }
  return 0;
}

absl::StatusOr<int> RunSweep(const SweepOptions& options, const CommandContext& context) {
  const std::vector<SweepJob> sweep = ExpandSweep(options, options.again ? SweepNonce() : "");
  std::vector<std::string> ids;
  for (const SweepJob& job : sweep) {
    ASSIGN_OR_RETURN(SweepSubmitted submitted, SubmitSweepJob(job, context));
    *context.out << submitted.job_id << "  " << job.cell << "  " << submitted.how << "\n"
                 << std::flush;
    ids.push_back(submitted.job_id);
  }
  if (!options.wait) return 0;
  std::string last_line;
  bool drawn = false;
  std::vector<v1::JobStatus> jobs;
  while (true) {
    ASSIGN_OR_RETURN(std::vector<v1::JobStatus> all, ListJobs(context));
    std::map<std::string, v1::JobStatus> by_id;
    for (v1::JobStatus& job : all) by_id[job.id()] = std::move(job);
    jobs.clear();
    bool all_done = true;
    for (const std::string& id : ids) {
      auto it = by_id.find(id);
      if (it == by_id.end()) {
        ASSIGN_OR_RETURN(v1::JobStatus job, GetJob(id, context));
        by_id[id] = job;
        it = by_id.find(id);
      }
      jobs.push_back(it->second);
      if (!IsTerminal(it->second.state())) all_done = false;
    }
    const std::string line = SweepProgressLine(jobs);
    if (context.err_is_terminal) {
      *context.err << "\r" << line << "\x1b[K" << std::flush;
      drawn = true;
    } else if (line != last_line) {
      *context.err << line << "\n" << std::flush;
    }
    last_line = line;
    if (all_done) break;
    SleepFor(context);
  }
  if (drawn) *context.err << "\n" << std::flush;
  *context.out << SweepSummary(sweep, jobs) << std::flush;
  for (const v1::JobStatus& job : jobs) {
    if (job.state() != v1::JOB_STATE_SUCCEEDED) return 1;
  }
  return 0;
}

absl::StatusOr<int> RunGpus(const std::string& model, double threshold_pct, bool outliers_only,
                            OutputFormat format, const CommandContext& context) {
  v1::GpuVariabilityRequest request;
  request.set_model(model);
  request.set_threshold_pct(threshold_pct);
  ASSIGN_OR_RETURN(v1::GpuVariabilityResponse response,
                   context.client->Call(&Stub::GpuVariability, request));
  if (format == OutputFormat::kJson) {
    if (outliers_only) {
      v1::GpuVariabilityResponse kept = response;
      kept.clear_gpus();
      for (const auto& gpu : response.gpus()) {
        if (gpu.outlier()) *kept.add_gpus() = gpu;
      }
      *context.out << ToJson(kept);
    } else {
      *context.out << ToJson(response);
    }
    return 0;
  }
  *context.out << FormatGpuVariability(response, outliers_only);
  return 0;
}

absl::StatusOr<int> RunBaseline(const std::string& job_id, std::optional<double> lower_pct,
                                std::optional<double> upper_pct,
                                const CommandContext& context) {
  v1::SetBaselineRequest request;
  request.set_job_id(job_id);
  if (lower_pct) request.set_lower_tolerance_pct(*lower_pct);
  if (upper_pct) request.set_upper_tolerance_pct(*upper_pct);
  ASSIGN_OR_RETURN(v1::Baseline baseline, context.client->Call(&Stub::SetBaseline, request));
  *context.out << FormatBaselineSet(baseline);
  return 0;
}

absl::StatusOr<int> RunBaselines(OutputFormat format, const CommandContext& context) {
  ASSIGN_OR_RETURN(v1::ListBaselinesResponse response,
                   context.client->Call(&Stub::ListBaselines, v1::ListBaselinesRequest()));
  std::vector<v1::Baseline> baselines(response.baselines().begin(), response.baselines().end());
  *context.out << (format == OutputFormat::kJson ? ToJsonArray(baselines)
                                                 : FormatBaselinesTable(baselines));
  return 0;
}

absl::StatusOr<int> RunCompare(const std::string& job_a, const std::string& job_b,
                               OutputFormat format, const CommandContext& context) {
  ASSIGN_OR_RETURN(v1::JobStatus a, GetJob(job_a, context));
  ASSIGN_OR_RETURN(v1::JobStatus b, GetJob(job_b, context));
  *context.out << (format == OutputFormat::kJson ? ComparisonJson(a, b) : FormatComparison(a, b));
  return 0;
}

absl::StatusOr<int> RunLogs(const std::string& job_id, OutputFormat format, bool follow,
                            const CommandContext& context) {
  report::JobLogWriter writer(format == OutputFormat::kMllog  ? report::LogFormat::kMllog
                              : format == OutputFormat::kJsonl ? report::LogFormat::kJsonl
                                                               : report::LogFormat::kDllogger);
  int from = 0;
  bool begun = false;
  while (true) {
    v1::GetSamplesRequest request;
    request.set_job_id(job_id);
    request.set_from_iteration(from);
    if (std::optional<int> rank = writer.RankOfInterest()) request.set_rank(*rank);
    ASSIGN_OR_RETURN(v1::GetSamplesResponse response,
                     context.client->Call(&Stub::GetSamples, request));
    const v1::JobStatus& job = response.job();
    if (!begun && follow && job.state() == v1::JOB_STATE_QUEUED && response.samples().empty()) {
      SleepFor(context);  // its start times are not known yet: wait before the header
      continue;
    }
    if (!begun) {
      *context.out << writer.Begin(job);
      begun = true;
    }
    std::vector<v1::IterationSample> samples(response.samples().begin(),
                                             response.samples().end());
    *context.out << writer.Add(job, samples) << std::flush;
    if (IsTerminal(job.state())) {
      *context.out << writer.End(job) << std::flush;
      return 0;
    }
    if (!follow) {
      *context.err << "benchctl: job " << job_id << " is " << JobStateName(job.state())
                   << "; the log is not finished (-f follows it)\n";
      return 0;
    }
    from = writer.NextFromIteration(job);
    SleepFor(context);
  }
}

int RunCommand(const CliOptions& options, const CommandContext& context) {
  const CommandSpec& command = CommandSpecFor(options.command);
  if (command.run == nullptr) {  // help
    *context.out << UsageText();
    return 0;
  }
  const absl::StatusOr<int> result = command.run(options, context);
  if (!result.ok()) {
    *context.err << "benchctl: " << result.status().message() << "\n" << std::flush;
    return 1;
  }
  return *result;
}

}  // namespace bench::ctl
