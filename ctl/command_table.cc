#include "ctl/command_table.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/build_info.h"
#include "common/names.h"
#include "common/spec_defaults.h"
#include "common/spec_names.h"
#include "common/status_macros.h"
#include "ctl/commands.h"
#include "ctl/flag_specs.h"
#include "ctl/flag_values.h"
#include "ctl/join_token_command.h"
#include "ctl/screen_command.h"

namespace bench::ctl {
namespace {

namespace v1 = benchfleet::v1;
absl::Status SetPrecision(ParseState& state, const std::string& by, v1::Precision precision) {
  v1::JobSpec& spec = state.options.submit.spec;
  if (state.precision_by && spec.precision() != precision) {
    return absl::InvalidArgumentError(absl::StrCat(by, " conflicts with ", *state.precision_by));
  }
  state.precision_by = by;
  spec.set_precision(precision);
  return absl::OkStatus();
}

// A --wall-time / --hang-timeout flag writing the spec with `set`.
FlagSpec Limit(std::string flag, void (v1::JobSpec::*set)(int32_t)) {
  return Value(flag, "D", [flag, set](ParseState& state, const std::string& value) {
    ASSIGN_OR_RETURN(int32_t seconds, ParseDurationSeconds(flag, value));
    (state.options.submit.spec.*set)(seconds);
    return absl::OkStatus();
  });
}

// The flags submit and sweep share: what every job of theirs gets.
std::vector<FlagSpec> JobFlags(bool with_defaults) {
  // "(100)": the default benchctl fills (common/spec_defaults.h), shown in submit's help.
  auto dflt = [&](int value) {
    return with_defaults ? absl::StrCat("(", value, ")") : std::string();
  };
  std::vector<FlagSpec> flags;
  // The models and data sources in the help come from common/names.h's lists.
  flags.push_back(Value(
      "model", JoinNames(kModelNames, "|", "|"),
      [](ParseState& state, const std::string& value) {
        state.options.submit.spec.set_model(value);
        state.options.model = value;
        return absl::OkStatus();
      },
      with_defaults ? absl::StrCat("(", kDefaultModel, ")") : ""));
  flags.push_back(Int(
      "iters", [](ParseState& s, int32_t n) { s.options.submit.spec.set_iterations(n); },
      dflt(kDefaultIterations)));
  flags.push_back(Int(
      "warmup", [](ParseState& s, int32_t n) { s.options.submit.spec.set_warmup_iterations(n); },
      dflt(kDefaultWarmupIterations)));
  flags.push_back(Int(
      "image-size", [](ParseState& s, int32_t n) { s.options.submit.spec.set_image_size(n); },
      dflt(kDefaultImageSize)));
  flags.push_back(Value(
      "data", JoinNames(kDataNames, "|", "|"),
      [](ParseState& state, const std::string& value) -> absl::Status {
        ASSIGN_OR_RETURN(v1::DataSource data, ParseDataSourceFlag(value));
        state.options.submit.spec.set_data(data);
        return absl::OkStatus();
      },
      with_defaults ? absl::StrCat("(", kDefaultData, ")") : ""));
  flags.push_back(Value("data-path", "PATH", [](ParseState& state, const std::string& value) {
    state.options.submit.spec.set_data_path(value);
    return absl::OkStatus();
  }));
  flags.push_back(Int("loader-threads", [](ParseState& s, int32_t n) {
    s.options.submit.spec.set_loader_threads(n);
  }));
  flags.push_back(Bool("--data-vs-compute", "data-vs-compute", [](ParseState& state, bool on) {
    state.options.submit.spec.set_data_vs_compute(on);
    return absl::OkStatus();
  }));
  flags.push_back(Value("name", "S", [](ParseState& state, const std::string& value) {
    state.options.submit.spec.set_name(value);
    return absl::OkStatus();
  }));
  flags.push_back(Repeatable(Value("label", "k=v", [](ParseState& state, const std::string& v) {
    ASSIGN_OR_RETURN(auto kv, ParseKeyValueFlag("label", v));
    (*state.options.submit.spec.mutable_labels())[kv.first] = kv.second;
    return absl::OkStatus();
  })));
  return flags;
}

// Where a job may run and for how long (submit and sweep).
std::vector<FlagSpec> ConstraintFlags() {
  std::vector<FlagSpec> flags;
  flags.push_back(Repeatable(Value("node", "AGENT", [](ParseState& state, const std::string& v) {
    if (v.empty()) return absl::InvalidArgumentError("--node: empty agent name");
    v1::JobSpec& spec = state.options.submit.spec;
    if (std::find(spec.allowed_nodes().begin(), spec.allowed_nodes().end(), v) ==
        spec.allowed_nodes().end()) {
      spec.add_allowed_nodes(v);
    }
    return absl::OkStatus();
  })));
  flags.push_back(
      Repeatable(Value("node-label", "k=v", [](ParseState& state, const std::string& v) {
        ASSIGN_OR_RETURN(auto kv, ParseKeyValueFlag("node-label", v));
        (*state.options.submit.spec.mutable_node_labels())[kv.first] = kv.second;
        return absl::OkStatus();
      })));
  flags.push_back(Limit("wall-time", &v1::JobSpec::set_wall_time_limit_s));
  flags.push_back(Limit("hang-timeout", &v1::JobSpec::set_hang_timeout_s));
  return flags;
}

std::vector<FlagSpec> Concat(std::vector<std::vector<FlagSpec>> parts) {
  std::vector<FlagSpec> all;
  for (auto& part : parts) {
    for (auto& flag : part) all.push_back(std::move(flag));
  }
  return all;
}

// devices, nodes and devices_per_node agree (see args.h); fills devices when omitted.
absl::Status CheckShape(ParseState& state) {
  v1::JobSpec& spec = state.options.submit.spec;
  if (!state.have_gpus) {
    if (!state.have_nodes || !state.have_per_node) {
      return absl::InvalidArgumentError(
          "submit: --gpus is required (or both --nodes and --gpus-per-node)");
    }
    const int64_t devices = ShapeDevices(spec.nodes(), spec.devices_per_node());
    if (devices > INT32_MAX || devices < INT32_MIN) {
      return absl::InvalidArgumentError(absl::StrCat("--nodes ", spec.nodes(),
                                                     " x --gpus-per-node ", spec.devices_per_node(),
                                                     " is too many devices"));
    }
    spec.set_devices(static_cast<int32_t>(devices));
    return absl::OkStatus();
  }
  if (state.have_nodes && state.have_per_node) {
    const int64_t product = ShapeDevices(spec.nodes(), spec.devices_per_node());
    if (product != spec.devices()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--gpus ", spec.devices(), " disagrees with --nodes ", spec.nodes(),
                       " x --gpus-per-node ", spec.devices_per_node(), " (= ", product,
                       "); give two of them, or make them agree"));
    }
    return absl::OkStatus();
  }
  const char* flag = state.have_nodes      ? "--nodes"
                     : state.have_per_node ? "--gpus-per-node"
                                           : nullptr;
  const int32_t divisor = state.have_nodes ? spec.nodes() : spec.devices_per_node();
  if (flag && divisor > 0 && spec.devices() > 0 && spec.devices() % divisor != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpus ", spec.devices(), " is not a multiple of ", flag, " ", divisor));
  }
  return absl::OkStatus();
}

