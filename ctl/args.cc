#include "ctl/args.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/spec_names.h"
#include "common/status_macros.h"

namespace bench::ctl {
namespace {

using benchfleet::v1::JobSpec;

struct CommandName {
  const char* name;
  Command command;
};
constexpr CommandName kCommands[] = {
    {"help", Command::kHelp},     {"submit", Command::kSubmit}, {"status", Command::kStatus},
    {"list", Command::kList},     {"cancel", Command::kCancel}, {"agents", Command::kAgents},
    {"results", Command::kResults}, {"sweep", Command::kSweep},   {"gpus", Command::kGpus},
    {"baseline", Command::kBaseline}, {"baselines", Command::kBaselines},
    {"compare", Command::kCompare}, {"logs", Command::kLogs},     {"queue", Command::kQueue},
};

bool IsBooleanFlag(Command command, absl::string_view name) {
  switch (command) {
    case Command::kSubmit:
      return name == "amp" || name == "wait";
    case Command::kSweep:
      return name == "wait" || name == "again";
    case Command::kGpus:
      return name == "outliers";
    case Command::kLogs:
      return name == "follow";
    default:
      return false;
  }
}

bool IsValueFlag(Command command, absl::string_view name) {
  if (name == "server") return true;
  switch (command) {
    case Command::kSubmit:
      return name == "gpus" || name == "precision" || name == "bs" || name == "model" ||
             name == "iters" || name == "warmup" || name == "image-size" || name == "name" ||
             name == "label" || name == "request-id" || name == "nodes" ||
             name == "gpus-per-node" || name == "node" || name == "node-label" ||
             name == "wall-time" || name == "hang-timeout";
    case Command::kSweep:
      return name == "gpus" || name == "precision" || name == "bs" || name == "repeat" ||
             name == "model" || name == "iters" || name == "warmup" || name == "image-size" ||
             name == "name" || name == "label" || name == "node" || name == "node-label" ||
             name == "wall-time" || name == "hang-timeout";
    case Command::kStatus:
    case Command::kList:
    case Command::kAgents:
    case Command::kBaselines:
    case Command::kCompare:
    case Command::kLogs:
    case Command::kQueue:
      return name == "format";
    case Command::kResults:
      return name == "model" || name == "format" || name == "metric" || name == "gpu-model" ||
             name == "node" || name == "since" || name == "until" || name == "label";
    case Command::kGpus:
      return name == "threshold" || name == "model" || name == "format";
    case Command::kBaseline:
      return name == "lower" || name == "upper";
    default:
      return false;
  }
}

const char* CommandLabel(std::optional<Command> command) {
  if (!command) return nullptr;
  for (const auto& c : kCommands) {
    if (c.command == *command) return c.name;
  }
  return nullptr;
}

absl::Status ParseInt(absl::string_view flag, absl::string_view value, int32_t* out) {
  if (!absl::SimpleAtoi(value, out)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": expected an integer, got \"", value, "\""));
  }
  return absl::OkStatus();
}

absl::Status ParseDouble(absl::string_view flag, absl::string_view value, double* out) {
  if (!absl::SimpleAtod(value, out)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": expected a number, got \"", value, "\""));
  }
  return absl::OkStatus();
}

// "1,8,32": every item an integer, none empty, none repeated.
absl::Status ParseIntList(absl::string_view flag, absl::string_view value,
                          std::vector<int>* out) {
  for (absl::string_view item : absl::StrSplit(value, ',')) {
    if (item.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": empty item in \"", value, "\""));
    }
    int32_t n = 0;
    if (!absl::SimpleAtoi(item, &n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": expected integers, got \"", item, "\""));
    }
    if (std::find(out->begin(), out->end(), n) != out->end()) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", n, " given twice"));
    }
    out->push_back(n);
  }
  return absl::OkStatus();
}

absl::Status ParsePrecisionList(absl::string_view value,
                                std::vector<benchfleet::v1::Precision>* out) {
  for (absl::string_view item : absl::StrSplit(value, ',')) {
    if (item.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--precision: empty item in \"", value, "\""));
    }
    absl::StatusOr<benchfleet::v1::Precision> precision = ParsePrecision(item);
    if (!precision.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--precision: expected fp32, tf32, amp or bf16, got \"", item, "\""));
    }
    if (std::find(out->begin(), out->end(), *precision) != out->end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--precision: ", item, " given twice"));
    }
    out->push_back(*precision);
  }
  return absl::OkStatus();
}

