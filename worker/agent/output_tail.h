// The last lines of a stream (a trainer's stderr), bounded by line count and bytes.
#pragma once

#include <cstddef>
#include <deque>
#include <string>

#include "absl/strings/string_view.h"

namespace bench::agent {

// Keeps at most `max_lines` lines and `max_bytes` bytes (newlines included), dropping
// the oldest first. A single line longer than the budget keeps its last bytes.
// Not thread-safe: one owner (the reader thread, then whoever joined it).
class OutputTail {
 public:
  explicit OutputTail(size_t max_lines = 30, size_t max_bytes = 8192)
      : max_lines_(max_lines), max_bytes_(max_bytes) {}

  void Add(absl::string_view line);
  // The kept lines joined with '\n' (no trailing newline).
  std::string Text() const;

 private:
  size_t max_lines_;
  size_t max_bytes_;
  size_t bytes_ = 0;
  std::deque<std::string> lines_;
};

}  // namespace bench::agent
