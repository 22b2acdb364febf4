#include "report/screen_view.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/spec_names.h"
#include "report/text_table.h"

namespace bench::report {
namespace v1 = benchfleet::v1;
namespace {

std::string Pct(double pct) { return absl::StrFormat("%+.1f %%", pct); }

std::string Seconds(double s) { return absl::StrFormat("%.4f s", s); }

std::string ConfigurationText(const v1::ScreeningConfiguration& c) {
  std::string text =
      absl::StrCat(c.model(), " bs ", c.batch_size(), " ", PrecisionName(c.precision()));
  if (c.image_size() > 0) absl::StrAppend(&text, " ", c.image_size(), "px");
  absl::StrAppend(&text, " on ", c.gpu_model().empty() ? c.device_kind() : c.gpu_model());
  return text;
}

std::string Plural(int n, const char* one, const char* many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

}  // namespace

std::string ScreenVerdictText(const v1::ScreeningGpuVerdict& gpu) {
  if (gpu.verdict() == "slow") return absl::StrCat("slow ", Pct(gpu.slow_pct()));
  return gpu.verdict();
}

std::string RenderScreeningReport(const v1::ScreeningReport& report) {
  std::string out;
  int flagged = 0;
  std::set<std::string> nodes;
  for (const v1::ScreeningGpuVerdict& gpu : report.gpus()) {
    if (gpu.flagged()) ++flagged;
    nodes.insert(gpu.node());
  }
  const int gpus = report.gpus_size();
  absl::StrAppend(&out, "screening ", report.screening_id(), ": ", Plural(gpus, "GPU", "GPUs"),
                  " on ", Plural(static_cast<int>(nodes.size()), "node", "nodes"), ", ", flagged,
                  " flagged");
  if (report.pending() > 0) {
    absl::StrAppend(&out, ", ", Plural(report.pending(), "job", "jobs"),
                    " still queued or running (not judged yet)");
  }
  absl::StrAppend(&out, "\n");
  const bool several = report.configurations_size() > 1;
  for (int i = 0; i < report.configurations_size(); ++i) {
    const v1::ScreeningConfiguration& c = report.configurations(i);
    absl::StrAppend(&out, several ? absl::StrCat("config ", i + 1, ": ") : std::string(),
                    ConfigurationText(c), ": ", Plural(c.gpus(), "GPU", "GPUs"),
                    ", fleet median step ", Seconds(c.fleet_median_step_s()), ", spread ",
                    absl::StrFormat("%.1f %%", c.spread_mad_pct()), ", slow above ",
                    absl::StrFormat("+%.1f %%", c.threshold_pct()), "\n");
  }
  if (gpus > 0) {
    TextTable table;
    table.header = {"NODE", "GPU", "VERDICT", "VS FLEET", "CAUSE", "EVIDENCE", "JOB"};
    table.align = {Align::kLeft, Align::kRight, Align::kLeft, Align::kRight,
                   Align::kLeft, Align::kLeft,  Align::kLeft};
    if (several) {
      table.header.insert(table.header.begin() + 2, "CONFIG");
      table.align.insert(table.align.begin() + 2, Align::kRight);
    }
    for (const v1::ScreeningGpuVerdict& gpu : report.gpus()) {
      std::vector<std::string> row;
      row.push_back(gpu.node());
      row.push_back(absl::StrCat(gpu.gpu_index()));
      if (several) row.push_back(absl::StrCat(gpu.configuration() + 1));
      row.push_back(ScreenVerdictText(gpu));
      row.push_back(gpu.has_median_step_s() ? Pct(gpu.slow_pct()) : "-");
      std::string cause = absl::StrJoin(gpu.cause_descriptions(), ", ");
      std::string evidence = gpu.evidence();
      if (gpu.failed()) {
        cause = "job failed";
        evidence = gpu.failure_reason();
      }
      row.push_back(cause.empty() ? "-" : cause);
      row.push_back(evidence.empty() ? "-" : evidence);
      row.push_back(gpu.job_id());
      table.rows.push_back(std::move(row));
    }
    absl::StrAppend(&out, "\n", RenderPlainTable(table));
  }
  if (report.nodes_size() > 0) {
    TextTable table;
    table.header = {"NODE", "GPUS", "VERDICT"};
    table.align = {Align::kLeft, Align::kRight, Align::kLeft};
    for (const v1::ScreeningNodeVerdict& node : report.nodes()) {
      std::string verdict = "ok";
      if (!node.ok()) {
        std::vector<std::string> indexes;
        for (int index : node.flagged_gpu_indexes()) indexes.push_back(absl::StrCat(index));
        verdict = absl::StrCat("flagged: GPU ", absl::StrJoin(indexes, ", "));
      }
      table.rows.push_back({node.node(), absl::StrCat(node.gpus()), verdict});
    }
    absl::StrAppend(&out, "\n", RenderPlainTable(table));
  }
  if (flagged > 0) {
    absl::StrAppend(&out, "\n", flagged, " of ", Plural(gpus, "GPU", "GPUs"), " flagged\n");
  } else if (gpus > 0) {
    absl::StrAppend(&out, "\n",
                    gpus == 1 ? "the GPU is ok" : absl::StrCat("all ", gpus, " GPUs ok"), "\n");
  } else {
    absl::StrAppend(&out, "\nno GPU judged yet\n");
  }
  return out;
}

std::string RenderScreeningList(const v1::ListScreeningsResponse& list) {
  if (list.screenings().empty()) return "no screenings\n";
  TextTable table;
  table.header = {"ID", "CREATED", "JOBS", "PENDING", "SUCCEEDED", "FAILED", "NODES"};
  table.align = {Align::kLeft,  Align::kLeft,  Align::kRight, Align::kRight,
                 Align::kRight, Align::kRight, Align::kLeft};
  for (const v1::ScreeningSummary& s : list.screenings()) {
    table.rows.push_back(
        {s.screening_id(),
         absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(s.created_unix_ms()),
                          absl::UTCTimeZone()),
         absl::StrCat(s.jobs()), absl::StrCat(s.pending()), absl::StrCat(s.succeeded()),
         absl::StrCat(s.failed()), absl::StrJoin(s.nodes(), ",")});
  }
  return RenderPlainTable(table);
}

}  // namespace bench::report
