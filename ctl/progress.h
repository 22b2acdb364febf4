// How `submit --wait` shows a running job: an in-place progress bar on a terminal, plain
// lines otherwise, and a closing summary. Pure functions and a small value type.
#pragma once

#include <string>

#include "benchfleet/v1/types.pb.h"

namespace bench::ctl {

// "[#########.....]  45/100 it  RUNNING": `width` cells between the brackets, filled in
// proportion to done/total (empty when total <= 0; clamped to [0, total]).
std::string ProgressBar(int done, int total, const std::string& state, int width = 30);

// The bar for a status, without line control characters.
std::string ProgressBarFor(const benchfleet::v1::JobStatus& status, int width = 30);

// "job j-1: RUNNING 45/100 it" (plus " (reason)" when there is one).
std::string ProgressLine(const benchfleet::v1::JobStatus& status);

// Decides when plain (non-terminal) output prints a line: the first status, every change
// of state, and progress crossing into a new tenth of the iterations.
class PlainProgressThrottle {
 public:
  // True if `status` deserves a line; remembers it as printed when so.
  bool ShouldPrint(const benchfleet::v1::JobStatus& status);

 private:
  bool printed_any_ = false;
  benchfleet::v1::JobState last_state_ = benchfleet::v1::JOB_STATE_UNSPECIFIED;
  int last_decile_ = -1;
};

// The closing lines once a job is terminal, e.g.
//   "job j-1: SUCCEEDED (all ranks finished)\nthroughput: 1316.7 images/s\n"
// or "throughput: no data\n" when the status has no throughput; then
// "non-finite losses: N of M stored iterations\n" when N > 0 and
// "precision: MISMATCH (requested amp, ran fp32)\n" when the precision in effect differs.
std::string FinalSummary(const benchfleet::v1::JobStatus& status);

}  // namespace bench::ctl
