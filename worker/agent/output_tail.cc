#include "worker/agent/output_tail.h"

#include "absl/strings/str_join.h"

namespace bench::agent {

void OutputTail::Add(absl::string_view line) {
  if (max_lines_ == 0 || max_bytes_ == 0) return;
  if (line.size() + 1 > max_bytes_) line = line.substr(line.size() + 1 - max_bytes_);
  lines_.emplace_back(line);
  bytes_ += line.size() + 1;
  while (lines_.size() > max_lines_ || bytes_ > max_bytes_) {
    bytes_ -= lines_.front().size() + 1;
    lines_.pop_front();
  }
}

std::string OutputTail::Text() const { return absl::StrJoin(lines_, "\n"); }

}  // namespace bench::agent
