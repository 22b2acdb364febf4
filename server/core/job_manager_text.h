// Phrases the JobManager's files share (job_manager*.cc, job_recovery.cc): how job
// reasons and logs name ranks, placements and counts, and the note that marks a job whose
// GPU telemetry is still to be joined. Internal to the manager; pure.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/core/job.h"

namespace bench {
namespace manager_text {

// The telemetry note of a job whose join failed; Recover tries such jobs again.
inline constexpr char kTelemetryNotJoined[] = "GPU telemetry not joined: ";

// "rank 3", "ranks 0-3" or "ranks 0,2".
inline std::string DescribeRanks(const std::vector<int>& ranks) {
  if (ranks.empty()) return "no ranks";
  if (ranks.size() == 1) return absl::StrCat("rank ", ranks.front());
  bool contiguous = ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size());
  if (contiguous) return absl::StrCat("ranks ", ranks.front(), "-", ranks.back());
  return absl::StrCat("ranks ", absl::StrJoin(ranks, ","));
}

// "a (ranks 0-3), b (rank 4)".
inline std::string DescribePlacements(const std::vector<Placement>& placements) {
  std::vector<std::string> parts;
  for (const Placement& p : placements) {
    parts.push_back(absl::StrCat(p.agent, " (", DescribeRanks(p.ranks), ")"));
  }
  return absl::StrJoin(parts, ", ");
}

// "1 agent", "2 agents".
inline std::string Count(size_t n, const char* noun) {
  return absl::StrCat(n, " ", noun, n == 1 ? "" : "s");
}

// The last `max` bytes of `text`, marked with "…" where it was cut.
inline std::string Truncate(std::string text, size_t max) {
  if (text.size() <= max) return text;
  return absl::StrCat("…", text.substr(text.size() - max));
}

}  // namespace manager_text
}  // namespace bench
