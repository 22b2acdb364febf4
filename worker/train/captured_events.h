// Test helper: an EventWriter whose lines can be read back. Not thread-safe.
#ifndef BENCHFLEET_WORKER_TRAIN_CAPTURED_EVENTS_H_
#define BENCHFLEET_WORKER_TRAIN_CAPTURED_EVENTS_H_

#include <cstdio>
#include <string>
#include <vector>

#include "worker/train/event_writer.h"

namespace bench_train {

class CapturedEvents {
 public:
  CapturedEvents() : file_(std::tmpfile()), writer_(file_) {}
  ~CapturedEvents() { std::fclose(file_); }
  CapturedEvents(const CapturedEvents&) = delete;
  CapturedEvents& operator=(const CapturedEvents&) = delete;

  EventWriter& writer() { return writer_; }

  // Every line written so far.
  std::vector<std::string> Lines() {
    std::fflush(file_);
    std::rewind(file_);
    std::vector<std::string> lines;
    std::string line;
    for (int c = std::fgetc(file_); c != EOF; c = std::fgetc(file_)) {
      if (c == '\n') {
        lines.push_back(line);
        line.clear();
      } else {
        line.push_back(static_cast<char>(c));
      }
    }
    std::fseek(file_, 0, SEEK_END);
    return lines;
  }

 private:
  std::FILE* file_;
  EventWriter writer_;
};

inline bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_CAPTURED_EVENTS_H_
