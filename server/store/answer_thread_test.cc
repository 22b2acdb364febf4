#include "server/store/answer_thread.h"

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace bench {
namespace {

TEST(AnswerThreadTest, AnswersRunInTheOrderHandedOverOnAThreadOfTheirOwn) {
  std::vector<int> order;  // written only by the answer thread
  std::vector<absl::StatusCode> codes;
  std::promise<std::thread::id> where;
  {
    AnswerThread answers;
    for (int i = 0; i < 1000; ++i) {
      answers.Hand(
          [&order, &codes, i](absl::Status status) {
            order.push_back(i);
            codes.push_back(status.code());
          },
          i % 3 == 0 ? absl::UnavailableError("full disk") : absl::OkStatus());
    }
    answers.Hand([&where](absl::Status) { where.set_value(std::this_thread::get_id()); },
                 absl::OkStatus());
    EXPECT_NE(where.get_future().get(), std::this_thread::get_id());
  }  // Stop: everything handed over has run
  ASSERT_EQ(order.size(), 1000u);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(order[i], i);
    EXPECT_EQ(codes[i], i % 3 == 0 ? absl::StatusCode::kUnavailable : absl::StatusCode::kOk);
  }
}

TEST(AnswerThreadTest, StopRunsWhatWasHandedOverAndLaterAnswersRunOnTheCaller) {
  AnswerThread answers;
  std::atomic<int> ran{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  // The first answer holds the thread while more queue up behind it.
  answers.Hand([&, released](absl::Status) { released.wait(); ++ran; }, absl::OkStatus());
  for (int i = 0; i < 10; ++i) answers.Hand([&](absl::Status) { ++ran; }, absl::OkStatus());
  std::thread stopper([&] { answers.Stop(); });
  release.set_value();
  stopper.join();
  EXPECT_EQ(ran.load(), 11);
  std::thread::id where;
  answers.Hand([&](absl::Status) { where = std::this_thread::get_id(); }, absl::OkStatus());
  EXPECT_EQ(where, std::this_thread::get_id());
  answers.Stop();  // again: nothing
}

}  // namespace
}  // namespace bench
