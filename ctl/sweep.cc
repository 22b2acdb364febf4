#include "ctl/sweep.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/spec_names.h"
#include "report/grid.h"
#include "report/text_table.h"

namespace bench::ctl {

using report::Align;
using report::FormatRate;
using report::RenderPlainTable;
using report::TextTable;
namespace {

namespace v1 = benchfleet::v1;

void Fnv(uint64_t* hash, const std::string& text) {
  for (unsigned char c : text) {
    *hash ^= c;
    *hash *= 1099511628211ULL;
  }
  *hash ^= 0x1f;  // field separator
  *hash *= 1099511628211ULL;
}

}  // namespace

std::string SweepHash(const v1::JobSpec& base, const std::string& nonce) {
  uint64_t hash = 14695981039346656037ULL;
  Fnv(&hash, "benchfleet-sweep-v1");
  Fnv(&hash, base.model());
  Fnv(&hash, absl::StrCat(base.iterations()));
  Fnv(&hash, absl::StrCat(base.warmup_iterations()));
  Fnv(&hash, absl::StrCat(base.image_size()));
  Fnv(&hash, absl::StrCat(static_cast<int>(base.data())));
  Fnv(&hash, base.name());
  std::map<std::string, std::string> labels(base.labels().begin(), base.labels().end());
  for (const auto& [key, value] : labels) {  // separate fields: "a=b"="c" is not "a"="b=c"
    Fnv(&hash, key);
    Fnv(&hash, value);
  }
  // Constraints choose where the jobs may run, so a sweep pinned elsewhere is another
  // sweep; left out when unset, so sweeps without them keep their earlier ids.
  if (!base.allowed_nodes().empty() || !base.node_labels().empty()) {
    Fnv(&hash, "constraints");
    std::vector<std::string> nodes(base.allowed_nodes().begin(), base.allowed_nodes().end());
    std::sort(nodes.begin(), nodes.end());
    for (const std::string& node : nodes) Fnv(&hash, node);
    Fnv(&hash, "node_labels");
    std::map<std::string, std::string> node_labels(base.node_labels().begin(),
                                                   base.node_labels().end());
    for (const auto& [key, value] : node_labels) {
      Fnv(&hash, key);
      Fnv(&hash, value);
    }
  }
  // Real data's folder and decode threads: another sweep; left out when unset, so
  // synthetic sweeps keep their earlier ids.
  if (!base.data_path().empty() || base.loader_threads() != 0) {
    Fnv(&hash, "data");
    Fnv(&hash, base.data_path());
    Fnv(&hash, absl::StrCat(base.loader_threads()));
  }
  // A data-vs-compute run trains a second time on synthetic data: another sweep; left out
  // when off, so earlier sweeps keep their ids.
  if (base.data_vs_compute()) Fnv(&hash, "data_vs_compute");
  Fnv(&hash, nonce);
  return absl::StrFormat("%016x", hash);
}

std::vector<SweepJob> ExpandSweep(const SweepOptions& options, const std::string& nonce) {
  const std::string hash = SweepHash(options.base, nonce);
  std::vector<SweepJob> jobs;
  for (int gpus : options.gpus) {
    for (v1::Precision precision : options.precisions) {
      for (int batch : options.batch_sizes) {
        for (int k = 1; k <= options.repeat; ++k) {
          SweepJob job;
          job.spec = options.base;
          job.spec.set_devices(gpus);
          job.spec.set_precision(precision);
          job.spec.set_batch_size(batch);
          job.cell = absl::StrCat("g", gpus, "-", PrecisionName(precision), "-bs", batch, "-r", k);
          job.spec.set_request_id(absl::StrCat("sweep-", hash, "-", job.cell));
          jobs.push_back(std::move(job));
        }
      }
    }
  }
  return jobs;
}

std::string RetryRequestId(const std::string& request_id, int retry) {
  if (retry <= 0) return request_id;
  return absl::StrCat(request_id, "-retry-", retry);
}

std::string SweepProgressLine(const std::vector<v1::JobStatus>& jobs) {
  std::map<v1::JobState, int> counts;
  int done = 0;
  for (const v1::JobStatus& job : jobs) {
    ++counts[job.state()];
    if (IsTerminal(job.state())) ++done;
  }
  auto part = [&counts](std::initializer_list<v1::JobState> states) {
    std::vector<std::string> items;
    for (v1::JobState state : states) {
      auto it = counts.find(state);
      if (it != counts.end() && it->second > 0) {
        items.push_back(absl::StrCat(it->second, " ", JobStateName(state)));
      }
    }
    return absl::StrJoin(items, ", ");
  };
  const std::string finished =
      part({v1::JOB_STATE_SUCCEEDED, v1::JOB_STATE_FAILED, v1::JOB_STATE_CANCELLED});
  const std::string open =
      part({v1::JOB_STATE_RUNNING, v1::JOB_STATE_QUEUED, v1::JOB_STATE_UNSPECIFIED});
  std::string line = absl::StrCat("sweep: ", done, "/", jobs.size(), " done");
  std::vector<std::string> groups;
  if (!finished.empty()) groups.push_back(finished);
  if (!open.empty()) groups.push_back(open);
  if (!groups.empty()) absl::StrAppend(&line, " (", absl::StrJoin(groups, "; "), ")");
  return line;
}

std::string SweepSummary(const std::vector<SweepJob>& sweep,
                         const std::vector<v1::JobStatus>& jobs) {
  TextTable table;
  table.header = {"ID", "CELL", "STATE", "IMAGES/S"};
  table.align = {Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight};
  int succeeded = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const v1::JobStatus& job = jobs[i];
    if (job.state() == v1::JOB_STATE_SUCCEEDED) ++succeeded;
    std::string state = JobStateName(job.state());
    if (job.state() != v1::JOB_STATE_SUCCEEDED && !job.reason().empty()) {
      absl::StrAppend(&state, " (", job.reason(), ")");
    }
    table.rows.push_back({job.id(), i < sweep.size() ? sweep[i].cell : "", state,
                          job.has_throughput() && job.has_images_per_second()
                              ? FormatRate(job.images_per_second())
                              : "no data"});
  }
  return absl::StrCat(RenderPlainTable(table), succeeded, "/", jobs.size(),
                      " jobs succeeded\n");
}

}  // namespace bench::ctl
