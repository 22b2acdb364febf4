// AnswerThread: runs the store's write answers (each write's `done` with its status) in
// the order they were handed over, on a thread of its own, so that the writer thread
// goes on to its next transaction at once. An answer is work the writer need not wait
// for: a gRPC reply (its TLS and its send), the manager's lock, live figures.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace bench {

class AnswerThread {
 public:
  using Done = std::function<void(absl::Status)>;

  AnswerThread();
  ~AnswerThread();  // Stop()

  // Queues `done(status)` after everything handed over before it.
  void Hand(Done done, absl::Status status);
  // Runs what was handed over, then ends the thread; afterwards Hand runs the answer at
  // once on the caller's thread. Idempotent.
  void Stop();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<Done, absl::Status>> queue_;  // guarded by mu_
  bool stopping_ = false;                             // guarded by mu_
  std::thread thread_;
};

}  // namespace bench
