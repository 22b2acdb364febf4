#include "report/compare.h"

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/spec_names.h"
#include "report/grid.h"
#include "report/json_output.h"
#include "report/text_table.h"

namespace bench::report {
namespace {

namespace v1 = benchfleet::v1;

struct Line {
  std::string field;
  std::string a;
  std::string b;
  bool compared = true;  // identity lines (the ids) are not marked
};

std::string Labels(const v1::JobSpec& spec) {
  if (spec.labels().empty()) return "-";
  std::map<std::string, std::string> sorted(spec.labels().begin(), spec.labels().end());
  return absl::StrJoin(sorted, ", ", absl::PairFormatter("="));
}

std::string Rate(const v1::JobStatus& job) {
  return job.has_throughput() && job.has_images_per_second() ? FormatRate(job.images_per_second())
                                                              : "no data";
}

std::string Energy(const v1::JobStatus& job) {
  return job.has_energy_per_image_j() ? absl::StrFormat("%.4g J", job.energy_per_image_j())
                                      : "no data";
}

std::string Verdict(const v1::JobStatus& job) {
  std::string text = FormatBaselineVerdict(job.baseline());
  return text.empty() ? "-" : text;
}

std::string OrDash(const std::string& text) { return text.empty() ? "-" : text; }

std::string RankText(const v1::RankDevice& rank) {
  std::string node = OrDash(rank.agent());
  if (!rank.hostname().empty() && rank.hostname() != rank.agent()) {
    absl::StrAppend(&node, "/", rank.hostname());
  }
  std::string text = absl::StrCat(node, " #", rank.device_index());
  if (!rank.gpu_name().empty()) absl::StrAppend(&text, " ", rank.gpu_name());
  if (!rank.gpu_uuid().empty()) absl::StrAppend(&text, " ", rank.gpu_uuid());
  return text;
}

std::vector<Line> Lines(const v1::JobStatus& a, const v1::JobStatus& b) {
  std::vector<Line> lines;
  auto add = [&lines](std::string field, std::string x, std::string y) {
    lines.push_back({std::move(field), std::move(x), std::move(y)});
  };
  lines.push_back({"job", a.id(), b.id(), false});
  add("state", JobStateName(a.state()), JobStateName(b.state()));
  const v1::JobSpec& sa = a.spec();
  const v1::JobSpec& sb = b.spec();
  add("model", sa.model(), sb.model());
  add("devices", absl::StrCat(sa.devices()), absl::StrCat(sb.devices()));
  add("device kind", OrDash(a.device_kind()), OrDash(b.device_kind()));
  add("precision", PrecisionName(sa.precision()), PrecisionName(sb.precision()));
  add("batch size", absl::StrCat(sa.batch_size()), absl::StrCat(sb.batch_size()));
  add("iterations", absl::StrCat(sa.iterations()), absl::StrCat(sb.iterations()));
  add("warm-up", absl::StrCat(sa.warmup_iterations()), absl::StrCat(sb.warmup_iterations()));
  add("image size", absl::StrCat(sa.image_size()), absl::StrCat(sb.image_size()));
  add("name", OrDash(sa.name()), OrDash(sb.name()));
  add("labels", Labels(sa), Labels(sb));
  add("images/s", Rate(a), Rate(b));
  add("energy/image", Energy(a), Energy(b));
  add("baseline", Verdict(a), Verdict(b));
  std::set<std::string> keys;
  for (const auto& [key, value] : a.environment().versions()) keys.insert(key);
  for (const auto& [key, value] : b.environment().versions()) keys.insert(key);
  for (const std::string& key : keys) {
    auto value = [&key](const v1::JobStatus& job) {
      auto it = job.environment().versions().find(key);
      return it == job.environment().versions().end() ? std::string("-") : it->second;
    };
    add(absl::StrCat("version ", key), value(a), value(b));
  }
  auto hosts = [](const v1::JobStatus& job) {
    return job.environment().hostnames().empty()
               ? std::string("-")
               : absl::StrJoin(job.environment().hostnames(), ", ");
  };
  add("hosts", hosts(a), hosts(b));
  std::map<int, std::pair<std::string, std::string>> ranks;
  for (const auto& rank : a.rank_devices()) ranks[rank.rank()].first = RankText(rank);
  for (const auto& rank : b.rank_devices()) ranks[rank.rank()].second = RankText(rank);
  for (const auto& [rank, texts] : ranks) {
    add(absl::StrCat("rank ", rank), OrDash(texts.first), OrDash(texts.second));
  }
  return lines;
}

std::string RatioLine(const v1::JobStatus& a, const v1::JobStatus& b) {
  if (std::optional<double> ratio = ThroughputRatio(a, b)) {
    return absl::StrFormat("throughput B/A: %.3fx (%+.1f%%)\n", *ratio, (*ratio - 1) * 100);
  }
  std::vector<std::string> missing;
  if (Rate(a) == "no data") missing.push_back(absl::StrCat("A (", a.id(), ")"));
  if (Rate(b) == "no data") missing.push_back(absl::StrCat("B (", b.id(), ")"));
  return absl::StrCat("throughput B/A: no data (", absl::StrJoin(missing, " and "),
                      missing.size() == 1 ? " has" : " have", " no throughput)\n");
}

}  // namespace

std::optional<double> ThroughputRatio(const v1::JobStatus& a, const v1::JobStatus& b) {
  if (!a.has_throughput() || !b.has_throughput() || !a.has_images_per_second() ||
      !b.has_images_per_second() || a.images_per_second() <= 0) {
    return std::nullopt;
  }
  return b.images_per_second() / a.images_per_second();
}

std::string FormatComparison(const v1::JobStatus& a, const v1::JobStatus& b) {
  TextTable table;
  table.header = {"", "FIELD", "A", "B"};
  int differing = 0;
  for (const Line& line : Lines(a, b)) {
    const bool differs = line.compared && line.a != line.b;
    if (differs) ++differing;
    table.rows.push_back({differs ? "*" : "", line.field, line.a, line.b});
  }
  return absl::StrCat(RenderPlainTable(table), RatioLine(a, b),
                      differing == 0 ? "no differences\n"
                                     : absl::StrCat("* marks the ", differing,
                                                    differing == 1 ? " line" : " lines",
                                                    " that differ\n"));
}

std::string ComparisonJson(const v1::JobStatus& a, const v1::JobStatus& b) {
  std::vector<std::string> differences;
  for (const Line& line : Lines(a, b)) {
    if (line.compared && line.a != line.b) differences.push_back(JsonQuote(line.field));
  }
  std::string ja = ToJson(a);
  std::string jb = ToJson(b);
  ja.pop_back();
  jb.pop_back();
  JsonObject object;
  object.AddRaw("a", ja).AddRaw("b", jb).AddOptional("throughput_ratio", ThroughputRatio(a, b));
  object.AddRaw("differences", absl::StrCat("[", absl::StrJoin(differences, ","), "]"));
  return object.Build() + "\n";
}

}  // namespace bench::report