// RFC3339 ("2026-11-21T10:00:00Z") or a duration ago ("24h", "90m", "7d").
absl::Status ParseTimeBound(absl::string_view flag, absl::string_view value, TimeBound* out) {
  absl::Time at;
  std::string error;
  if (absl::ParseTime(absl::RFC3339_full, value, &at, &error)) {
    out->at = at;
    out->ago.reset();
    return absl::OkStatus();
  }
  absl::Duration ago;
  bool parsed = false;
  if (value.size() > 1 && value.back() == 'd') {
    int32_t days = 0;
    if (absl::SimpleAtoi(value.substr(0, value.size() - 1), &days)) {
      ago = absl::Hours(24) * days;
      parsed = true;
    }
  } else {
    parsed = absl::ParseDuration(value, &ago);
  }
  if (!parsed || ago < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": expected an RFC3339 time (2026-11-21T10:00:00Z) or a duration ago "
        "(24h, 7d), got \"", value, "\""));
  }
  out->ago = ago;
  out->at.reset();
  return absl::OkStatus();
}

absl::Status ParseBool(absl::string_view flag, absl::string_view value, bool* out) {
  if (value == "true" || value == "1") {
    *out = true;
  } else if (value == "false" || value == "0") {
    *out = false;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": expected true or false, got \"", value, "\""));
  }
  return absl::OkStatus();
}

absl::Status ParseFormat(Command command, absl::string_view value, OutputFormat* out) {
  if (command == Command::kLogs) {
    if (value == "dllogger") {
      *out = OutputFormat::kDllogger;
    } else if (value == "mllog") {
      *out = OutputFormat::kMllog;
    } else if (value == "jsonl") {
      *out = OutputFormat::kJsonl;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "--format: unknown format \"", value, "\" (expected dllogger, mllog or jsonl)"));
    }
    return absl::OkStatus();
  }
  if (command == Command::kQueue) {
    if (value == "table") {
      *out = OutputFormat::kTable;
    } else if (value == "csv") {
      *out = OutputFormat::kCsv;
    } else if (value == "json") {
      *out = OutputFormat::kJson;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "--format: unknown format \"", value, "\" (expected table, csv or json)"));
    }
    return absl::OkStatus();
  }
  if (command == Command::kResults) {
    if (value == "table") {
      *out = OutputFormat::kTable;
    } else if (value == "markdown" || value == "md") {
      *out = OutputFormat::kMarkdown;
    } else if (value == "csv") {
      *out = OutputFormat::kCsv;
    } else if (value == "json") {
      *out = OutputFormat::kJson;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "--format: unknown format \"", value, "\" (expected table, markdown, csv or json)"));
    }
    return absl::OkStatus();
  }
  if (value == "text") {
    *out = OutputFormat::kText;
  } else if (value == "json") {
    *out = OutputFormat::kJson;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--format: unknown format \"", value, "\" (expected text or json)"));
  }
  return absl::OkStatus();
}

class Parser {
 public:
  explicit Parser(const std::string& env_server) {
    if (!env_server.empty()) options_.server = env_server;
    JobSpec& spec = options_.submit.spec;
    spec.set_model("resnet50");
    spec.set_precision(benchfleet::v1::PRECISION_FP32);
    spec.set_iterations(100);
    spec.set_warmup_iterations(10);
    spec.set_image_size(224);
  }

  absl::StatusOr<CliOptions> Parse(const std::vector<std::string>& args) {
    for (const std::string& arg : args) {
      if (arg == "--help" || arg == "-h") {
        CliOptions help;
        help.command = Command::kHelp;
        return help;
      }
    }
    for (size_t i = 0; i < args.size(); ++i) {
      absl::string_view arg = args[i];
      if (arg == "-f" && command_ == Command::kLogs) {
        options_.follow = true;
      } else if (arg.size() > 1 && arg[0] == '-') {
        absl::Status status = Flag(args, &i);
        if (!status.ok()) return status;
      } else if (!command_) {
        absl::Status status = SetCommand(arg);
        if (!status.ok()) return status;
      } else {
        positionals_.emplace_back(arg);
      }
    }
    return Finish();
  }

