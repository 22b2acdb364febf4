// The prefetch engine alone: batches of integers filled on many threads, checked for
// order, the bound on batches in flight, errors and shutdown. No sleeps: the tests wait
// for conditions with generous deadlines.
#include "worker/train/prefetch.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace bench_train {
namespace {

constexpr auto kDeadline = std::chrono::seconds(60);

// What the fills write: sample `index` puts `index` at its place in its slot.
class Slots {
 public:
  Slots(int num_slots, int64_t batch_size)
      : values_(static_cast<size_t>(num_slots),
                std::vector<int64_t>(static_cast<size_t>(batch_size), -1)) {}
  void Fill(const PrefetchItem& item) {
    values_[static_cast<size_t>(item.slot)][static_cast<size_t>(item.position)] = item.index;
  }
  const std::vector<int64_t>& slot(int s) const { return values_[static_cast<size_t>(s)]; }

 private:
  std::vector<std::vector<int64_t>> values_;
};

// Uneven work, so that threads finish their samples out of order.
int64_t Busy(int64_t index) {
  int64_t x = index;
  for (int64_t i = 0; i < (index * 7919) % 2000; ++i) {
    x = x * 6364136223846793005LL + 1442695040888963407LL;
    if (i % 256 == 0) std::this_thread::yield();
  }
  return x;
}

// A condition the test waits for, set from the fills.
class Signal {
 public:
  void Update(const std::function<void()>& change) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      change();
    }
    cv_.notify_all();
  }
  bool WaitFor(const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kDeadline, done);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

// Destroys `engine` on another thread; false if that has not returned within the deadline
// (then the engine is left to that thread, and the test fails instead of hanging).
bool DestroysInTime(std::unique_ptr<PrefetchEngine> engine) {
  auto done = std::make_shared<Signal>();
  auto finished = std::make_shared<bool>(false);
  std::thread([engine = std::move(engine), done, finished]() mutable {
    engine.reset();
    done->Update([&] { *finished = true; });
  }).detach();
  return done->WaitFor([&] { return *finished; });
}

PrefetchOptions Options(int64_t batch_size, int num_slots, int threads) {
  PrefetchOptions options;
  options.batch_size = batch_size;
  options.num_slots = num_slots;
  options.threads = threads;
  return options;
}

TEST(PrefetchEngineTest, BatchesComeInOrderWithTheirOwnSamples) {
  const PrefetchOptions options = Options(5, 3, 8);
  Slots slots(options.num_slots, options.batch_size);
  std::atomic<int64_t> sink{0};
  auto engine = PrefetchEngine::Start(options, [&](const PrefetchItem& item) {
    sink += Busy(item.index);
    slots.Fill(item);
    return Status();
  });
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  for (int64_t b = 0; b < 200; ++b) {
    auto batch = (*engine)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status().message();
    ASSERT_EQ(batch->number, b);
    ASSERT_EQ(batch->slot, b % options.num_slots);
    for (int64_t p = 0; p < options.batch_size; ++p) {
      ASSERT_EQ(slots.slot(batch->slot)[static_cast<size_t>(p)], b * options.batch_size + p)
          << "batch " << b << " position " << p;
    }
    ASSERT_TRUE((*engine)->Release(batch->number));
  }
}

TEST(PrefetchEngineTest, ItemsDescribeTheirPlace) {
  const PrefetchOptions options = Options(4, 2, 3);
  std::atomic<int> wrong{0};
  auto engine = PrefetchEngine::Start(options, [&](const PrefetchItem& item) {
    if (item.batch != item.index / 4 || item.position != item.index % 4 ||
        item.slot != item.batch % 2) {
      ++wrong;
    }
    return Status();
  });
  ASSERT_TRUE(engine.ok());
  for (int b = 0; b < 20; ++b) {
    auto batch = (*engine)->Next();
    ASSERT_TRUE(batch.ok());
    (*engine)->Release(batch->number);
  }
  EXPECT_EQ(wrong.load(), 0);
}

