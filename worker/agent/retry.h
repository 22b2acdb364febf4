// Back-off and retry classification shared by the agent's RPC loops.
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace bench::agent {

// Exponential back-off: initial, 2x initial, ... capped at max. Not thread-safe.
class Backoff {
 public:
  Backoff(absl::Duration initial, absl::Duration max) : initial_(initial), max_(max) {}
  // The delay to wait before the next attempt.
  absl::Duration Next() {
    absl::Duration delay = next_ == absl::ZeroDuration() ? initial_ : next_;
    next_ = std::min(delay * 2, max_);
    return std::min(delay, max_);
  }
  void Reset() { next_ = absl::ZeroDuration(); }

 private:
  absl::Duration initial_;
  absl::Duration max_;
  absl::Duration next_ = absl::ZeroDuration();
};

// Errors that a later attempt can cure (the controller away, busy or restarting).
inline bool IsTransientError(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kInternal:
      return true;
    default:
      return false;
  }
}

// True for the attempt numbers worth logging (1, 2, 4, 8, ..., and every 30th), so that
// a long outage neither floods the log nor goes quiet.
inline bool ShouldLogAttempt(uint64_t attempt) {
  return attempt != 0 && ((attempt & (attempt - 1)) == 0 || attempt % 30 == 0);
}

}  // namespace bench::agent
