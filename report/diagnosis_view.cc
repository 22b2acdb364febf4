#include "report/diagnosis_view.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "report/text_table.h"

namespace bench::report {
namespace {

namespace v1 = benchfleet::v1;

std::string Indented(const std::string& text) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    absl::StrAppend(&out, "  ", line, "\n");
  }
  return out;
}

std::string Gpu(int gpu_index) { return gpu_index < 0 ? "cpu" : absl::StrCat(gpu_index); }

std::string Percent(double fraction) { return absl::StrFormat("%.1f %%", fraction * 100); }

std::string StragglersText(const v1::StragglerReport& r) {
  if (!r.applicable()) {
    return absl::StrCat("stragglers: not applicable (", r.reason(), ")\n");
  }
  std::string window =
      absl::StrCat(r.ranks(), " ranks, iterations ", r.first_iteration(), "-", r.last_iteration());
  if (r.stragglers().empty()) return absl::StrCat("stragglers: none (", window, ")\n");
  std::string out = absl::StrFormat(
      "stragglers: %d %s lost %.2f s (%s of the window; %s)\n", r.stragglers_size(),
      r.stragglers_size() == 1 ? "rank" : "ranks", r.lost_s(), Percent(r.lost_fraction()), window);
  TextTable table;
  table.header = {"RANK", "NODE", "GPU", "SLOW PHASES (iterations: excess)", "LOST S"};
  table.align = {Align::kRight, Align::kLeft, Align::kRight, Align::kLeft, Align::kRight};
  for (const v1::Straggler& s : r.stragglers()) {
    std::vector<std::string> phases;
    for (const v1::SlowPhase& p : s.phases()) {
      phases.push_back(absl::StrFormat("%d-%d: +%s", p.first_iteration(), p.last_iteration(),
                                       Percent(p.mean_excess())));
    }
    table.rows.push_back({absl::StrCat(s.rank()), s.node(), Gpu(s.gpu_index()),
                          absl::StrJoin(phases, ", "), absl::StrFormat("%.3f", s.lost_s())});
  }
  return out + Indented(RenderPlainTable(table));
}

std::string ExcessText(const v1::ExcessReport& r) {
  if (!r.applicable()) return absl::StrCat("excess: not applicable (", r.reason(), ")\n");
  std::string out = absl::StrFormat(
      "excess: %.3f s above the ideal step (%s of %.2f s measured); ideal %.4f s/step: %s\n",
      r.excess_s(), Percent(r.excess_fraction()), r.total_step_s(), r.ideal_step_s(),
      r.ideal_rule());
  if (r.by_cause_size() > 0) {
    TextTable table;
    table.header = {"CAUSE", "SECONDS", "% OF EXCESS"};
    table.align = {Align::kLeft, Align::kRight, Align::kRight};
    for (const v1::CauseTime& c : r.by_cause()) {
      table.rows.push_back({c.description(), absl::StrFormat("%.3f", c.seconds()),
                            absl::StrFormat("%.1f", c.fraction() * 100)});
    }
    out += Indented(RenderPlainTable(table));
  }
  if (r.by_rank_size() > 0) {
    out += "  by rank:\n";
    TextTable table;
    table.header = {"RANK", "NODE", "GPU", "CAUSE", "SECONDS", "% OF EXCESS"};
    table.align = {Align::kRight, Align::kLeft,  Align::kRight,
                   Align::kLeft,  Align::kRight, Align::kRight};
    for (const v1::RankCauseTime& c : r.by_rank()) {
      table.rows.push_back({absl::StrCat(c.rank()), c.node(), Gpu(c.gpu_index()), c.description(),
                            absl::StrFormat("%.3f", c.seconds()),
                            absl::StrFormat("%.1f", c.fraction() * 100)});
    }
    out += Indented(Indented(RenderPlainTable(table)));
  }
  for (const v1::CappedWithoutCost& c : r.capped_without_cost()) {
    absl::StrAppend(&out, "  power capped at full clock, no cost: rank ", c.rank(), " (", c.node(),
                    ", GPU ", Gpu(c.gpu_index()), ", ", c.iterations(), " iterations)\n");
  }
  return out;
}

std::string Figure(const v1::DiagnosisCheck& c, bool bound) {
  if (bound ? !c.has_bound() : !c.has_figure()) return "-";
  std::string value = absl::StrFormat("%.4g", bound ? c.bound() : c.figure());
  return c.unit().empty() ? value : absl::StrCat(value, " ", c.unit());
}

std::string ChecksText(const v1::JobDiagnosis& d) {
  int pass = 0, fail = 0, na = 0;
  for (const v1::DiagnosisCheck& c : d.checks()) {
    int& count = c.outcome() == "pass" ? pass : c.outcome() == "fail" ? fail : na;
    ++count;
  }
  std::string out =
      absl::StrCat("checks: ", pass, " pass, ", fail, " fail, ", na, " not applicable\n");
  TextTable table;
  table.header = {"CHECK", "OUTCOME", "FIGURE", "BOUND", "DETAIL"};
  table.align = {Align::kLeft, Align::kLeft, Align::kRight, Align::kRight, Align::kLeft};
  for (const v1::DiagnosisCheck& c : d.checks()) {
    std::string outcome = c.outcome() == "fail"             ? "FAIL"
                          : c.outcome() == "not_applicable" ? "n/a"
                                                            : c.outcome();
    table.rows.push_back({c.name(), outcome, Figure(c, false), Figure(c, true), c.detail()});
  }
  return out + Indented(RenderPlainTable(table));
}

}  // namespace

std::string DiagnosisText(const v1::JobDiagnosis& d) {
  if (!d.available()) {
    return absl::StrCat(d.note().empty() ? "no data" : d.note(), "\n");
  }
  return absl::StrCat(StragglersText(d.stragglers()), ExcessText(d.excess()), ChecksText(d));
}

}  // namespace bench::report