// At most num_slots batches exist at once: a sample is filled only into a slot the consumer
// has given back, never beyond the ring ahead of the last release.
TEST(PrefetchEngineTest, FillsNoMoreThanTheSlotsAhead) {
  const PrefetchOptions options = Options(3, 4, 8);
  std::atomic<int64_t> released{0};  // raised before each Release
  std::vector<std::atomic<bool>> held(static_cast<size_t>(options.num_slots));
  for (auto& h : held) h = false;
  std::atomic<int> too_far{0}, into_held{0};
  auto engine = PrefetchEngine::Start(options, [&](const PrefetchItem& item) {
    if (item.batch >= released.load() + options.num_slots) ++too_far;
    if (held[static_cast<size_t>(item.slot)].load()) ++into_held;
    Busy(item.index);
    return Status();
  });
  ASSERT_TRUE(engine.ok());
  // The whole ring is prepared ahead: num_slots batches come without any release.
  std::vector<int64_t> in_hand;
  for (int i = 0; i < options.num_slots; ++i) {
    auto batch = (*engine)->Next();
    ASSERT_TRUE(batch.ok());
    held[static_cast<size_t>(batch->slot)] = true;
    in_hand.push_back(batch->number);
  }
  // Then one release lets exactly one more batch in.
  for (int64_t b = options.num_slots; b < 100; ++b) {
    const int64_t oldest = in_hand.front();
    in_hand.erase(in_hand.begin());
    held[static_cast<size_t>(oldest % options.num_slots)] = false;
    ++released;
    ASSERT_TRUE((*engine)->Release(oldest));
    auto batch = (*engine)->Next();
    ASSERT_TRUE(batch.ok());
    ASSERT_EQ(batch->number, b);
    held[static_cast<size_t>(batch->slot)] = true;
    in_hand.push_back(batch->number);
  }
  EXPECT_EQ(too_far.load(), 0);
  EXPECT_EQ(into_held.load(), 0);
}

TEST(PrefetchEngineTest, ReleaseTakesOnlyBatchesInHand) {
  auto engine =
      PrefetchEngine::Start(Options(2, 2, 2), [](const PrefetchItem&) { return Status(); });
  ASSERT_TRUE(engine.ok());
  EXPECT_FALSE((*engine)->Release(0));  // not handed out yet
  EXPECT_FALSE((*engine)->Release(-1));
  auto batch = (*engine)->Next();
  ASSERT_TRUE(batch.ok());
  EXPECT_FALSE((*engine)->Release(1));
  EXPECT_TRUE((*engine)->Release(0));
  EXPECT_FALSE((*engine)->Release(0));  // twice
  batch = (*engine)->Next();
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->number, 1);
}

TEST(PrefetchEngineTest, AFailedSampleStopsTheStreamWithItsStatus) {
  const PrefetchOptions options = Options(3, 3, 6);
  auto engine = PrefetchEngine::Start(options, [](const PrefetchItem& item) {
    if (item.index == 17) return InvalidArgumentError("sample 17 is unreadable");
    return Status();
  });
  ASSERT_TRUE(engine.ok());
  Status error;
  for (int i = 0; i < 50 && error.ok(); ++i) {
    auto batch = (*engine)->Next();
    if (!batch.ok()) {
      error = batch.status();
      break;
    }
    EXPECT_LT(batch->number, 17 / options.batch_size) << "a batch without sample 17's fill";
    (*engine)->Release(batch->number);
  }
  EXPECT_EQ(error.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(error.message(), "sample 17 is unreadable");
  auto again = (*engine)->Next();  // and it stays failed
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(), "sample 17 is unreadable");
  EXPECT_TRUE(DestroysInTime(std::move(engine).value()));
}

TEST(PrefetchEngineTest, AThrowingFillIsAnInternalError) {
  auto engine = PrefetchEngine::Start(Options(2, 2, 3), [](const PrefetchItem& item) -> Status {
    if (item.index == 4) throw std::runtime_error("decoder exploded");
    return Status();
  });
  ASSERT_TRUE(engine.ok());
  Status error;
  for (int i = 0; i < 10 && error.ok(); ++i) {
    auto batch = (*engine)->Next();
    if (!batch.ok()) {
      error = batch.status();
    } else {
      (*engine)->Release(batch->number);
    }
  }
  EXPECT_EQ(error.code(), StatusCode::kInternal);
  EXPECT_NE(error.message().find("decoder exploded"), std::string::npos) << error.message();
}

