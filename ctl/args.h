// benchctl's command line: turns argv into an options struct, with no I/O. CLI11 splits
// argv by the commands and flags declared in ctl/command_table.h; each flag's value is
// read by that table's own parser (ctl/flag_values.h), in argv order, so the first bad
// flag is the one named. The usage text is printed from the same table.
//
// Grammar: benchctl [--server HOST:PORT] COMMAND [ARGS] [--server HOST:PORT]
// Flags take "--flag value" or "--flag=value"; boolean flags take no value (or
// "=true"/"=false"); a flag given twice keeps the last value, except repeatable ones
// (--label, --node, --node-label), which add up. Only syntax is checked here (unknown flags, missing values,
// non-integers, missing or extra positional arguments); ranges are the server's to
// judge, so "--gpus 0" parses fine and is sent as is. Sweep lists are checked here (empty
// items, non-numbers, duplicates), as is --repeat >= 1, since they shape what is sent.
// submit's placement shape is checked for consistency: without --gpus, --nodes and
// --gpus-per-node give devices = nodes x gpus-per-node; with all three they must agree.
// --wall-time / --hang-timeout take "90s", "30m", "2h", "1h30m", "1d" or plain seconds,
// whole seconds > 0.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "benchfleet/v1/types.pb.h"
#include "report/grid.h"

namespace bench::ctl {

using report::GridMetric;  // --metric

inline constexpr char kDefaultServer[] = "127.0.0.1:7600";

enum class Command {
  kHelp, kSubmit, kStatus, kList, kCancel, kAgents, kResults,
  kSweep, kGpus, kBaseline, kBaselines, kCompare, kLogs, kQueue, kVersion, kJoinToken,
  kScreen,
  kDiagnose,
};

enum class OutputFormat { kText, kJson, kTable, kMarkdown, kCsv, kDllogger, kMllog, kJsonl };

struct SubmitOptions {
  // devices, precision, batch_size, ... as typed; nodes / devices_per_node from --nodes /
  // --gpus-per-node, allowed_nodes from --node, node_labels from --node-label,
  // wall_time_limit_s / hang_timeout_s from --wall-time / --hang-timeout.
  benchfleet::v1::JobSpec spec;
  bool wait = false;
};

// `sweep`: every combination of the lists, each `repeat` times.
struct SweepOptions {
  // model, iterations, ..., constraints and limits (devices/precision/batch unset)
  benchfleet::v1::JobSpec base;
  std::vector<int> gpus;                                // --gpus 1,8,32
  std::vector<benchfleet::v1::Precision> precisions;    // --precision fp32,amp (fp32)
  std::vector<int> batch_sizes;                         // --bs 128,256
  int repeat = 1;                                       // --repeat N
  bool wait = false;                                    // --wait
  bool again = false;                                   // --again: fresh jobs
};

// --since / --until: an absolute time (RFC3339) or "that long ago" (24h, 7d).
struct TimeBound {
  std::optional<absl::Time> at;
  std::optional<absl::Duration> ago;
};
// Unix milliseconds of `bound` seen at `now`; 0 (no bound) when unset.
int64_t ResolveTimeBound(const TimeBound& bound, absl::Time now);

// `results` filters beyond --model (sent in ResultsRequest).
struct ResultsFilter {
  std::string gpu_model;  // --gpu-model
  std::string node;       // --node
  TimeBound since;        // --since
  TimeBound until;        // --until
  std::map<std::string, std::string> labels;  // --label k=v (repeatable)
  bool simulated = false;  // --simulated: simulated jobs' cells instead of real ones
  bool strict = false;                        // --strict: without runs failing a check
};

// `join-token create|list|revoke` (issue 24's agent bootstrap; ctl/join_token_command.h).
enum class JoinTokenAction { kCreate, kList, kRevoke };
struct JoinTokenOptions {
  JoinTokenAction action = JoinTokenAction::kList;
  int32_t uses = 1;            // create: --uses
  int64_t ttl_seconds = 3600;  // create: --ttl (1h)
  bool allow_replace = false;  // create: --allow-replace
  std::string description;     // create: --description
  std::string id;              // revoke: ID
};

// `screen` (fleet screening, ctl/screen_command.h).
struct ScreenOptions {
  // What every job runs: model (resnet50), iterations, warm-up, batch size (64), precision,
  // image size, limits, from the flags; devices, allowed_nodes, labels and request_id are
  // set per job.
  benchfleet::v1::JobSpec base;
  bool warmup_given = false;                        // --warmup (else 10)
  std::vector<std::string> nodes;                   // --node (none: every connected agent)
  std::map<std::string, std::string> node_labels;  // --node-label k=v: agents with each
  std::string id;                                   // --id (""): made from the time
  bool wait = false;                                // --wait
  bool allow_cpu = false;                           // --allow-cpu: CPU slots too
  std::string show;                                 // --show ID
  bool list = false;                                // --list
};

// --tls-ca, --tls-cert, --tls-key, --token-file as given ("" when not); main.cc fills
// what is missing from the environment (ctl/client.h ResolveCredentials).
struct ConnectionFlags {
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string token_file;
  bool insecure = false;  // --insecure: a token may go without TLS to a non-loopback server
};

struct CliOptions {
  Command command = Command::kHelp;
  std::string server = kDefaultServer;  // --server, else BENCH_SERVER, else the default
  ConnectionFlags connection;           // global: before or after the command
  SubmitOptions submit;                 // kSubmit
  SweepOptions sweep;                   // kSweep
  std::string job_id;                   // kStatus, kCancel, kBaseline, kLogs; kCompare: A
  std::string job_id_b;                 // kCompare: B
  std::string model;                    // kResults, kGpus: --model filter ("" = all)
  ResultsFilter filter;                 // kResults
  GridMetric metric = GridMetric::kImagesPerSecond;  // kResults: --metric
  bool outliers = false;                // kGpus: --outliers
  double threshold_pct = 0;             // kGpus: --threshold (0: the server's default, 5)
  std::optional<double> lower_pct;      // kBaseline: --lower (unset: the server's default, 5)
  std::optional<double> upper_pct;      // kBaseline: --upper (unset: the server's default, 5)
  bool follow = false;                  // kLogs: -f / --follow
  JoinTokenOptions join_token;          // kJoinToken
  ScreenOptions screen;                 // kScreen
  // kStatus/kList/kAgents/kGpus/kBaselines/kCompare: kText or kJson; kResults: kTable,
  // kMarkdown, kCsv or kJson; kQueue: kTable (default), kCsv or kJson; kLogs: kDllogger
  // (default), kMllog or kJsonl.
  OutputFormat format = OutputFormat::kText;
};

// `args` excludes argv[0]. `env_server` is $BENCH_SERVER ("" when unset).
// Errors are INVALID_ARGUMENT with a message naming the offending flag or argument;
// the caller prints it with the usage text and exits 2.
absl::StatusOr<CliOptions> ParseArgs(const std::vector<std::string>& args,
                                     const std::string& env_server);

// A --wall-time / --hang-timeout value in whole seconds: "90s", "30m", "2h", "1h30m",
// "2d" or plain seconds ("600"). Errors are INVALID_ARGUMENT naming --`flag`: not a
// duration, not positive, not whole seconds, or more than an int32 of seconds.
absl::StatusOr<int32_t> ParseDurationSeconds(absl::string_view flag, absl::string_view value);

// The usage text printed for --help and after usage errors, from the command table.
std::string UsageText();

}  // namespace bench::ctl
