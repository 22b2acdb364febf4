#include "ctl/screen_command.h"

#include <algorithm>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/names.h"
#include "common/spec_defaults.h"
#include "common/spec_names.h"
#include "common/status_macros.h"
#include "ctl/flag_specs.h"
#include "ctl/flag_values.h"
#include "report/json_output.h"
#include "report/screen_view.h"

namespace bench::ctl {
namespace {

namespace v1 = benchfleet::v1;
using Stub = Client::Stub;

constexpr char kScreeningLabel[] = "screening";  // server/results/screening_inputs.h's
constexpr int kDefaultScreenIterations = 500;    // SC22's 500 iterations per GPU
constexpr int kDefaultScreenBatch = 64;          // SC22's ResNet-50 batch

ScreenOptions& Screen(ParseState& state) { return state.options.screen; }

FlagSpec Limit(std::string flag, void (v1::JobSpec::*set)(int32_t)) {
  return Value(flag, "D", [flag, set](ParseState& state, const std::string& value) {
    ASSIGN_OR_RETURN(int32_t seconds, ParseDurationSeconds(flag, value));
    (Screen(state).base.*set)(seconds);
    return absl::OkStatus();
  });
}

std::vector<FlagSpec> Flags() {
  std::vector<FlagSpec> flags;
  flags.push_back(Repeatable(Value("node", "AGENT", [](ParseState& state, const std::string& v) {
    if (v.empty()) return absl::InvalidArgumentError("--node: empty agent name");
    std::vector<std::string>& nodes = Screen(state).nodes;
    if (std::find(nodes.begin(), nodes.end(), v) == nodes.end()) nodes.push_back(v);
    return absl::OkStatus();
  })));
  flags.push_back(
      Repeatable(Value("node-label", "k=v", [](ParseState& state, const std::string& v) {
        ASSIGN_OR_RETURN(auto kv, ParseKeyValueFlag("node-label", v));
        Screen(state).node_labels[kv.first] = kv.second;
        return absl::OkStatus();
      })));
  flags.push_back(Value(
      "model", JoinNames(kModelNames, "|", "|"),
      [](ParseState& state, const std::string& value) {
        Screen(state).base.set_model(value);
        return absl::OkStatus();
      },
      "(resnet50)"));
  flags.push_back(Int(
      "iters", [](ParseState& s, int32_t n) { Screen(s).base.set_iterations(n); },
      absl::StrCat("(", kDefaultScreenIterations, ")")));
  flags.push_back(Int(
      "warmup",
      [](ParseState& s, int32_t n) {
        Screen(s).base.set_warmup_iterations(n);
        Screen(s).warmup_given = true;
      },
      absl::StrCat("(", kDefaultWarmupIterations, ")")));
  flags.push_back(Int(
      "bs", [](ParseState& s, int32_t n) { Screen(s).base.set_batch_size(n); },
      absl::StrCat("(", kDefaultScreenBatch, ")")));
  flags.push_back(Value("precision", JoinNames(kPrecisionNames, "|", "|"),
                        [](ParseState& state, const std::string& value) -> absl::Status {
                          ASSIGN_OR_RETURN(v1::Precision precision, ParsePrecisionFlag(value));
                          Screen(state).base.set_precision(precision);
                          return absl::OkStatus();
                        }));
  flags.push_back(Int(
      "image-size", [](ParseState& s, int32_t n) { Screen(s).base.set_image_size(n); },
      absl::StrCat("(", kDefaultImageSize, ")")));
  flags.push_back(Limit("wall-time", &v1::JobSpec::set_wall_time_limit_s));
  flags.push_back(Limit("hang-timeout", &v1::JobSpec::set_hang_timeout_s));
  flags.push_back(Value("id", "ID", [](ParseState& state, const std::string& value) {
    if (value.empty()) return absl::InvalidArgumentError("--id: empty screening id");
    Screen(state).id = value;
    return absl::OkStatus();
  }));
  flags.push_back(Bool("--allow-cpu", "allow-cpu", [](ParseState& state, bool on) {
    Screen(state).allow_cpu = on;
    return absl::OkStatus();
  }));
  flags.push_back(Bool("--wait", "wait", [](ParseState& state, bool on) {
    Screen(state).wait = on;
    return absl::OkStatus();
  }));
  flags.push_back(Value("show", "ID", [](ParseState& state, const std::string& value) {
    if (value.empty()) return absl::InvalidArgumentError("--show: empty screening id");
    Screen(state).show = value;
    return absl::OkStatus();
  }));
  flags.push_back(Bool("--list", "list", [](ParseState& state, bool on) {
    Screen(state).list = on;
    return absl::OkStatus();
  }));
  flags.push_back(TextOrJson());
  return flags;
}

absl::Status Finish(ParseState& state) {
  ScreenOptions& options = Screen(state);
  const bool runs = !options.nodes.empty() || !options.node_labels.empty() ||
                    options.base.ByteSizeLong() > 0 || options.warmup_given ||
                    !options.id.empty() || options.wait || options.allow_cpu;
  if (!options.show.empty() && options.list) {
    return absl::InvalidArgumentError("screen: --show and --list go alone, not together");
  }
  if ((!options.show.empty() || options.list) && runs) {
    return absl::InvalidArgumentError(
        absl::StrCat("screen ", options.list ? "--list" : "--show",
                     ": only --format goes with it (it starts no jobs)"));
  }
  if (!options.show.empty() || options.list) return absl::OkStatus();
  if (options.base.model().empty()) options.base.set_model(kDefaultModel);
  if (options.base.iterations() == 0) options.base.set_iterations(kDefaultScreenIterations);
  if (options.base.batch_size() == 0) options.base.set_batch_size(kDefaultScreenBatch);
  if (!options.warmup_given) options.base.set_warmup_iterations(kDefaultWarmupIterations);
  if (options.base.image_size() == 0) options.base.set_image_size(kDefaultImageSize);
  if (options.base.precision() == v1::PRECISION_UNSPECIFIED) {
    options.base.set_precision(*ParsePrecision(kDefaultPrecision));
  }
  return absl::OkStatus();
}

bool HasLabels(const v1::AgentStatus& agent, const std::map<std::string, std::string>& labels) {
  for (const auto& [key, value] : labels) {
    auto it = agent.inventory().labels().find(key);
    if (it == agent.inventory().labels().end() || it->second != value) return false;
  }
  return true;
}

// Polls ListScreenings until the screening has no pending job, showing progress on err.
absl::Status WaitForScreening(const std::string& id, const CommandContext& context) {
  std::string last;
  for (;;) {
    ASSIGN_OR_RETURN(v1::ListScreeningsResponse list,
                     context.client->Call(&Stub::ListScreenings, v1::ListScreeningsRequest()));
    const v1::ScreeningSummary* found = nullptr;
    for (const v1::ScreeningSummary& s : list.screenings()) {
      if (s.screening_id() == id) found = &s;
    }
    if (found == nullptr) {
      return absl::NotFoundError(absl::StrCat("screening ", id, " has no jobs on the server"));
    }
    const std::string line =
        absl::StrCat("screen: ", found->jobs() - found->pending(), "/", found->jobs(), " done (",
                     found->succeeded(), " succeeded, ", found->failed(), " failed)");
    if (line != last) {
      *context.err << line << "\n" << std::flush;
      last = line;
    }
    if (found->pending() == 0) return absl::OkStatus();
    absl::SleepFor(context.poll_interval);
  }
}

absl::StatusOr<int> ShowScreening(const std::string& id, OutputFormat format,
                                  const CommandContext& context) {
  v1::ScreeningRequest request;
  request.set_screening_id(id);
  ASSIGN_OR_RETURN(v1::ScreeningReport report, context.client->Call(&Stub::GetScreening, request));
  *context.out << (format == OutputFormat::kJson ? report::ToJson(report) + "\n"
                                                 : report::RenderScreeningReport(report));
  return report.any_flagged() ? report::kScreenFlaggedExitCode : 0;
}

}  // namespace

CommandSpec ScreenCommand() {
  return {"screen",
          Command::kScreen,
          {},
          "",
          OutputFormat::kText,
          Flags(),
          "screen the fleet: one single-GPU job on every GPU of the\n"
          "connected agents (--node, --node-label narrow them), all at once;\n"
          "prints the screening id. With --wait, follows the jobs and prints a\n"
          "verdict per GPU (ok, slow +x %, fault, failed; the probable cause\n"
          "from its telemetry) and per node. --show ID prints a screening's\n"
          "verdicts again, --list every screening. Exits 3 when a GPU is\n"
          "flagged or a job failed. --allow-cpu screens CPU slots (tests)",
          Finish,
          [](const CliOptions& o, const CommandContext& c) {
            return RunScreen(o.screen, o.format, c);
          }};
}

std::string NewScreeningId(absl::Time now) {
  std::random_device device;
  return absl::StrCat("scr-", absl::FormatTime("%Y%m%d-%H%M%S", now, absl::UTCTimeZone()), "-",
                      absl::StrFormat("%04x", device() & 0xffff));
}

absl::StatusOr<std::vector<ScreenJob>> PlanScreenJobs(const ScreenOptions& options,
                                                      const std::string& screening_id,
                                                      const std::vector<v1::AgentStatus>& agents) {
  std::vector<const v1::AgentStatus*> chosen;
  std::set<std::string> connected;
  for (const v1::AgentStatus& agent : agents) {
    if (!agent.connected()) continue;
    const std::string& name = agent.inventory().name();
    connected.insert(name);
    const bool named =
        options.nodes.empty() ||
        std::find(options.nodes.begin(), options.nodes.end(), name) != options.nodes.end();
    if (named && HasLabels(agent, options.node_labels)) chosen.push_back(&agent);
  }
  std::vector<std::string> missing;
  for (const std::string& node : options.nodes) {
    if (connected.count(node) == 0) missing.push_back(node);
  }
  if (!missing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("screen: no connected agent named ",
                                                      absl::StrJoin(missing, ", "),
                                                      " (see benchctl agents)"));
  }
  if (chosen.empty()) {
    return absl::FailedPreconditionError(
        "screen: no connected agent matches --node/--node-label (see benchctl agents)");
  }
  std::sort(chosen.begin(), chosen.end(), [](const v1::AgentStatus* a, const v1::AgentStatus* b) {
    return a->inventory().name() < b->inventory().name();
  });
  std::vector<std::string> cpu_only;
  for (const v1::AgentStatus* agent : chosen) {
    if (agent->inventory().gpus().empty()) cpu_only.push_back(agent->inventory().name());
  }
  if (!cpu_only.empty() && !options.allow_cpu) {
    return absl::FailedPreconditionError(absl::StrCat(
        "screen: ", absl::StrJoin(cpu_only, ", "), cpu_only.size() == 1 ? " has" : " have",
        " no GPU (CPU slots only); screening compares GPUs. Leave it out with --node or "
        "--node-label, or pass --allow-cpu to screen CPU slots (tests, demonstrations)"));
  }
  std::vector<ScreenJob> jobs;
  for (const v1::AgentStatus* agent : chosen) {
    const v1::AgentInventory& inventory = agent->inventory();
    const int devices = inventory.gpus().empty() ? inventory.cpu_slots() : inventory.gpus_size();
    for (int i = 0; i < devices; ++i) {
      ScreenJob job;
      job.node = inventory.name();
      job.index = i;
      job.spec = options.base;
      job.spec.set_devices(1);
      job.spec.add_allowed_nodes(inventory.name());
      (*job.spec.mutable_labels())[kScreeningLabel] = screening_id;
      job.spec.set_request_id(absl::StrCat("screen-", screening_id, "-", inventory.name(), "-", i));
      job.spec.set_name(absl::StrCat("screen ", screening_id, " ", inventory.name(), " #", i));
      jobs.push_back(std::move(job));
    }
  }
  return jobs;
}

