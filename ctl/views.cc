#include "ctl/views.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/allocation_text.h"
#include "common/spec_names.h"
#include "report/diagnosis_view.h"
#include "report/grid.h"
#include "report/job_figures.h"
#include "report/text_table.h"

namespace bench::ctl {

using report::Align;
using report::DataVsComputeText;
using report::FormatBaselineVerdict;
using report::FormatRate;
using report::RenderPlainTable;
using report::TextTable;

using benchfleet::v1::AgentStatus;
using benchfleet::v1::JobSpec;
using benchfleet::v1::JobStatus;

std::string FormatTime(int64_t unix_ms) {
  if (unix_ms == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(unix_ms),
                          absl::LocalTimeZone());
}

std::string CompactRanges(const std::vector<int>& values) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < values.size();) {
    size_t j = i;
    while (j + 1 < values.size() && values[j + 1] == values[j] + 1) ++j;
    if (j - i >= 2) {
      parts.push_back(absl::StrCat(values[i], "-", values[j]));
    } else {
      for (size_t k = i; k <= j; ++k) parts.push_back(absl::StrCat(values[k]));
    }
    i = j + 1;
  }
  return absl::StrJoin(parts, ",");
}

std::string DescribeSpec(const JobSpec& spec) {
  return absl::StrCat(spec.model().empty() ? "(no model)" : spec.model(), ", ", spec.devices(),
                      spec.devices() == 1 ? " device" : " devices", ", ",
                      PrecisionName(spec.precision()), ", batch ", spec.batch_size(),
                      "/device, ", spec.iterations(), " iterations (", spec.warmup_iterations(),
                      " warm-up), ", spec.image_size(), " px images");
}

std::string FormatSeconds(int64_t seconds) {
  if (seconds <= 0) return "0s";
  struct Unit {
    int64_t seconds;
    const char* name;
  };
  constexpr Unit kUnits[] = {{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}};
  std::string out;
  for (const Unit& unit : kUnits) {
    const int64_t count = seconds / unit.seconds;
    if (count > 0) absl::StrAppend(&out, count, unit.name);
    seconds -= count * unit.seconds;
  }
  return out;
}

std::string FormatLabels(const google::protobuf::Map<std::string, std::string>& labels,
                         const char* separator) {
  std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  return absl::StrJoin(sorted, separator, absl::PairFormatter("="));
}

std::string DescribeShape(const JobSpec& spec) {
  if (spec.nodes() > 0 && spec.devices_per_node() > 0) {
    return absl::StrCat(spec.nodes(), spec.nodes() == 1 ? " node" : " nodes", " x ",
                        spec.devices_per_node(),
                        spec.devices_per_node() == 1 ? " device" : " devices");
  }
  if (spec.nodes() > 0) return absl::StrCat(spec.nodes(), spec.nodes() == 1 ? " node" : " nodes");
  if (spec.devices_per_node() > 0) {
    return absl::StrCat(spec.devices_per_node(),
                        spec.devices_per_node() == 1 ? " device" : " devices", " per node");
  }
  return "";
}

std::string DescribeConstraints(const JobSpec& spec) {
  std::vector<std::string> parts;
  if (!spec.allowed_nodes().empty()) {
    parts.push_back(absl::StrCat("nodes ", absl::StrJoin(spec.allowed_nodes(), ", ")));
  }
  if (!spec.node_labels().empty()) {
    parts.push_back(absl::StrCat("labels ", FormatLabels(spec.node_labels())));
  }
  return absl::StrJoin(parts, "; ");
}

std::string DescribeLimits(const JobSpec& spec) {
  std::vector<std::string> parts;
  if (spec.wall_time_limit_s() > 0) {
    parts.push_back(absl::StrCat("wall time ", FormatSeconds(spec.wall_time_limit_s())));
  }
  if (spec.hang_timeout_s() > 0) {
    parts.push_back(absl::StrCat("hang timeout ", FormatSeconds(spec.hang_timeout_s())));
  }
  return absl::StrJoin(parts, ", ");
}

std::string DescribeData(const JobSpec& spec) {
  const std::string data = DataSourceName(spec.data());
  if (data == kDataSynthetic && spec.loader_threads() == 0) return data;
  std::string out = data;
  if (!spec.data_path().empty()) absl::StrAppend(&out, " at ", spec.data_path());
  absl::StrAppend(&out, ", ",
                  spec.loader_threads() > 0
                      ? absl::StrCat(spec.loader_threads(), " loader thread",
                                     spec.loader_threads() == 1 ? "" : "s", " per rank")
                      : std::string("bench-train's default loader threads"));
  return out;
}

namespace {
double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}
}  // namespace

