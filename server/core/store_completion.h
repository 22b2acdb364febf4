// StoreCompletion: a store write's completion that must run outside JobManager's lock.
#pragma once

#include <functional>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace bench {

// A store completion that must run outside the manager's lock. The manager queues its
// store writes under that lock, and a store that is shutting down calls `done` at once
// on the caller's thread: such an early completion is kept for the caller to finish
// once it has unlocked (Arm, then Finish); a later one runs on the store's thread.
class StoreCompletion {
 public:
  explicit StoreCompletion(std::function<void(absl::Status)> finish) : finish_(std::move(finish)) {}
  // The store's callback.
  void Complete(absl::Status status) {
    {
      absl::MutexLock lock(&mu_);
      if (!armed_) {
        early_ = std::move(status);
        return;
      }
    }
    finish_(std::move(status));
  }
  // The queueing call returned: later completions finish at once. Returns the status of
  // one that came before, which the caller must Finish after unlocking.
  std::optional<absl::Status> Arm() {
    absl::MutexLock lock(&mu_);
    armed_ = true;
    return std::move(early_);
  }
  void Finish(absl::Status status) { finish_(std::move(status)); }

 private:
  const std::function<void(absl::Status)> finish_;
  absl::Mutex mu_;
  bool armed_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> early_ ABSL_GUARDED_BY(mu_);
};

}  // namespace bench
