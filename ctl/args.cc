#include "ctl/args.h"

#include <cstdint>
#include <exception>
#include <utility>

#include <CLI/CLI.hpp>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/spec_defaults.h"
#include "common/spec_names.h"
#include "ctl/command_table.h"

namespace bench::ctl {
namespace {

// A flag's own error, thrown out of CLI11 (which runs each flag as it is met) and caught
// in ParseArgs: the first bad flag in argv order is the one reported.
struct FlagError : std::exception {
  explicit FlagError(absl::Status s) : status(std::move(s)) {}
  const char* what() const noexcept override { return "flag error"; }
  absl::Status status;
};

void AddFlag(CLI::App* app, const FlagSpec& flag, ParseState* state) {
  auto each = [&flag, state](const std::string& value) {
    absl::Status status = flag.apply(*state, value);
    if (!status.ok()) throw FlagError(std::move(status));
  };
  CLI::Option* option =
      flag.placeholder.empty() ? app->add_flag(flag.names + "{true}") : app->add_option(flag.names);
  option->each(each)->trigger_on_parse()->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

// What CLI11 left over: an unknown flag (named without any "=value"), else nothing.
std::optional<std::string> FirstFlag(const std::vector<std::string>& extras) {
  for (const std::string& extra : extras) {
    if (extra.size() > 1 && extra[0] == '-') return extra.substr(0, extra.find('='));
  }
  return std::nullopt;
}

absl::StatusOr<CliOptions> Parse(const std::vector<std::string>& args,
                                 const std::string& env_server) {
  ParseState state;
  if (!env_server.empty()) state.options.server = env_server;
  {
    benchfleet::v1::JobSpec& spec = state.options.submit.spec;
    // The defaults benchctl fills (common/spec_defaults.h); data and devices from the
    // shape are benchd's to fill.
    spec.set_model(kDefaultModel);
    spec.set_precision(*ParsePrecision(kDefaultPrecision));
    spec.set_iterations(kDefaultIterations);
    spec.set_warmup_iterations(kDefaultWarmupIterations);
    spec.set_image_size(kDefaultImageSize);
  }
  CLI::App app("benchctl");
  app.set_help_flag();
  app.allow_extras();
  app.require_subcommand(0, 1);  // after the command, "list" is an argument, not a command
  for (const FlagSpec& flag : GlobalFlags()) AddFlag(&app, flag, &state);
  std::vector<std::pair<const CommandSpec*, CLI::App*>> commands;
  for (const CommandSpec& spec : CommandTable()) {
    CLI::App* sub = app.add_subcommand(spec.name);
    sub->set_help_flag();
    sub->allow_extras();
    for (const FlagSpec& flag : GlobalFlags()) AddFlag(sub, flag, &state);
    for (const FlagSpec& flag : spec.flags) AddFlag(sub, flag, &state);
    for (const std::string& name : spec.positionals) {
      sub->add_option(name)->each(
          [&state](const std::string& value) { state.positionals.push_back(value); });
    }
    commands.emplace_back(&spec, sub);
  }
  // CLI11 wants the arguments in reverse. It reads "--flag=" (an empty value after the
  // '=') as a missing value, so that one is handed over as "--flag" "".
  std::vector<std::string> reversed;
  for (auto it = args.rbegin(); it != args.rend(); ++it) {
    if (it->size() > 3 && it->compare(0, 2, "--") == 0 && it->back() == '=' &&
        it->find('=') == it->size() - 1) {
      reversed.emplace_back();
      reversed.push_back(it->substr(0, it->size() - 1));
    } else {
      reversed.push_back(*it);
    }
  }
  try {
    app.parse(reversed);
  } catch (const FlagError& e) {
    return e.status;
  } catch (const CLI::ArgumentMismatch& e) {
    // "--bs: 1 required TEXT missing": a value flag at the end of argv.
    const std::string what = e.what();
    return absl::InvalidArgumentError(
        absl::StrCat(what.substr(0, what.find(':')), ": missing value"));
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(e.what());
  }
  const std::vector<std::string> before = app.remaining();
  const CommandSpec* command = nullptr;
  CLI::App* sub = nullptr;
  for (const auto& [spec, candidate] : commands) {
    if (candidate->parsed()) {
      command = spec;
      sub = candidate;
    }
  }
  if (std::optional<std::string> flag = FirstFlag(before)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown flag ", *flag));
  }
  if (!before.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown command \"", before[0], "\""));
  }
  if (command == nullptr) return absl::InvalidArgumentError("missing command");
  CliOptions& options = state.options;
  options.command = command->command;
  if (command->command == Command::kHelp) return options;
  options.format = state.format.value_or(command->default_format);
  const std::vector<std::string> extras = sub->remaining();
  if (std::optional<std::string> flag = FirstFlag(extras)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown flag ", *flag, " for ", command->name));
  }
  if (command->finish) {
    absl::Status status = command->finish(state);
    if (!status.ok()) return status;
  }
  if (state.positionals.size() + command->optional_positionals < command->positionals.size()) {
    return absl::InvalidArgumentError(command->missing_positional);
  }
  if (!state.positionals.empty()) options.job_id = state.positionals[0];
  if (state.positionals.size() > 1) options.job_id_b = state.positionals[1];
  if (!extras.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(command->name, ": unexpected argument \"", extras[0], "\""));
  }
  return options;
}

}  // namespace

