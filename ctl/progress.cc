#include "ctl/progress.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/spec_names.h"
#include "report/grid.h"

namespace bench::ctl {

using report::FormatRate;
namespace {

int Decile(int done, int total) {
  if (total <= 0) return 0;
  done = std::clamp(done, 0, total);
  return static_cast<int>(static_cast<long long>(done) * 10 / total);
}

}  // namespace

std::string ProgressBar(int done, int total, const std::string& state, int width) {
  width = std::max(width, 1);
  int filled = 0;
  if (total > 0) {
    filled = static_cast<int>(static_cast<long long>(std::clamp(done, 0, total)) * width / total);
  }
  const int digits = static_cast<int>(absl::StrCat(std::max(total, 0)).size());
  return absl::StrCat("[", std::string(filled, '#'), std::string(width - filled, '.'), "]  ",
                      absl::StrFormat("%*d", digits, done), "/", total, " it  ", state);
}

std::string ProgressBarFor(const benchfleet::v1::JobStatus& status, int width) {
  return ProgressBar(status.iterations_done(), status.spec().iterations(),
                     JobStateName(status.state()), width);
}

std::string ProgressLine(const benchfleet::v1::JobStatus& status) {
  std::string line = absl::StrCat("job ", status.id(), ": ", JobStateName(status.state()), " ",
                                  status.iterations_done(), "/", status.spec().iterations(),
                                  " it");
  if (!status.reason().empty()) absl::StrAppend(&line, " (", status.reason(), ")");
  return line;
}

bool PlainProgressThrottle::ShouldPrint(const benchfleet::v1::JobStatus& status) {
  const int decile = Decile(status.iterations_done(), status.spec().iterations());
  if (printed_any_ && status.state() == last_state_ && decile <= last_decile_) return false;
  printed_any_ = true;
  last_state_ = status.state();
  last_decile_ = decile;
  return true;
}

std::string FinalSummary(const benchfleet::v1::JobStatus& status) {
  std::string out = absl::StrCat("job ", status.id(), ": ", JobStateName(status.state()));
  if (!status.reason().empty()) absl::StrAppend(&out, " (", status.reason(), ")");
  absl::StrAppend(&out, "\nthroughput: ",
                  status.has_throughput()
                      ? absl::StrCat(FormatRate(status.images_per_second()), " images/s")
                      : std::string("no data"),
                  "\n");
  if (status.nonfinite_losses() > 0) {
    absl::StrAppend(&out, "non-finite losses: ", status.nonfinite_losses(), " of ",
                    status.samples_stored(), " stored iterations\n");
  }
  if (!status.precision_mismatch().empty()) {
    absl::StrAppend(&out, "precision: MISMATCH (", status.precision_mismatch(), ")\n");
  }
  return out;
}

}  // namespace bench::ctl