absl::Status FinishSubmit(ParseState& state) {
  RETURN_IF_ERROR(CheckShape(state));
  if (!state.have_bs) return absl::InvalidArgumentError("submit: --bs is required");
  return absl::OkStatus();
}

absl::Status FinishSweep(ParseState& state) {
  SweepOptions& sweep = state.options.sweep;
  if (sweep.gpus.empty()) return absl::InvalidArgumentError("sweep: --gpus is required");
  if (sweep.batch_sizes.empty()) return absl::InvalidArgumentError("sweep: --bs is required");
  if (sweep.precisions.empty()) sweep.precisions.push_back(*ParsePrecision(kDefaultPrecision));
  v1::JobSpec base = state.options.submit.spec;
  base.clear_devices();
  base.clear_batch_size();
  base.clear_precision();
  base.clear_request_id();
  sweep.base = std::move(base);
  return absl::OkStatus();
}

std::vector<FlagSpec> SubmitFlags() {
  std::vector<FlagSpec> own;
  own.push_back(Required(Int("gpus", [](ParseState& s, int32_t n) {
    s.options.submit.spec.set_devices(n);
    s.have_gpus = true;
  })));
  own.push_back(Required(Int("bs", [](ParseState& s, int32_t n) {
    s.options.submit.spec.set_batch_size(n);
    s.have_bs = true;
  })));
  own.push_back(Bool("--amp", "amp", [](ParseState& state, bool on) {
    return on ? SetPrecision(state, "--amp", v1::PRECISION_AMP) : absl::OkStatus();
  }));
  own.push_back(Value("precision", JoinNames(kPrecisionNames, "|", "|"),
                      [](ParseState& state, const std::string& value) -> absl::Status {
                        ASSIGN_OR_RETURN(v1::Precision precision, ParsePrecisionFlag(value));
                        return SetPrecision(state, "--precision " + value, precision);
                      }));
  std::vector<FlagSpec> after;
  after.push_back(Value("request-id", "S", [](ParseState& state, const std::string& value) {
    state.options.submit.spec.set_request_id(value);
    return absl::OkStatus();
  }));
  after.push_back(Bool("--wait", "wait", [](ParseState& state, bool on) {
    state.options.submit.wait = on;
    return absl::OkStatus();
  }));
  after.push_back(Int("nodes", [](ParseState& s, int32_t n) {
    s.options.submit.spec.set_nodes(n);
    s.have_nodes = true;
  }));
  after.push_back(Int("gpus-per-node", [](ParseState& s, int32_t n) {
    s.options.submit.spec.set_devices_per_node(n);
    s.have_per_node = true;
  }));
  return Concat({std::move(own), JobFlags(true), std::move(after), ConstraintFlags()});
}

