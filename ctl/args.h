// benchctl's command line: turns argv into an options struct, with no I/O.
//
// Grammar: benchctl [--server HOST:PORT] COMMAND [ARGS] [--server HOST:PORT]
// Flags take "--flag value" or "--flag=value"; boolean flags take no value (or
// "=true"/"=false"). Only syntax is checked here (unknown flags, missing values,
// non-integers, missing or extra positional arguments); ranges are the server's to
// judge, so "--gpus 0" parses fine and is sent as is.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchfleet/v1/types.pb.h"
#include "ctl/grid.h"

namespace bench::ctl {

inline constexpr char kDefaultServer[] = "127.0.0.1:7600";

enum class Command { kHelp, kSubmit, kStatus, kList, kCancel, kAgents, kResults };

enum class OutputFormat { kText, kJson, kTable, kMarkdown, kCsv };

struct SubmitOptions {
  benchfleet::v1::JobSpec spec;  // devices, precision, batch_size, ... as typed
  bool wait = false;
};

struct CliOptions {
  Command command = Command::kHelp;
  std::string server = kDefaultServer;  // --server, else BENCH_SERVER, else the default
  SubmitOptions submit;                 // kSubmit
  std::string job_id;                   // kStatus, kCancel
  std::string model;                    // kResults: --model filter ("" = all)
  GridMetric metric = GridMetric::kImagesPerSecond;  // kResults: --metric
  // kStatus/kList/kAgents: kText or kJson; kResults: kTable, kMarkdown, kCsv or kJson.
  OutputFormat format = OutputFormat::kText;
};

// `args` excludes argv[0]. `env_server` is $BENCH_SERVER ("" when unset).
// Errors are INVALID_ARGUMENT with a message naming the offending flag or argument;
// the caller prints it with the usage text and exits 2.
absl::StatusOr<CliOptions> ParseArgs(const std::vector<std::string>& args,
                                     const std::string& env_server);

// The usage text printed for --help and after usage errors.
std::string UsageText();

}  // namespace bench::ctl