absl::StatusOr<int> RunScreen(const ScreenOptions& options, OutputFormat format,
                              const CommandContext& context) {
  if (options.list) {
    ASSIGN_OR_RETURN(v1::ListScreeningsResponse list,
                     context.client->Call(&Stub::ListScreenings, v1::ListScreeningsRequest()));
    *context.out << (format == OutputFormat::kJson ? report::ToJson(list) + "\n"
                                                   : report::RenderScreeningList(list));
    return 0;
  }
  if (!options.show.empty()) return ShowScreening(options.show, format, context);
  const std::string id =
      options.id.empty() ? NewScreeningId(context.now.value_or(absl::Now())) : options.id;
  ASSIGN_OR_RETURN(v1::ListAgentsResponse agents,
                   context.client->Call(&Stub::ListAgents, v1::ListAgentsRequest()));
  ASSIGN_OR_RETURN(
      std::vector<ScreenJob> jobs,
      PlanScreenJobs(options, id,
                     std::vector<v1::AgentStatus>(agents.agents().begin(), agents.agents().end())));
  *context.out << id << "\n" << std::flush;
  for (const ScreenJob& job : jobs) {
    v1::SubmitJobRequest request;
    *request.mutable_spec() = job.spec;
    absl::StatusOr<v1::SubmitJobResponse> response =
        context.client->Call(&Stub::SubmitJob, request);
    if (!response.ok()) {
      return absl::Status(response.status().code(),
                          absl::StrCat("screen ", id, ": submitting ", job.node, " #", job.index,
                                       ": ", response.status().message()));
    }
    *context.err << response->job_id() << "  " << job.node << " #" << job.index << "  "
                 << (response->existing() ? "existing" : "new") << "\n";
  }
  *context.err << "screen " << id << ": " << jobs.size() << " jobs submitted\n" << std::flush;
  if (!options.wait) return 0;
  RETURN_IF_ERROR(WaitForScreening(id, context));
  return ShowScreening(id, format, context);
}

}  // namespace bench::ctl