 private:
  absl::Status SetCommand(absl::string_view name) {
    for (const auto& c : kCommands) {
      if (name == c.name) {
        command_ = c.command;
        if (c.command == Command::kResults || c.command == Command::kQueue) {
          options_.format = OutputFormat::kTable;
        }
        if (c.command == Command::kLogs) options_.format = OutputFormat::kDllogger;
        return absl::OkStatus();
      }
    }
    return absl::InvalidArgumentError(absl::StrCat("unknown command \"", name, "\""));
  }

  absl::Status Flag(const std::vector<std::string>& args, size_t* i) {
    absl::string_view arg = args[*i];
    if (arg.substr(0, 2) != "--") {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", arg));
    }
    absl::string_view body = arg.substr(2);
    std::optional<std::string> value;
    if (size_t eq = body.find('='); eq != absl::string_view::npos) {
      value = std::string(body.substr(eq + 1));
      body = body.substr(0, eq);
    }
    const std::string name(body);
    const Command command = command_.value_or(Command::kHelp);
    if (IsBooleanFlag(command, name)) {
      bool on = true;
      if (value) {
        absl::Status status = ParseBool(name, *value, &on);
        if (!status.ok()) return status;
      }
      return Boolean(name, on);
    }
    if (command == Command::kSweep && name == "amp") {
      return absl::InvalidArgumentError(
          "--amp is not allowed in sweep: use --precision (e.g. --precision fp32,amp)");
    }
    if (command == Command::kSweep && name == "request-id") {
      return absl::InvalidArgumentError(
          "--request-id is not allowed in sweep: each job's id is derived from the sweep");
    }
    if (!IsValueFlag(command, name)) {
      if (const char* label = CommandLabel(command_); label && command != Command::kHelp) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown flag --", name, " for ", label));
      }
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    if (!value) {
      if (*i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, ": missing value"));
      }
      value = args[++*i];
    }
    return Value(name, *value);
  }

  absl::Status Boolean(const std::string& name, bool on) {
    if (command_ == Command::kSweep) {
      (name == "again" ? options_.sweep.again : options_.sweep.wait) = on;
      return absl::OkStatus();
    }
    if (name == "outliers") {
      options_.outliers = on;
      return absl::OkStatus();
    }
    if (name == "follow") {
      options_.follow = on;
      return absl::OkStatus();
    }
    if (name == "amp") {
      if (!on) return absl::OkStatus();
      return SetPrecision("--amp", benchfleet::v1::PRECISION_AMP);
    }
    options_.submit.wait = on;  // "wait"
    return absl::OkStatus();
  }

  absl::Status SetPrecision(const std::string& by, benchfleet::v1::Precision precision) {
    if (precision_by_ && options_.submit.spec.precision() != precision) {
      return absl::InvalidArgumentError(absl::StrCat(by, " conflicts with ", *precision_by_));
    }
    precision_by_ = by;
    options_.submit.spec.set_precision(precision);
    return absl::OkStatus();
  }

  absl::Status SweepValue(const std::string& name, const std::string& value) {
    SweepOptions& sweep = options_.sweep;
    if (name == "gpus") return ParseIntList(name, value, &sweep.gpus);
    if (name == "bs") return ParseIntList(name, value, &sweep.batch_sizes);
    if (name == "precision") return ParsePrecisionList(value, &sweep.precisions);
    if (name == "repeat") {
      int32_t n = 0;
      absl::Status status = ParseInt(name, value, &n);
      if (!status.ok()) return status;
      if (n < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("--repeat: must be at least 1, got ", n));
      }
      sweep.repeat = n;
      return absl::OkStatus();
    }
    return absl::OkStatus();
  }

  // --node, --node-label, --wall-time, --hang-timeout (submit and sweep).
  absl::Status ConstraintValue(const std::string& name, const std::string& value) {
    JobSpec& spec = options_.submit.spec;
    if (name == "node") {
      if (value.empty()) return absl::InvalidArgumentError("--node: empty agent name");
      if (std::find(spec.allowed_nodes().begin(), spec.allowed_nodes().end(), value) ==
          spec.allowed_nodes().end()) {
        spec.add_allowed_nodes(value);
      }
      return absl::OkStatus();
    }
    if (name == "node-label") {
      size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--node-label: expected key=value, got \"", value, "\""));
      }
      (*spec.mutable_node_labels())[value.substr(0, eq)] = value.substr(eq + 1);
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(int32_t seconds, ParseDurationSeconds(name, value));
    if (name == "wall-time") {
      spec.set_wall_time_limit_s(seconds);
    } else {
      spec.set_hang_timeout_s(seconds);
    }
    return absl::OkStatus();
  }

  // devices, nodes and devices_per_node agree (see args.h); fills devices when omitted.
  absl::Status CheckShape() {
    JobSpec& spec = options_.submit.spec;
    if (!have_gpus_) {
      if (!have_nodes_ || !have_per_node_) {
        return absl::InvalidArgumentError(
            "submit: --gpus is required (or both --nodes and --gpus-per-node)");
      }
      const int64_t devices = int64_t{spec.nodes()} * spec.devices_per_node();
      if (devices > INT32_MAX || devices < INT32_MIN) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--nodes ", spec.nodes(), " x --gpus-per-node ", spec.devices_per_node(),
            " is too many devices"));
      }
      spec.set_devices(static_cast<int32_t>(devices));
      return absl::OkStatus();
    }
    if (have_nodes_ && have_per_node_) {
      const int64_t product = int64_t{spec.nodes()} * spec.devices_per_node();
      if (product != spec.devices()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--gpus ", spec.devices(), " disagrees with --nodes ", spec.nodes(),
            " x --gpus-per-node ", spec.devices_per_node(), " (= ", product,
            "); give two of them, or make them agree"));
      }
      return absl::OkStatus();
    }
    const char* flag = have_nodes_ ? "--nodes" : have_per_node_ ? "--gpus-per-node" : nullptr;
    const int32_t divisor = have_nodes_ ? spec.nodes() : spec.devices_per_node();
    if (flag && divisor > 0 && spec.devices() > 0 && spec.devices() % divisor != 0) {
      return absl::InvalidArgumentError(absl::StrCat("--gpus ", spec.devices(),
                                                     " is not a multiple of ", flag, " ",
                                                     divisor));
    }
    return absl::OkStatus();
  }

  absl::Status Value(const std::string& name, const std::string& value) {
    JobSpec& spec = options_.submit.spec;
    int32_t n = 0;
    const Command command = command_.value_or(Command::kHelp);
    if (command == Command::kSweep &&
        (name == "gpus" || name == "bs" || name == "precision" || name == "repeat")) {
      return SweepValue(name, value);
    }
    if (command == Command::kResults && name == "label") {
      size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--label: expected key=value, got \"", value, "\""));
      }
      options_.filter.labels[value.substr(0, eq)] = value.substr(eq + 1);
      return absl::OkStatus();
    }
    if ((command == Command::kSubmit || command == Command::kSweep) &&
        (name == "node" || name == "node-label" || name == "wall-time" ||
         name == "hang-timeout")) {
      return ConstraintValue(name, value);
    }
    if (name == "gpu-model") {
      options_.filter.gpu_model = value;
      return absl::OkStatus();
    }
    if (name == "node") {
      options_.filter.node = value;
      return absl::OkStatus();
    }
    if (name == "since") return ParseTimeBound(name, value, &options_.filter.since);
    if (name == "until") return ParseTimeBound(name, value, &options_.filter.until);
    if (name == "threshold") return ParseDouble(name, value, &options_.threshold_pct);
    if (name == "lower" || name == "upper") {
      double pct = 0;
      RETURN_IF_ERROR(ParseDouble(name, value, &pct));
      (name == "lower" ? options_.lower_pct : options_.upper_pct) = pct;
      return absl::OkStatus();
    }
    if (name == "server") {
      if (value.empty()) return absl::InvalidArgumentError("--server: empty address");
      options_.server = value;
    } else if (name == "format") {
      return ParseFormat(command_.value_or(Command::kHelp), value, &options_.format);
    } else if (name == "model") {
      spec.set_model(value);
      options_.model = value;
    } else if (name == "metric") {
      absl::StatusOr<GridMetric> metric = ParseGridMetric(value);
      if (!metric.ok()) return metric.status();
      options_.metric = *metric;
    } else if (name == "precision") {
      absl::StatusOr<benchfleet::v1::Precision> precision = ParsePrecision(value);
      if (!precision.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--precision: expected fp32, tf32, amp or bf16, got \"", value, "\""));
      }
      return SetPrecision(absl::StrCat("--precision ", value), *precision);
    } else if (name == "name") {
      spec.set_name(value);
    } else if (name == "request-id") {
      spec.set_request_id(value);
    } else if (name == "label") {
      size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--label: expected key=value, got \"", value, "\""));
      }
      (*spec.mutable_labels())[value.substr(0, eq)] = value.substr(eq + 1);
    } else {
      absl::Status status = ParseInt(name, value, &n);
      if (!status.ok()) return status;
      if (name == "gpus") {
        spec.set_devices(n);
        have_gpus_ = true;
      } else if (name == "nodes") {
        spec.set_nodes(n);
        have_nodes_ = true;
      } else if (name == "gpus-per-node") {
        spec.set_devices_per_node(n);
        have_per_node_ = true;
      } else if (name == "bs") {
        spec.set_batch_size(n);
        have_bs_ = true;
      } else if (name == "iters") {
        spec.set_iterations(n);
      } else if (name == "warmup") {
        spec.set_warmup_iterations(n);
      } else if (name == "image-size") {
        spec.set_image_size(n);
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<CliOptions> Finish() {
    if (!command_) return absl::InvalidArgumentError("missing command");
    options_.command = *command_;
    size_t want = 0;
    switch (*command_) {
      case Command::kHelp:
        return options_;
      case Command::kSubmit:
        RETURN_IF_ERROR(CheckShape());
        if (!have_bs_) return absl::InvalidArgumentError("submit: --bs is required");
        break;
      case Command::kSweep: {
        if (options_.sweep.gpus.empty()) {
          return absl::InvalidArgumentError("sweep: --gpus is required");
        }
        if (options_.sweep.batch_sizes.empty()) {
          return absl::InvalidArgumentError("sweep: --bs is required");
        }
        if (options_.sweep.precisions.empty()) {
          options_.sweep.precisions.push_back(benchfleet::v1::PRECISION_FP32);
        }
        JobSpec base = options_.submit.spec;
        base.clear_devices();
        base.clear_batch_size();
        base.clear_precision();
        base.clear_request_id();
        options_.sweep.base = std::move(base);
        break;
      }
      case Command::kCompare:
        want = 2;
        if (positionals_.size() < 2) {
          return absl::InvalidArgumentError("compare: expected two job ids (JOB_A JOB_B)");
        }
        options_.job_id = positionals_[0];
        options_.job_id_b = positionals_[1];
        break;
      case Command::kStatus:
      case Command::kCancel:
      case Command::kBaseline:
      case Command::kLogs:
        want = 1;
        if (positionals_.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(CommandLabel(command_), ": missing JOB id"));
        }
        options_.job_id = positionals_[0];
        break;
      default:
        break;
    }
    if (positionals_.size() > want) {
      return absl::InvalidArgumentError(absl::StrCat(
          CommandLabel(command_), ": unexpected argument \"", positionals_[want], "\""));
    }
    return options_;
  }

  CliOptions options_;
  std::optional<Command> command_;
  std::vector<std::string> positionals_;
  std::optional<std::string> precision_by_;
  bool have_gpus_ = false;
  bool have_nodes_ = false;
  bool have_per_node_ = false;
  bool have_bs_ = false;
};

}  // namespace