// Every slot filled and never taken: the other threads wait for a slot; the destructor
// wakes and joins them.
TEST(PrefetchEngineTest, StopsWithThreadsWaitingForSlots) {
  const PrefetchOptions options = Options(2, 2, 8);
  Signal signal;
  int filled = 0;
  auto engine = PrefetchEngine::Start(options, [&](const PrefetchItem&) {
    signal.Update([&] { ++filled; });
    return Status();
  });
  ASSERT_TRUE(engine.ok());
  const int ring = static_cast<int>(options.batch_size) * options.num_slots;
  ASSERT_TRUE(signal.WaitFor([&] { return filled == ring; }));
  EXPECT_TRUE(DestroysInTime(std::move(engine).value()));
  int filled_in_the_end = 0;
  signal.Update([&] { filled_in_the_end = filled; });
  EXPECT_EQ(filled_in_the_end, ring) << "filled past the ring";
}

// Destroyed while the consumer holds a batch and a fill is in progress: the destructor waits
// for that fill, and no fill runs once it has returned.
TEST(PrefetchEngineTest, DestroyedMidStream) {
  const PrefetchOptions options = Options(4, 3, 4);
  Signal signal;
  bool open = false;
  int in_fill = 0;
  int64_t blocked = -1;
  std::atomic<bool> destroyed{false};
  std::atomic<int> after_destruction{0};
  Slots slots(options.num_slots, options.batch_size);
  auto engine = PrefetchEngine::Start(options, [&](const PrefetchItem& item) {
    if (destroyed.load()) ++after_destruction;
    signal.Update([&] { ++in_fill; });
    if (item.index == 4 * options.batch_size + 1) {  // batch 4 waits for the gate
      signal.Update([&] { blocked = item.index; });
      signal.WaitFor([&] { return open; });
    }
    slots.Fill(item);
    signal.Update([&] { --in_fill; });
    return Status();
  });
  ASSERT_TRUE(engine.ok());
  for (int64_t b = 0; b < 3; ++b) {
    auto batch = (*engine)->Next();
    ASSERT_TRUE(batch.ok());
    if (b < 2) (*engine)->Release(batch->number);  // batch 2 stays in hand (slot 2)
  }
  // Batches 3 and 4 go into slots 0 and 1; batch 5's samples wait for slot 2.
  ASSERT_TRUE(signal.WaitFor([&] { return blocked >= 0; }));

  auto finished = std::make_shared<bool>(false);
  auto done = std::make_shared<Signal>();
  std::thread destroyer([raw = engine->release(), done, finished] {
    delete raw;
    done->Update([&] { *finished = true; });
  });
  signal.Update([&] { open = true; });
  const bool returned = done->WaitFor([&] { return *finished; });
  if (!returned) {
    destroyer.detach();
    FAIL() << "the destructor did not return";
  }
  destroyer.join();
  destroyed = true;
  int still_filling = -1;
  signal.Update([&] { still_filling = in_fill; });
  EXPECT_EQ(still_filling, 0);
  EXPECT_EQ(after_destruction.load(), 0);
}

TEST(PrefetchEngineTest, BadOptionsAreNamed) {
  const PrefetchEngine::Fill fill = [](const PrefetchItem&) { return Status(); };
  struct Case {
    PrefetchOptions options;
    const char* names;
  };
  const Case cases[] = {
      {Options(0, 2, 1), "batch_size"},
      {Options(2, 0, 1), "num_slots"},
      {Options(2, 2, 0), "threads"},
      {Options(-1, 2, 1), "batch_size"},
  };
  for (const Case& c : cases) {
    auto engine = PrefetchEngine::Start(c.options, fill);
    ASSERT_FALSE(engine.ok()) << c.names;
    EXPECT_EQ(engine.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(engine.status().message().find(c.names), std::string::npos)
        << engine.status().message();
  }
  auto engine = PrefetchEngine::Start(Options(1, 1, 1), nullptr);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("fill"), std::string::npos);
}

}  // namespace
}  // namespace bench_train