std::vector<FlagSpec> SweepFlags() {
  std::vector<FlagSpec> own;
  own.push_back(Required(Value("gpus", "1,8,32", [](ParseState& state, const std::string& v) {
    ASSIGN_OR_RETURN(state.options.sweep.gpus, ParseIntListFlag("gpus", v));
    return absl::OkStatus();
  })));
  own.push_back(Required(Value("bs", "128,256", [](ParseState& state, const std::string& v) {
    ASSIGN_OR_RETURN(state.options.sweep.batch_sizes, ParseIntListFlag("bs", v));
    return absl::OkStatus();
  })));
  own.push_back(Value("precision", "fp32,amp", [](ParseState& state, const std::string& v) {
    ASSIGN_OR_RETURN(state.options.sweep.precisions, ParsePrecisionListFlag(v));
    return absl::OkStatus();
  }));
  own.push_back(Value(
      "repeat", "N",
      [](ParseState& state, const std::string& v) {
        ASSIGN_OR_RETURN(int32_t n, ParseIntFlag("repeat", v));
        if (n < 1) {
          return absl::InvalidArgumentError(absl::StrCat("--repeat: must be at least 1, got ", n));
        }
        state.options.sweep.repeat = n;
        return absl::OkStatus();
      },
      "(1)"));
  std::vector<FlagSpec> after;
  after.push_back(Bool("--again", "again", [](ParseState& state, bool on) {
    state.options.sweep.again = on;
    return absl::OkStatus();
  }));
  after.push_back(Bool("--wait", "wait", [](ParseState& state, bool on) {
    state.options.sweep.wait = on;
    return absl::OkStatus();
  }));
  after.push_back(Refused(
      "amp", false, "--amp is not allowed in sweep: use --precision (e.g. --precision fp32,amp)"));
  after.push_back(
      Refused("request-id", true,
              "--request-id is not allowed in sweep: each job's id is derived from the sweep"));
  return Concat({std::move(own), JobFlags(false), ConstraintFlags(), std::move(after)});
}

FlagSpec ModelFilter() {
  return Value("model", "M", [](ParseState& state, const std::string& value) {
    state.options.model = value;
    state.options.submit.spec.set_model(value);
    return absl::OkStatus();
  });
}