int64_t ResolveTimeBound(const TimeBound& bound, absl::Time now) {
  if (bound.at) return absl::ToUnixMillis(*bound.at);
  if (bound.ago) return absl::ToUnixMillis(now - *bound.ago);
  return 0;
}

absl::StatusOr<int32_t> ParseDurationSeconds(absl::string_view flag, absl::string_view value) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why, ", got \"", value,
                                                   "\""));
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
  return Parser(env_server).Parse(args);
}

std::string UsageText() {
  return absl::StrCat(
      "usage: benchctl [--server HOST:PORT] COMMAND [ARGS]\n"
      "\n"
      "The server is --server (before or after the command), else $BENCH_SERVER, else ",
      kDefaultServer,
      ".\n"
      "\n"
      "commands:\n"
      "  submit --gpus N --bs N [--amp | --precision fp32|tf32|amp|bf16] [--model resnet50]\n"
      "         [--iters N (100)] [--warmup N (10)] [--image-size N (224)] [--name S]\n"
      "         [--label k=v ...] [--request-id S] [--wait]\n"
      "         [--nodes N] [--gpus-per-node N] [--node AGENT ...] [--node-label k=v ...]\n"
      "         [--wall-time D] [--hang-timeout D]\n"
      "                 submit a benchmark job; prints its id. With --wait, follows it\n"
      "                 to the end and exits 0 only if it succeeded.\n"
      "                 --nodes/--gpus-per-node fix the placement shape (--gpus may then\n"
      "                 be left out: nodes x gpus-per-node); --node runs it only on those\n"
      "                 agents, --node-label only on agents with every such label\n"
      "                 (bench-agent --label); D is 90s, 30m, 2h, 1h30m, 1d or seconds:\n"
      "                 the attempt fails after --wall-time, or when no rank stores an\n"
      "                 iteration for --hang-timeout (unset: benchd's defaults)\n"
      "  status JOB [--format text|json]\n"
      "                 one job in detail\n"
      "  list [--format text|json]\n"
      "                 all jobs\n"
      "  cancel JOB     cancel a job; prints its resulting state\n"
      "  agents [--format text|json]\n"
      "                 worker nodes, their devices, labels and what runs on them\n"
      "  queue [--format table|csv|json]\n"
      "                 queued jobs in scheduling order, each with why it waits\n"
      "  sweep --gpus 1,8,32 --bs 128,256 [--precision fp32,amp] [--repeat N (1)]\n"
      "         [--model M] [--iters N] [--warmup N] [--image-size N] [--name S]\n"
      "         [--label k=v ...] [--node AGENT ...] [--node-label k=v ...]\n"
      "         [--wall-time D] [--hang-timeout D] [--again] [--wait]\n"
      "                 submit every combination, each N times. Re-running the same sweep\n"
      "                 keeps its finished and running jobs and resubmits failed or\n"
      "                 cancelled ones; --again submits fresh jobs. With --wait, shows\n"
      "                 overall progress and exits 0 only if every job succeeded.\n"
      "  results [--model M] [--gpu-model NAME] [--node AGENT] [--since T] [--until T]\n"
      "          [--label k=v ...] [--format table|markdown|csv|json] [--metric M]\n"
      "                 median images/s by device count, precision and batch size, with\n"
      "                 the spread (min-max, or a 95% CI with 6+ runs), run counts,\n"
      "                 speedup and scaling efficiency vs 1 device and baseline verdicts;\n"
      "                 T is RFC3339 (2026-11-21T10:00:00Z) or a time ago (24h, 7d);\n"
      "                 --metric energy_per_image|images_per_watt|power|sm_clock|temperature\n"
      "                 fills the grid with GPU telemetry instead (csv/json carry all)\n"
      "  gpus [--outliers] [--threshold PCT (5)] [--model M] [--format text|json]\n"
      "                 GPUs ranked slowest first against the fleet; SLOW beyond PCT\n"
      "  baseline JOB [--lower PCT (5)] [--upper PCT (5)]\n"
      "                 make a finished job the baseline of its configuration\n"
      "  baselines [--format text|json]\n"
      "                 all baselines\n"
      "  compare JOB_A JOB_B [--format text|json]\n"
      "                 two jobs side by side: spec, throughput (B/A), environment\n"
      "  logs JOB [--format dllogger|mllog|jsonl] [-f]\n"
      "                 a job's iterations as DLLogger (DLLL) or MLPerf (:::MLLOG) lines,\n"
      "                 or JSON lines of every rank; -f follows until the job ends\n"
      "  help           this text\n"
      "\n"
      "exit status: 0 ok, 1 error (or a --wait job that did not succeed), 2 usage error\n");
}

}  // namespace bench::ctl