std::string DataWaitText(const std::vector<benchfleet::v1::IterationSample>& samples) {
  std::vector<double> data;
  std::vector<double> step;
  for (const auto& sample : samples) {
    if (sample.warmup()) continue;
    data.push_back(sample.data_time_s());
    step.push_back(sample.step_time_s());
  }
  if (data.empty()) return "no measured iterations";
  const double data_median = Median(data);
  const double step_median = Median(step);
  std::string out = absl::StrFormat("%.3g ms median per step", data_median * 1e3);
  if (step_median > 0) {
    absl::StrAppend(&out, absl::StrFormat(", %.1f%% of the median step time",
                                          100.0 * data_median / step_median));
  }
  absl::StrAppend(&out, " (", data.size(), data.size() == 1 ? " iteration" : " iterations", ")");
  return out;
}

std::string DescribeDevices(const benchfleet::v1::AgentInventory& inventory) {
  if (inventory.gpus_size() == 0) return absl::StrCat(inventory.cpu_slots(), " CPU slots");
  std::vector<std::pair<std::string, int>> groups;
  for (const auto& gpu : inventory.gpus()) {
    if (!groups.empty() && groups.back().first == gpu.name()) {
      ++groups.back().second;
    } else {
      groups.emplace_back(gpu.name(), 1);
    }
  }
  std::vector<std::string> parts;
  for (const auto& [name, count] : groups) {
    parts.push_back(absl::StrCat(count, "x ", name.empty() ? "GPU" : name));
  }
  return absl::StrJoin(parts, ", ");
}

std::string FormatPercentiles(const benchfleet::v1::Percentiles& p, const char* format) {
  if (p.count() == 0) return "no data";
  auto parsed = absl::ParsedFormat<'f'>::New(format);
  if (!parsed) return "no data";
  return absl::StrCat(absl::StrFormat(*parsed, p.p50()), " (", absl::StrFormat(*parsed, p.p5()),
                      "-", absl::StrFormat(*parsed, p.p95()), ")");
}

std::string FormatVersions(const benchfleet::v1::Environment& environment) {
  if (environment.versions().empty()) return "-";
  std::map<std::string, std::string> sorted(environment.versions().begin(),
                                            environment.versions().end());
  return absl::StrJoin(sorted, ", ", absl::PairFormatter("="));
}

std::string FormatRankDevicesTable(const JobStatus& job) {
  TextTable table;
  table.header = {"RANK", "NODE", "HOST", "DEVICE", "GPU", "UUID", "PRECISION"};
  table.align = {Align::kRight, Align::kLeft, Align::kLeft, Align::kRight, Align::kLeft,
                 Align::kLeft, Align::kLeft};
  auto dash = [](const std::string& text) { return text.empty() ? std::string("-") : text; };
  for (const auto& rank : job.rank_devices()) {
    table.rows.push_back({absl::StrCat(rank.rank()), dash(rank.agent()), dash(rank.hostname()),
                          absl::StrCat(rank.device_index()), dash(rank.gpu_name()),
                          dash(rank.gpu_uuid()), dash(rank.precision())});
  }
  return RenderPlainTable(table);
}

namespace {

std::string Throughput(const JobStatus& job) {
  return job.has_throughput() ? FormatRate(job.images_per_second()) : "no data";
}

std::string EnergyText(const JobStatus& job) {
  if (!job.has_energy_per_image_j()) return "no data";
  std::string text = absl::StrFormat("%.4g J/image", job.energy_per_image_j());
  if (job.has_images_per_second_per_watt()) {
    absl::StrAppend(&text, absl::StrFormat(" (%.4g images/s per W)",
                                           job.images_per_second_per_watt()));
  }
  return text;
}

std::string Spread(const benchfleet::v1::Percentiles& p, const char* format) {
  return FormatPercentiles(p, format);
}

std::string Indent(const std::string& text) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    absl::StrAppend(&out, "  ", line, "\n");
  }
  return out;
}

std::string PrecisionText(const JobStatus& job) {
  const std::string requested = PrecisionName(
      job.spec().precision() == benchfleet::v1::PRECISION_UNSPECIFIED
          ? benchfleet::v1::PRECISION_FP32
          : job.spec().precision());
  if (job.effective_precision().empty()) {
    return absl::StrCat("unknown until a rank starts (requested ", requested, ")");
  }
  if (!job.precision_mismatch().empty()) {
    return absl::StrCat(job.effective_precision(), " (MISMATCH: ", job.precision_mismatch(),
                        ")");
  }
  return absl::StrCat(job.effective_precision(), " (requested ", requested, ")");
}

std::string NonFiniteText(const JobStatus& job) {
  return absl::StrCat(job.nonfinite_losses(), " of ", job.samples_stored(),
                      " stored iterations had a NaN or infinite loss");
}

