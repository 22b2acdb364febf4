// Time as something given, not read: code that decides by time (leases, graces,
// timeouts, timestamps) takes a Clock, so that a test moves time on by hand
// (FakeClock, common/fake_clock.h) instead of sleeping. Clock::Real() reads the
// process's clocks.
//
// Two readings: Now(), wall time (what is shown and stored), and SteadyNow(),
// monotonic (what intervals such as an agent's lease are measured on, so that a step of
// the wall clock ends none of them).
//
// Thread-safety: every implementation may be called from any thread at once.
#pragma once

#include <chrono>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace bench {

class Clock {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  // Wall time.
  virtual absl::Time Now() const = 0;
  // Monotonic time.
  virtual SteadyTime SteadyNow() const = 0;

  // absl::Now() and std::chrono::steady_clock: never null, never destroyed.
  static const Clock* Real();
};

namespace clock_internal {

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  SteadyTime SteadyNow() const override { return std::chrono::steady_clock::now(); }
};

}  // namespace clock_internal

inline const Clock* Clock::Real() {
  static const Clock* const real = new clock_internal::RealClock();
  return real;
}

}  // namespace bench