std::vector<FlagSpec> ResultsFlags() {
  std::vector<FlagSpec> flags;
  flags.push_back(ModelFilter());
  flags.push_back(Value("gpu-model", "NAME", [](ParseState& state, const std::string& value) {
    state.options.filter.gpu_model = value;
    return absl::OkStatus();
  }));
  flags.push_back(Value("node", "AGENT", [](ParseState& state, const std::string& value) {
    state.options.filter.node = value;
    return absl::OkStatus();
  }));
  flags.push_back(Value("since", "T", [](ParseState& state, const std::string& value) {
    ASSIGN_OR_RETURN(state.options.filter.since, ParseTimeBoundFlag("since", value));
    return absl::OkStatus();
  }));
  flags.push_back(Value("until", "T", [](ParseState& state, const std::string& value) {
    ASSIGN_OR_RETURN(state.options.filter.until, ParseTimeBoundFlag("until", value));
    return absl::OkStatus();
  }));
  flags.push_back(Repeatable(Value("label", "k=v", [](ParseState& state, const std::string& v) {
    ASSIGN_OR_RETURN(auto kv, ParseKeyValueFlag("label", v));
    state.options.filter.labels[kv.first] = kv.second;
    return absl::OkStatus();
  })));
  flags.push_back(Bool("--simulated", "simulated", [](ParseState& state, bool on) {
    state.options.filter.simulated = on;
    return absl::OkStatus();
  }));
  flags.push_back(Bool("--strict", "strict", [](ParseState& state, bool on) {
    state.options.filter.strict = on;
    return absl::OkStatus();
  }));
  flags.push_back(Format({{"table", OutputFormat::kTable},
                          {"markdown", OutputFormat::kMarkdown},
                          {"csv", OutputFormat::kCsv},
                          {"json", OutputFormat::kJson}},
                         {{"md", OutputFormat::kMarkdown}}));
  flags.push_back(Value("metric", "M", [](ParseState& state, const std::string& value) {
    ASSIGN_OR_RETURN(state.options.metric, report::ParseGridMetric(value));
    return absl::OkStatus();
  }));
  return flags;
}

FlagSpec Percent(std::string flag, std::function<void(ParseState&, double)> set,
                 std::string default_text) {
  return Parsed<double>(std::move(flag), "PCT", ParseDoubleFlag, std::move(set),
                        std::move(default_text));
}

