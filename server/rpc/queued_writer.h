// A server-streaming reactor that writes queued messages in order. Push() and Close()
// may be called from any thread at any time; after the stream is finished they do
// nothing. On the end of the RPC (finished or cancelled) `on_done` runs once, then the
// reactor deletes itself; the owner must drop any pointer to it inside `on_done`.
// With `latest_only`, each message is a full snapshot and a slow reader gets only the
// newest one waiting (memory stays bounded); otherwise every message is delivered.
#pragma once

#include <deque>
#include <functional>
#include <mutex>
#include <utility>

#include <grpcpp/grpcpp.h>

namespace bench {

template <typename Message>
class QueuedWriter : public grpc::ServerWriteReactor<Message> {
 public:
  explicit QueuedWriter(bool latest_only = false) : latest_only_(latest_only) {}

  void set_on_done(std::function<void()> on_done) {
    std::lock_guard<std::mutex> lock(mu_);
    on_done_ = std::move(on_done);
  }

  void Push(Message message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    // queue_.front() is in flight while writing_; anything behind it is only waiting.
    if (latest_only_ && queue_.size() > (writing_ ? 1u : 0u)) queue_.pop_back();
    queue_.push_back(std::move(message));
    if (!writing_) StartNextWriteLocked();
  }

  // Finishes the stream once every queued message is written.
  void Close(grpc::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    closing_ = true;
    final_status_ = std::move(status);
    if (!writing_) FinishLocked();
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    queue_.pop_front();
    if (!ok) {  // the client went away
      closing_ = true;
      queue_.clear();
      FinishLocked();
      return;
    }
    if (!queue_.empty()) {
      StartNextWriteLocked();
    } else if (closing_) {
      FinishLocked();
    }
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    final_status_ = grpc::Status::CANCELLED;
    if (!writing_) FinishLocked();
  }

  void OnDone() override {
    std::function<void()> on_done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      on_done = std::move(on_done_);
    }
    if (on_done) on_done();
    delete this;
  }

 private:
  void StartNextWriteLocked() {
    writing_ = true;
    this->StartWrite(&queue_.front());
  }
  void FinishLocked() {
    if (finished_) return;
    finished_ = true;
    this->Finish(final_status_);
  }

  const bool latest_only_;
  std::mutex mu_;
  std::deque<Message> queue_;
  bool writing_ = false;
  bool closing_ = false;
  bool finished_ = false;
  grpc::Status final_status_;
  std::function<void()> on_done_;
};

}  // namespace bench
