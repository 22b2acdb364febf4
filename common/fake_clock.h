// FakeClock, the tests' Clock (common/clock.h): time stands still until the test calls
// Advance, which moves wall and monotonic time on together. It starts at a fixed wall
// time (2026-01-01 00:00 UTC unless given) and an arbitrary monotonic one.
//
// Thread-safety: Now, SteadyNow and Advance may be called from any thread at once (the
// code under test reads it on its own threads, e.g. a store's completions).
#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace bench {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1767225600))
      : now_(start), steady_(std::chrono::hours(1000)) {}

  absl::Time Now() const override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  SteadyTime SteadyNow() const override {
    absl::MutexLock lock(&mu_);
    return steady_;
  }
  // Moves both clocks on by `by` (a negative `by` is ignored: time does not go back).
  void Advance(absl::Duration by) {
    if (by < absl::ZeroDuration()) return;
    absl::MutexLock lock(&mu_);
    now_ += by;
    steady_ += std::chrono::duration_cast<SteadyTime::duration>(absl::ToChronoNanoseconds(by));
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  SteadyTime steady_ ABSL_GUARDED_BY(mu_);
};

}  // namespace bench