std::vector<CommandSpec> BuildTable() {
  const OutputFormat text = OutputFormat::kText;
  std::vector<CommandSpec> table;
  table.push_back(
      {"submit",
       Command::kSubmit,
       {},
       "",
       text,
       SubmitFlags(),
       "submit a benchmark job; prints its id. With --wait, follows it\n"
       "to the end and exits 0 only if it succeeded.\n"
       "--nodes/--gpus-per-node fix the placement shape (--gpus may then\n"
       "be left out: nodes x gpus-per-node); --node runs it only on those\n"
       "agents, --node-label only on agents with every such label\n"
       "(bench-agent --label); D is 90s, 30m, 2h, 1h30m, 1d or seconds:\n"
       "the attempt fails after --wall-time, or when no rank stores an\n"
       "iteration for --hang-timeout (unset: benchd's defaults)",
       FinishSubmit,
       [](const CliOptions& o, const CommandContext& c) { return RunSubmit(o.submit, c); }});
  table.push_back({"status",
                   Command::kStatus,
                   {"JOB"},
                   "status: missing JOB id",
                   text,
                   {TextOrJson()},
                   "one job in detail",
                   nullptr,
                   [](const CliOptions& o, const CommandContext& c) {
                     return RunStatus(o.job_id, o.format, c);
                   }});
  table.push_back({"diagnose",
                   Command::kDiagnose,
                   {"JOB"},
                   "diagnose: missing JOB id",
                   text,
                   {TextOrJson()},
                   "a finished job's diagnosis computed again from its stored data:\n"
                   "stragglers, excess time by cause, checks (docs/diagnosis.md)",
                   nullptr,
                   [](const CliOptions& o, const CommandContext& c) {
                     return RunDiagnose(o.job_id, o.format, c);
                   }});
  table.push_back(
      {"list",
       Command::kList,
       {},
       "",
       text,
       {TextOrJson()},
       "all jobs",
       nullptr,
       [](const CliOptions& o, const CommandContext& c) { return RunList(o.format, c); }});
  table.push_back(
      {"cancel",
       Command::kCancel,
       {"JOB"},
       "cancel: missing JOB id",
       text,
       {},
       "cancel a job; prints its resulting state",
       nullptr,
       [](const CliOptions& o, const CommandContext& c) { return RunCancel(o.job_id, c); }});
  table.push_back(
      {"agents",
       Command::kAgents,
       {},
       "",
       text,
       {TextOrJson()},
       "worker nodes, their devices, labels and what runs on them",
       nullptr,
       [](const CliOptions& o, const CommandContext& c) { return RunAgents(o.format, c); }});
  table.push_back(
      {"queue",
       Command::kQueue,
       {},
       "",
       OutputFormat::kTable,
       {Format({{"table", OutputFormat::kTable},
                {"csv", OutputFormat::kCsv},
                {"json", OutputFormat::kJson}})},
       "queued jobs in scheduling order, each with why it waits",
       nullptr,
       [](const CliOptions& o, const CommandContext& c) { return RunQueue(o.format, c); }});
  table.push_back(
      {"sweep",
       Command::kSweep,
       {},
       "",
       text,
       SweepFlags(),
       "submit every combination, each N times. Re-running the same sweep\n"
       "keeps its finished and running jobs and resubmits failed or\n"
       "cancelled ones; --again submits fresh jobs. With --wait, shows\n"
       "overall progress and exits 0 only if every job succeeded.",
       FinishSweep,
       [](const CliOptions& o, const CommandContext& c) { return RunSweep(o.sweep, c); }});
  table.push_back({"results",
                   Command::kResults,
                   {},
                   "",
                   OutputFormat::kTable,
                   ResultsFlags(),
                   "median images/s by device count, precision and batch size, with\n"
                   "the spread (min-max, or a 95% CI with 6+ runs), run counts,\n"
                   "speedup and scaling efficiency vs 1 device and baseline verdicts;\n"
                   "T is RFC3339 (2026-11-21T10:00:00Z) or a time ago (24h, 7d);\n"
                   "--metric energy_per_image|images_per_watt|power|sm_clock|temperature\n"
                   "fills the grid with GPU telemetry instead (csv/json carry all);\n"
                   "--simulated shows simulated jobs' cells (bench-sim-train) instead\n"
                   "of real ones, titled \"simulated\": the two never mix;\n"
                   "a trailing ! marks cells with runs whose checks failed (benchctl\n"
                   "status JOB shows them); --strict leaves those runs out",
                   nullptr,
                   [](const CliOptions& o, const CommandContext& c) {
                     return RunResults(o.model, o.filter, o.format, o.metric, c);
                   }});
  table.push_back(
      {"gpus",
       Command::kGpus,
       {},
       "",
       text,
       {Bool("--outliers", "outliers",
             [](ParseState& state, bool on) {
               state.options.outliers = on;
               return absl::OkStatus();
             }),
        Percent(
            "threshold", [](ParseState& s, double pct) { s.options.threshold_pct = pct; }, "(5)"),
        ModelFilter(), TextOrJson()},
       "GPUs ranked slowest first against the fleet; SLOW beyond PCT",
       nullptr,
       [](const CliOptions& o, const CommandContext& c) {
         return RunGpus(o.model, o.threshold_pct, o.outliers, o.format, c);
       }});
  table.push_back(
      {"baseline",
       Command::kBaseline,
       {"JOB"},
       "baseline: missing JOB id",
       text,
       {Percent(
            "lower", [](ParseState& s, double pct) { s.options.lower_pct = pct; }, "(5)"),
        Percent(
            "upper", [](ParseState& s, double pct) { s.options.upper_pct = pct; }, "(5)")},
       "make a finished job the baseline of its configuration",
       nullptr,
       [](const CliOptions& o, const CommandContext& c) {
         return RunBaseline(o.job_id, o.lower_pct, o.upper_pct, c);
       }});
  table.push_back(
      {"baselines",
       Command::kBaselines,
       {},
       "",
       text,
       {TextOrJson()},
       "all baselines",
       nullptr,
       [](const CliOptions& o, const CommandContext& c) { return RunBaselines(o.format, c); }});
  table.push_back({"compare",
                   Command::kCompare,
                   {"JOB_A", "JOB_B"},
                   "compare: expected two job ids (JOB_A JOB_B)",
                   text,
                   {TextOrJson()},
                   "two jobs side by side: spec, throughput (B/A), environment",
                   nullptr,
                   [](const CliOptions& o, const CommandContext& c) {
                     return RunCompare(o.job_id, o.job_id_b, o.format, c);
                   }});
  table.push_back({"logs",
                   Command::kLogs,
                   {"JOB"},
                   "logs: missing JOB id",
                   OutputFormat::kDllogger,
                   {Format({{"dllogger", OutputFormat::kDllogger},
                            {"mllog", OutputFormat::kMllog},
                            {"jsonl", OutputFormat::kJsonl}}),
                    Bool("-f,--follow", "follow",
                         [](ParseState& state, bool on) {
                           state.options.follow = on;
                           return absl::OkStatus();
                         })},
                   "a job's iterations as DLLogger (DLLL) or MLPerf (:::MLLOG) lines,\n"
                   "or JSON lines of every rank; -f follows until the job ends",
                   nullptr,
                   [](const CliOptions& o, const CommandContext& c) {
                     return RunLogs(o.job_id, o.format, o.follow, c);
                   }});
  table.push_back(ScreenCommand());
  table.push_back(JoinTokenCommand());
  table.push_back({"version",
                   Command::kVersion,
                   {},
                   "",
                   text,
                   {},
                   "benchctl's version and build id (also --version)",
                   nullptr,
                   [](const CliOptions&, const CommandContext& c) -> absl::StatusOr<int> {
                     *c.out << VersionLine("benchctl") << "\n";
                     return 0;
                   }});
  table.push_back({"help", Command::kHelp, {}, "", text, {}, "this text", nullptr, nullptr});
  return table;
}

}  // namespace

