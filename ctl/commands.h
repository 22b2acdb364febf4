// benchctl's subcommands, run through a Client (a real channel in main, an in-process
// server or a mock in tests). Results go to `out`; progress, notes and errors
// to `err`. Not thread-safe: one command at a time per context.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ctl/args.h"
#include "ctl/client.h"

namespace bench::ctl {

struct CommandContext {
  const Client* client = nullptr;          // not owned; every RPC goes through it
  std::ostream* out = nullptr;             // not owned
  std::ostream* err = nullptr;             // not owned
  bool err_is_terminal = false;            // draw the --wait progress bar in place
  absl::Duration poll_interval = absl::Seconds(1);  // sweep --wait and logs -f
  // "Now" for relative --since/--until; absl::Now when unset.
  std::optional<absl::Time> now;
};

// Runs `options.command` and returns the process exit code: 0 on success; 1 after an
// error (printed to err as "benchctl: <message>") or when a --wait job ends other than
// SUCCEEDED. kHelp prints the usage text to out and returns 0.
int RunCommand(const CliOptions& options, const CommandContext& context);

// The commands. Each returns the exit code, or an error whose message is what to print
// after "benchctl: " (the server's own message, which names the field, for refusals).
absl::StatusOr<int> RunSubmit(const SubmitOptions& options, const CommandContext& context);
// Follows a job with WatchJob until it is terminal, then prints FinalSummary to out.
// Returns 0 if it SUCCEEDED, else 1.
absl::StatusOr<int> WaitForJob(const std::string& job_id, const CommandContext& context);
absl::StatusOr<int> RunStatus(const std::string& job_id, OutputFormat format,
                           const CommandContext& context);
absl::StatusOr<int> RunList(OutputFormat format, const CommandContext& context);
absl::StatusOr<int> RunCancel(const std::string& job_id, const CommandContext& context);
absl::StatusOr<int> RunAgents(OutputFormat format, const CommandContext& context);
// ListQueue: the QUEUED jobs in the server's order as a table (kTable), CSV or JSON (an
// array of JobStatus). Ages are taken at context.now (absl::Now when unset).
absl::StatusOr<int> RunQueue(OutputFormat format, const CommandContext& context);
absl::StatusOr<int> RunResults(const std::string& model, const ResultsFilter& filter,
                               OutputFormat format, GridMetric metric,
                               const CommandContext& context);
// Submits every job of the sweep (see ctl/sweep.h for request ids), printing one line per
// job: "<job id>  <cell>  new|existing|resubmitted". With wait, polls until every job is
// terminal, showing "sweep: 5/12 done (...)" on err, then prints SweepSummary to out;
// returns 0 only if every job SUCCEEDED.
absl::StatusOr<int> RunSweep(const SweepOptions& options, const CommandContext& context);
absl::StatusOr<int> RunGpus(const std::string& model, double threshold_pct, bool outliers_only,
                            OutputFormat format, const CommandContext& context);
absl::StatusOr<int> RunBaseline(const std::string& job_id, std::optional<double> lower_pct,
                                std::optional<double> upper_pct,
                                const CommandContext& context);
absl::StatusOr<int> RunBaselines(OutputFormat format, const CommandContext& context);
absl::StatusOr<int> RunCompare(const std::string& job_a, const std::string& job_b,
                               OutputFormat format, const CommandContext& context);
// One GetSamples and the log as it stands; with follow, polls every poll_interval for new
// iterations until the job is terminal (printing nothing while it is still queued), then
// prints the closing lines. Without follow, a job still running is said so on err.
// `diagnose JOB`: the Controller's DiagnoseJob (the analyses again, on the stored data),
// printed as status's "diagnosis:" section (report/diagnosis_view.h) or as JSON.
absl::StatusOr<int> RunDiagnose(const std::string& job_id, OutputFormat format,
                                const CommandContext& context);
absl::StatusOr<int> RunLogs(const std::string& job_id, OutputFormat format, bool follow,
                            const CommandContext& context);

}  // namespace bench::ctl
