// benchctl's commands, declared once: each command's name, positional arguments, help
// text, flags and handler. ParseArgs (args.cc) builds its CLI11 parser from this table
// and UsageText prints it; RunCommand (commands.cc) calls the handler it names. A flag
// is declared once with its names, its value's placeholder (or none: a boolean flag),
// its default as the usage text shows it, and what it does to the options being built;
// a flag shared by several commands (--server, submit's and sweep's job flags) is one
// FlagSpec added to each. Checks that span flags (submit's shape, sweep's lists) are the
// command's `finish`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ctl/args.h"

namespace bench::ctl {

struct CommandContext;

// What the flags write into while argv is parsed.
struct ParseState {
  CliOptions options;
  std::vector<std::string> positionals;     // the command's, in order
  std::optional<OutputFormat> format;       // --format as given (else the command's default)
  std::optional<std::string> precision_by;  // "--amp" or "--precision X", for conflicts
  bool have_gpus = false;
  bool have_nodes = false;
  bool have_per_node = false;
  bool have_bs = false;
};

struct FlagSpec {
  std::string names;         // as CLI11 takes them: "--gpus", "-f,--follow"
  std::string placeholder;   // the value in the usage text ("N", "k=v"); "" for a boolean
  std::string default_text;  // shown after the placeholder, e.g. "(100)"; "" for none
  bool required = false;     // shown without brackets (the check itself is in `finish`)
  bool repeatable = false;   // shown with "..."
  bool hidden = false;       // left out of the usage text
  // Applies one occurrence, in argv order. `value` is the text after the flag (for a
  // boolean: "true" when given bare, else what followed "=").
  std::function<absl::Status(ParseState&, const std::string& value)> apply;
};

struct CommandSpec {
  const char* name;
  Command command;
  std::vector<std::string> positionals;  // e.g. {"JOB"}, {"JOB_A", "JOB_B"}
  const char* missing_positional;        // the error when too few are given
  OutputFormat default_format;
  std::vector<FlagSpec> flags;
  const char* help;  // lines, each indented in the usage text
  // Checks and completes what the flags left, after all of them (may be null).
  absl::Status (*finish)(ParseState&);
  // Runs the command (null for help, which main prints itself).
  absl::StatusOr<int> (*run)(const CliOptions&, const CommandContext&);
  // How many of the last positionals may be left out (shown in brackets).
  size_t optional_positionals = 0;
};

// Every command, in the order the usage text lists them.
const std::vector<CommandSpec>& CommandTable();
// --server, accepted before or after every command.
const FlagSpec& ServerFlag();
// --server and the credential flags (--tls-ca, --tls-cert, --tls-key, --token-file), all
// accepted before or after every command.
const std::vector<FlagSpec>& GlobalFlags();
// The entry for `command` (every Command has one).
const CommandSpec& CommandSpecFor(Command command);

}  // namespace bench::ctl