const std::vector<CommandSpec>& CommandTable() {
  static const std::vector<CommandSpec>* const table = new std::vector<CommandSpec>(BuildTable());
  return *table;
}

const FlagSpec& ServerFlag() {
  static const FlagSpec* const flag =
      new FlagSpec(Value("server", "HOST:PORT", [](ParseState& state, const std::string& v) {
        if (v.empty()) return absl::InvalidArgumentError("--server: empty address");
        state.options.server = v;
        return absl::OkStatus();
      }));
  return *flag;
}

const std::vector<FlagSpec>& GlobalFlags() {
  static const std::vector<FlagSpec>* const flags = [] {
    auto* all = new std::vector<FlagSpec>{ServerFlag()};
    auto file_flag = [](std::string name, std::string ConnectionFlags::*field) {
      return Value(name, "FILE", [name, field](ParseState& state, const std::string& v) {
        if (v.empty()) return absl::InvalidArgumentError(absl::StrCat("--", name, ": empty path"));
        state.options.connection.*field = v;
        return absl::OkStatus();
      });
    };
    all->push_back(file_flag("tls-ca", &ConnectionFlags::tls_ca));
    all->push_back(file_flag("tls-cert", &ConnectionFlags::tls_cert));
    all->push_back(file_flag("tls-key", &ConnectionFlags::tls_key));
    all->push_back(file_flag("token-file", &ConnectionFlags::token_file));
    all->push_back(Bool("--insecure", "insecure", [](ParseState& state, bool on) {
      state.options.connection.insecure = on;
      return absl::OkStatus();
    }));
    return all;
  }();
  return *flags;
}

const CommandSpec& CommandSpecFor(Command command) {
  for (const CommandSpec& spec : CommandTable()) {
    if (spec.command == command) return spec;
  }
  return CommandTable().back();  // help
}

}  // namespace bench::ctl
