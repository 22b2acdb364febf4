#include "server/store/answer_thread.h"

namespace bench {

AnswerThread::AnswerThread() : thread_([this] { Loop(); }) {}

AnswerThread::~AnswerThread() { Stop(); }

void AnswerThread::Hand(Done done, absl::Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      queue_.emplace_back(std::move(done), std::move(status));
      if (queue_.size() == 1) cv_.notify_one();
      return;
    }
  }
  done(std::move(status));
}

void AnswerThread::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void AnswerThread::Loop() {
  std::vector<std::pair<Done, absl::Status>> answers;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every answer given
      answers.swap(queue_);
    }
    for (auto& [done, status] : answers) done(std::move(status));
    answers.clear();
  }
}

}  // namespace bench