std::string SkippedText(const JobStatus& job) {
  if (job.ranks_summarized() == 0) {
    return IsTerminal(job.state()) ? "unknown: no rank reported its summary"
                                   : "unknown until a rank reports its summary";
  }
  return absl::StrCat(job.skipped_steps(), " fp16 steps skipped for overflow (summaries of ",
                      job.ranks_summarized(), " of ", job.spec().devices(), " ranks)");
}

std::string StateWithReason(const JobStatus& job) {
  std::string text = JobStateName(job.state());
  if (!job.reason().empty()) absl::StrAppend(&text, " (", job.reason(), ")");
  return text;
}

}  // namespace

std::string FormatJobText(const JobStatus& job, const std::string& data_wait) {
  const JobSpec& spec = job.spec();
  std::string out;
  auto line = [&out](absl::string_view key, absl::string_view value) {
    std::string label = key.empty() ? "" : absl::StrCat(key, ":");
    label.resize(std::max<size_t>(label.size() + 1, 12), ' ');
    absl::StrAppend(&out, label, value, "\n");
  };
  // A figure's heading: "images/s (simulated)" for a simulated job (issue 26), so that no
  // simulated figure is read as a real one.
  auto figure = [&job](absl::string_view heading) {
    return job.simulated() ? absl::StrCat(heading, " (simulated)") : std::string(heading);
  };
  line("id", job.id());
  line("name", spec.name().empty() ? "-" : spec.name());
  if (!job.submitted_by().empty()) line("submitted by", job.submitted_by());
  line("state", StateWithReason(job));
  if (job.simulated()) {
    line("simulated", "yes: every figure below comes from bench-sim-train, not from a GPU");
  }
  if (job.state() == benchfleet::v1::JOB_STATE_QUEUED && job.queue_position() > 0) {
    line("queue", absl::StrCat("position ", job.queue_position(),
                               job.queue_position() == 1 ? " (next)" : ""));
  }
  if (job.requeues() > 0) {
    line("requeues", absl::StrCat(job.requeues(), " (back in the queue after losing a node)"));
  }
  if (job.has_allocation()) {
    // "Slurm job 4711 RUNNING on node[1-2]" (common/allocation_text.h; not "ended:", the
    // job's state says it).
    const benchfleet::v1::Allocation& a = job.allocation();
    line("allocation", DescribeAllocation({a.system(), a.id(), a.state(), a.reason(), a.nodes()}));
  }
  line("spec", DescribeSpec(spec));
  line("data", DescribeData(spec));
  if (std::string shape = DescribeShape(spec); !shape.empty()) line("shape", shape);
  if (std::string constraints = DescribeConstraints(spec); !constraints.empty()) {
    line("constraints", constraints);
  }
  if (std::string limits = DescribeLimits(spec); !limits.empty()) line("limits", limits);
  if (!spec.labels().empty()) line("labels", FormatLabels(spec.labels()));
  if (!spec.request_id().empty()) line("request id", spec.request_id());
  line("attempt", absl::StrCat(job.attempt()));
  line("device", job.device_kind().empty() ? "-" : job.device_kind());
  if (job.placements().empty()) {
    line("placements", "-");
  } else {
    for (int i = 0; i < job.placements_size(); ++i) {
      const auto& placement = job.placements(i);
      std::vector<int> ranks(placement.ranks().begin(), placement.ranks().end());
      std::vector<int> devices(placement.device_indices().begin(),
                               placement.device_indices().end());
      std::string text = absl::StrCat(placement.agent(), ": ranks ", CompactRanges(ranks));
      if (!devices.empty()) absl::StrAppend(&text, " (devices ", CompactRanges(devices), ")");
      line(i == 0 ? "placements" : "", text);
    }
  }
  line("progress", absl::StrCat(job.iterations_done(), "/", spec.iterations(), " it"));
  line("samples", absl::StrCat(job.samples_stored(), " stored"));
  if (job.attempt() > 0) {
    line(figure("precision"), PrecisionText(job));
    line(figure("non-finite"), NonFiniteText(job));
    line(figure("skipped"), SkippedText(job));
  }
  line("parameters", job.parameters() > 0 ? absl::StrCat(job.parameters()) : "unknown");
  line(figure("images/s"), Throughput(job));
  if (!data_wait.empty()) line(figure("data wait"), data_wait);
  if (spec.data_vs_compute()) line(figure("vs compute"), DataVsComputeText(job));
  line(figure("energy"), EnergyText(job));
  if (std::string verdict = FormatBaselineVerdict(job.baseline()); !verdict.empty()) {
    line(figure("baseline"), verdict);
  }
  if (!job.environment().versions().empty()) line("versions", FormatVersions(job.environment()));
  if (!job.environment().hostnames().empty()) {
    line("hosts", absl::StrJoin(job.environment().hostnames(), ", "));
  }
  if (!job.telemetry_note().empty()) line("telemetry", job.telemetry_note());
  line("created", FormatTime(job.created_unix_ms()));
  if (job.rank_devices_size() > 0) {
    out += "ranks:\n";
    out += Indent(FormatRankDevicesTable(job));
  }
  if (job.gpu_telemetry_size() > 0) {
    out += job.simulated() ? "gpus (measured window, simulated):\n" : "gpus (measured window):\n";
    out += Indent(FormatGpuTelemetryTable(job));
  }
  if (job.has_diagnosis()) out += FormatDiagnosisSection(job.diagnosis());
  out += "history:\n";
  if (job.history().empty()) out += "  -\n";
  for (const auto& transition : job.history()) {
    absl::StrAppend(&out, "  ", FormatTime(transition.time_unix_ms()), "  ",
                    JobStateName(transition.state()));
    if (!transition.reason().empty()) absl::StrAppend(&out, "  ", transition.reason());
    out += "\n";
  }
  return out;
}