int64_t ResolveTimeBound(const TimeBound& bound, absl::Time now) {
  if (bound.at) return absl::ToUnixMillis(*bound.at);
  if (bound.ago) return absl::ToUnixMillis(now - *bound.ago);
  return 0;
}

absl::StatusOr<int32_t> ParseDurationSeconds(absl::string_view flag, absl::string_view value) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why, ", got \"", value, "\""));
  };
  absl::Duration duration;
  int64_t plain = 0;
  if (absl::SimpleAtoi(value, &plain)) {
    duration = absl::Seconds(plain);
  } else if (value.size() > 1 && value.back() == 'd' &&
             absl::SimpleAtoi(value.substr(0, value.size() - 1), &plain)) {
    duration = absl::Hours(24) * plain;
  } else if (!absl::ParseDuration(value, &duration) || value == "inf" || value == "-inf") {
    return bad("expected a duration (90s, 30m, 2h, 1h30m, 1d) or seconds");
  }
  if (duration <= absl::ZeroDuration()) return bad("must be positive");
  if (duration % absl::Seconds(1) != absl::ZeroDuration()) {
    return bad("expected whole seconds");
  }
  const int64_t seconds = absl::ToInt64Seconds(duration);
  if (seconds > INT32_MAX) return bad("too long");
  return static_cast<int32_t>(seconds);
}

absl::StatusOr<CliOptions> ParseArgs(const std::vector<std::string>& args,
                                     const std::string& env_server) {
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") return CliOptions();  // kHelp
    if (arg == "--version") {
      CliOptions version;
      version.command = Command::kVersion;
      return version;
    }
  }
  return Parse(args, env_server);
}

namespace {

constexpr size_t kUsageWidth = 90;
constexpr char kHelpIndent[] = "                 ";  // 17 columns

// "[--iters N (100)]", "--gpus N", "[--label k=v ...]", "[--wait]".
std::string Synopsis(const FlagSpec& flag) {
  std::string text = flag.names.substr(0, flag.names.find(','));  // "-f" of "-f,--follow"
  if (!flag.placeholder.empty()) absl::StrAppend(&text, " ", flag.placeholder);
  if (!flag.default_text.empty()) absl::StrAppend(&text, " ", flag.default_text);
  if (flag.repeatable) absl::StrAppend(&text, " ...");
  return flag.required ? text : absl::StrCat("[", text, "]");
}

// One command: its synopsis wrapped under its name, then its help indented.
std::string CommandUsage(const CommandSpec& command) {
  std::vector<std::string> words;
  for (size_t i = 0; i < command.positionals.size(); ++i) {
    const bool optional = i + command.optional_positionals >= command.positionals.size();
    words.push_back(optional ? absl::StrCat("[", command.positionals[i], "]")
                             : command.positionals[i]);
  }
  for (const FlagSpec& flag : command.flags) {
    if (!flag.hidden) words.push_back(Synopsis(flag));
  }
  std::string out = absl::StrCat("  ", command.name);
  const std::string continuation(3 + std::string(command.name).size(), ' ');
  size_t line_start = 0;
  for (const std::string& word : words) {
    if (out.size() - line_start + 1 + word.size() > kUsageWidth) {
      absl::StrAppend(&out, "\n");
      line_start = out.size();
      absl::StrAppend(&out, continuation.substr(1));
    }
    absl::StrAppend(&out, " ", word);
  }
  std::vector<std::string> help = absl::StrSplit(command.help, '\n');
  if (out.size() - line_start < sizeof(kHelpIndent) - 1) {  // short: help on the same line
    out.resize(line_start + sizeof(kHelpIndent) - 1, ' ');
    absl::StrAppend(&out, help[0], "\n");
    help.erase(help.begin());
  } else {
    absl::StrAppend(&out, "\n");
  }
  for (const std::string& line : help) absl::StrAppend(&out, kHelpIndent, line, "\n");
  return out;
}

}  // namespace

std::string UsageText() {
  std::string out = absl::StrCat(
      "usage: benchctl [", Synopsis(ServerFlag()).substr(1, Synopsis(ServerFlag()).size() - 2),
      "] COMMAND [ARGS]\n"
      "\n"
      "The server is --server (before or after the command), else $BENCH_SERVER,\nelse ",
      kDefaultServer,
      ".\n\n"
      "Credentials (before or after the command; a flag wins over the environment):\n"
      "  --tls-ca FILE      verify benchd against this CA (turns TLS on) [$BENCH_TLS_CA]\n"
      "  --tls-cert FILE    client certificate, with --tls-key FILE [$BENCH_TLS_CERT,\n"
      "                     $BENCH_TLS_KEY]\n"
      "  --token-file FILE  bearer token, the file's first line [$BENCH_TOKEN_FILE, or the\n"
      "                     token itself in $BENCH_TOKEN]\n"
      "\ncommands:\n");
  for (const CommandSpec& command : CommandTable()) absl::StrAppend(&out, CommandUsage(command));
  absl::StrAppend(&out,
                  "\nexit status: 0 ok, 1 error (or a --wait job that did not succeed), "
                  "2 usage error\n");
  return out;
}

}  // namespace bench::ctl
