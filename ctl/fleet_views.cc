#include "ctl/fleet_views.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/spec_names.h"
#include "report/grid.h"
#include "report/text_table.h"
#include "ctl/views.h"

namespace bench::ctl {

using report::Align;
using report::FormatRate;
using report::RenderPlainTable;
using report::TextTable;
namespace {

namespace v1 = benchfleet::v1;

double DefaultedPct(double pct) { return pct > 0 ? pct : 5.0; }

std::string Pct(double pct) { return absl::StrFormat("%g%%", pct); }

std::string NodeOf(const v1::GpuVariability& gpu) {
  if (gpu.hostname().empty() || gpu.hostname() == gpu.agent()) {
    return gpu.agent().empty() ? "-" : gpu.agent();
  }
  return absl::StrCat(gpu.agent().empty() ? "-" : gpu.agent(), "/", gpu.hostname());
}

std::string P50(const v1::Percentiles& p, const char* format) {
  if (p.count() == 0) return "no data";
  return absl::StrFormat(*absl::ParsedFormat<'f'>::New(format), p.p50());
}

}  // namespace

std::string FormatGpuVariability(const v1::GpuVariabilityResponse& response,
                                 bool outliers_only) {
  const double threshold = DefaultedPct(response.threshold_pct());
  if (response.gpus().empty()) {
    return "no data: no finished job has run on a GPU yet\n";
  }
  TextTable table;
  table.header = {"UUID",      "NAME",     "NODE",      "INDEX",        "JOBS",
                  "ITERATIONS", "STEP TIME", "CV",      "SM MHz p50 (p5-p95)", "POWER W p50",
                  "TEMP C p50", "FLAG"};
  table.align = {Align::kLeft,  Align::kLeft,  Align::kLeft,  Align::kRight,
                 Align::kRight, Align::kRight, Align::kRight, Align::kRight,
                 Align::kRight, Align::kRight, Align::kRight, Align::kLeft};
  int slow = 0;
  for (const v1::GpuVariability& gpu : response.gpus()) {
    if (gpu.outlier()) ++slow;
    if (outliers_only && !gpu.outlier()) continue;
    const bool measured = gpu.iterations() > 0 && gpu.normalized_step_time() > 0;
    table.rows.push_back(
        {gpu.gpu_uuid().empty() ? "-" : gpu.gpu_uuid(),
         gpu.gpu_name().empty() ? "-" : gpu.gpu_name(), NodeOf(gpu),
         absl::StrCat(gpu.gpu_index()), absl::StrCat(gpu.jobs()), absl::StrCat(gpu.iterations()),
         measured ? absl::StrFormat("%.2fx", gpu.normalized_step_time()) : "no data",
         gpu.iterations() >= 2 ? absl::StrFormat("%.1f%%", gpu.step_time_cv() * 100) : "no data",
         FormatPercentiles(gpu.sm_clock_mhz(), "%.0f"), P50(gpu.power_w(), "%.1f"),
         P50(gpu.temperature_c(), "%.0f"), gpu.outlier() ? "SLOW" : ""});
  }
  if (outliers_only && slow == 0) {
    return absl::StrCat("no GPU is slower than the fleet by more than ", Pct(threshold), " (",
                        response.gpus_size(), " GPUs)\n");
  }
  return absl::StrCat(
      RenderPlainTable(table),
      "STEP TIME: median step time vs the fleet's for the same configuration (>1 is slower); ",
      slow, " of ", response.gpus_size(), " GPUs SLOW (more than ", Pct(threshold),
      " slower)\n");
}

std::string FormatBaselineSet(const v1::Baseline& baseline) {
  const double lower = baseline.lower_tolerance_pct();
  const double upper = baseline.upper_tolerance_pct();
  const double ips = baseline.images_per_second();
  std::string where = absl::StrCat(baseline.devices(), " ",
                                   baseline.device_kind() == "cpu" ? "CPU slots" : "GPUs");
  if (!baseline.gpu_model().empty()) absl::StrAppend(&where, " (", baseline.gpu_model(), ")");
  return absl::StrCat(
      "baseline for ", baseline.model(), ", ", where, ", ", PrecisionName(baseline.precision()),
      ", batch ", baseline.batch_size(), ", ", baseline.image_size(), " px: ", FormatRate(ips),
      " images/s from job ",
      baseline.job_id(), "\n", "bounds: -", Pct(lower), " / +", Pct(upper), " (below ",
      FormatRate(ips * (1 - lower / 100)), " is a REGRESSION, above ",
      FormatRate(ips * (1 + upper / 100)), " is ABOVE)\n");
}

std::string FormatBaselinesTable(const std::vector<v1::Baseline>& baselines) {
  if (baselines.empty()) return "no baselines\n";
  TextTable table;
  table.header = {"MODEL", "DEVICE", "GPU MODEL", "DEVICES", "PRECISION", "BS",
                  "IMAGES/S", "BOUNDS", "JOB", "SET"};
  table.align = {Align::kLeft,  Align::kLeft,  Align::kLeft, Align::kRight, Align::kLeft,
                 Align::kRight, Align::kRight, Align::kLeft, Align::kLeft,  Align::kLeft};
  for (const v1::Baseline& b : baselines) {
    table.rows.push_back(
        {b.model(), b.device_kind().empty() ? "-" : b.device_kind(),
         b.gpu_model().empty() ? "-" : b.gpu_model(), absl::StrCat(b.devices()),
         PrecisionName(b.precision()), absl::StrCat(b.batch_size()),
         FormatRate(b.images_per_second()),
         absl::StrCat("-", Pct(b.lower_tolerance_pct()), "/+", Pct(b.upper_tolerance_pct())),
         b.job_id(), FormatTime(b.set_unix_ms())});
  }
  return RenderPlainTable(table);
}

}  // namespace bench::ctl