std::string FormatDiagnosisSection(const benchfleet::v1::JobDiagnosis& diagnosis) {
  return absl::StrCat("diagnosis:\n", Indent(report::DiagnosisText(diagnosis)));
}

std::string FormatGpuTelemetryTable(const JobStatus& job) {
  TextTable table;
  table.header = {"RANK", "NODE",          "GPU",        "UUID",      "SAMPLES",
                  "J/IMAGE", "POWER W p50 (p5-p95)", "SM MHz p50 (p5-p95)", "TEMP C p50",
                  "THROTTLE"};
  table.align = {Align::kRight, Align::kLeft,  Align::kRight, Align::kLeft, Align::kRight,
                 Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kLeft};
  for (const auto& gpu : job.gpu_telemetry()) {
    table.rows.push_back(
        {absl::StrCat(gpu.rank()), gpu.agent(), absl::StrCat(gpu.gpu_index()), gpu.gpu_uuid(),
         absl::StrCat(gpu.samples()),
         gpu.has_energy_per_image_j() ? absl::StrFormat("%.4g", gpu.energy_per_image_j())
                                      : "no data",
         Spread(gpu.power_w(), "%.1f"), Spread(gpu.sm_clock_mhz(), "%.0f"),
         gpu.temperature_c().count() > 0 ? absl::StrFormat("%.0f", gpu.temperature_c().p50())
                                         : "no data",
         gpu.throttle_reasons() == 0 ? "-" : absl::StrFormat("0x%x", gpu.throttle_reasons())});
  }
  return RenderPlainTable(table);
}

std::string FormatJobsTable(const std::vector<JobStatus>& jobs) {
  if (jobs.empty()) return "no jobs\n";
  TextTable table;
  table.header = {"ID",       "STATE",    "MODEL",    "DEVICES", "PRECISION",
                  "BS",       "PROGRESS", "IMAGES/S", "CREATED"};
  table.align = {Align::kLeft,  Align::kLeft,  Align::kLeft,  Align::kRight, Align::kLeft,
                 Align::kRight, Align::kRight, Align::kRight, Align::kLeft};
  for (const JobStatus& job : jobs) {
    table.rows.push_back(
        {job.id(), JobStateName(job.state()), job.spec().model(),
         absl::StrCat(job.spec().devices()), PrecisionName(job.spec().precision()),
         absl::StrCat(job.spec().batch_size()),
         absl::StrCat(job.iterations_done(), "/", job.spec().iterations()),
         job.simulated() ? absl::StrCat(Throughput(job), " (simulated)") : Throughput(job),
         FormatTime(job.created_unix_ms())});
  }
  return RenderPlainTable(table);
}

std::string FormatAgentsTable(const std::vector<AgentStatus>& agents) {
  if (agents.empty()) return "no agents\n";
  TextTable table;
  table.header = {"NAME", "ADDRESS", "DEVICES", "BUSY", "LABELS", "CONNECTED", "RUNNING"};
  table.align = {Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight,
                 Align::kLeft, Align::kLeft, Align::kLeft};
  for (const AgentStatus& agent : agents) {
    const auto& inventory = agent.inventory();
    std::string connected = agent.connected()
                                ? "yes"
                                : absl::StrCat("no (last seen ",
                                               FormatTime(agent.last_seen_unix_ms()), ")");
    std::string running =
        agent.running_jobs().empty() ? "-" : absl::StrJoin(agent.running_jobs(), ",");
    table.rows.push_back({inventory.name(), inventory.address().empty() ? "-" : inventory.address(),
                          DescribeDevices(inventory),
                          absl::StrCat(agent.devices_busy(), "/", agent.devices_total()),
                          inventory.labels().empty() ? "-" : FormatLabels(inventory.labels(), ","),
                          connected, running});
  }
  return RenderPlainTable(table);
}

}  // namespace bench::ctl
