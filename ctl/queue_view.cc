#include "ctl/queue_view.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/spec_names.h"
#include "report/text_table.h"
#include "ctl/views.h"

namespace bench::ctl {

using report::Align;
using report::CsvField;
using report::RenderPlainTable;
using report::TextTable;
namespace {

namespace v1 = benchfleet::v1;

// Characters, not bytes, as text_table counts them.
size_t Utf8Length(const std::string& text) {
  size_t n = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string TruncateUtf8(const std::string& text, size_t max_chars) {
  if (Utf8Length(text) <= max_chars || max_chars == 0) return text;
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) != 0x80) {
      if (chars == max_chars - 1) break;
      ++chars;
    }
    out += text[i];
  }
  return out + "…";
}

int64_t AgeSeconds(int64_t created_unix_ms, absl::Time now) {
  return std::max<int64_t>(0, (absl::ToUnixMillis(now) - created_unix_ms) / 1000);
}

}  // namespace

std::string FormatAge(int64_t created_unix_ms, absl::Time now) {
  if (created_unix_ms == 0) return "-";
  const int64_t s = AgeSeconds(created_unix_ms, now);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrCat(s / 60, "m");
  if (s < 86400) return absl::StrFormat("%dh%02dm", s / 3600, s % 3600 / 60);
  return absl::StrFormat("%dd%02dh", s / 86400, s % 86400 / 3600);
}

std::string QueueDevices(const v1::JobSpec& spec) {
  std::string text = absl::StrCat(spec.devices());
  if (spec.nodes() > 0 && spec.devices_per_node() > 0) {
    absl::StrAppend(&text, " (", spec.nodes(), "x", spec.devices_per_node(), ")");
  } else if (spec.nodes() > 0) {
    absl::StrAppend(&text, " (", spec.nodes(), spec.nodes() == 1 ? " node)" : " nodes)");
  } else if (spec.devices_per_node() > 0) {
    absl::StrAppend(&text, " (", spec.devices_per_node(), "/node)");
  }
  return text;
}

std::string ShortConstraints(const v1::JobSpec& spec, size_t max_chars) {
  std::vector<std::string> parts;
  if (!spec.allowed_nodes().empty()) {
    std::vector<std::string> nodes;
    for (int i = 0; i < spec.allowed_nodes_size() && i < 2; ++i) {
      nodes.push_back(spec.allowed_nodes(i));
    }
    if (spec.allowed_nodes_size() > 2) nodes.push_back(absl::StrCat("+", spec.allowed_nodes_size() - 2));
    parts.push_back(absl::StrCat("on ", absl::StrJoin(nodes, ",")));
  }
  if (!spec.node_labels().empty()) parts.push_back(FormatLabels(spec.node_labels(), ","));
  if (parts.empty()) return "-";
  return TruncateUtf8(absl::StrJoin(parts, " "), max_chars);
}

std::string FormatQueueTable(const std::vector<v1::JobStatus>& jobs, absl::Time now) {
  if (jobs.empty()) return "queue is empty\n";
  TextTable table;
  table.header = {"POS",       "ID", "NAME",        "MODEL", "DEVICES",
                  "PRECISION", "BS", "CONSTRAINTS", "AGE",   "WAITING FOR"};
  table.align = {Align::kRight, Align::kLeft,  Align::kLeft, Align::kLeft,  Align::kRight,
                 Align::kLeft,  Align::kRight, Align::kLeft, Align::kRight, Align::kLeft};
  for (size_t i = 0; i < jobs.size(); ++i) {
    const v1::JobStatus& job = jobs[i];
    const v1::JobSpec& spec = job.spec();
    // The server's position; the row's place where it sent none.
    const int64_t position = job.queue_position() > 0 ? job.queue_position() : int64_t(i) + 1;
    table.rows.push_back({absl::StrCat(position), job.id(),
                          spec.name().empty() ? "-" : TruncateUtf8(spec.name(), 24),
                          spec.model(), QueueDevices(spec), PrecisionName(spec.precision()),
                          absl::StrCat(spec.batch_size()), ShortConstraints(spec),
                          FormatAge(job.created_unix_ms(), now),
                          job.reason().empty() ? "-" : job.reason()});
  }
  return RenderPlainTable(table);
}

std::string RenderQueueCsv(const std::vector<v1::JobStatus>& jobs, absl::Time now) {
  std::string out =
      "position,job_id,name,model,devices,nodes,devices_per_node,precision,batch_size,"
      "allowed_nodes,node_labels,wall_time_limit_s,hang_timeout_s,requeues,created_unix_ms,"
      "age_s,reason\n";
  for (const v1::JobStatus& job : jobs) {
    const v1::JobSpec& spec = job.spec();
    std::vector<std::string> fields = {
        absl::StrCat(job.queue_position()),
        CsvField(job.id()),
        CsvField(spec.name()),
        CsvField(spec.model()),
        absl::StrCat(spec.devices()),
        absl::StrCat(spec.nodes()),
        absl::StrCat(spec.devices_per_node()),
        PrecisionName(spec.precision()),
        absl::StrCat(spec.batch_size()),
        CsvField(absl::StrJoin(spec.allowed_nodes(), ";")),
        CsvField(FormatLabels(spec.node_labels(), ";")),
        absl::StrCat(spec.wall_time_limit_s()),
        absl::StrCat(spec.hang_timeout_s()),
        absl::StrCat(job.requeues()),
        absl::StrCat(job.created_unix_ms()),
        job.created_unix_ms() > 0 ? absl::StrCat(AgeSeconds(job.created_unix_ms(), now)) : "",
        CsvField(job.reason())};
    absl::StrAppend(&out, absl::StrJoin(fields, ","), "\n");
  }
  return out;
}

}  // namespace bench::ctl
