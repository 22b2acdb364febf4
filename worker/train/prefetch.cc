#include "worker/train/prefetch.h"

#include <exception>
#include <string>
#include <utility>

namespace bench_train {

StatusOr<std::unique_ptr<PrefetchEngine>> PrefetchEngine::Start(const PrefetchOptions& options,
                                                                Fill fill) {
  if (options.batch_size < 1) {
    return InvalidArgumentError("prefetch: batch_size must be at least 1, not " +
                                std::to_string(options.batch_size));
  }
  if (options.num_slots < 1) {
    return InvalidArgumentError("prefetch: num_slots must be at least 1, not " +
                                std::to_string(options.num_slots));
  }
  if (options.threads < 1) {
    return InvalidArgumentError("prefetch: threads must be at least 1, not " +
                                std::to_string(options.threads));
  }
  if (!fill) return InvalidArgumentError("prefetch: no fill function");
  std::unique_ptr<PrefetchEngine> engine(new PrefetchEngine(options, std::move(fill)));
  for (int t = 0; t < options.threads; ++t) {
    engine->threads_.emplace_back([raw = engine.get()] { raw->Loop(); });
  }
  return engine;
}

PrefetchEngine::PrefetchEngine(const PrefetchOptions& options, Fill fill)
    : options_(options),
      fill_(std::move(fill)),
      slot_batch_(static_cast<size_t>(options.num_slots)),
      slot_filled_(static_cast<size_t>(options.num_slots), 0) {
  for (int s = 0; s < options.num_slots; ++s) slot_batch_[static_cast<size_t>(s)] = s;
}

PrefetchEngine::~PrefetchEngine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& thread : threads_) thread.join();
}

void PrefetchEngine::Loop() {
  const int64_t slots = options_.num_slots;
  for (;;) {
    PrefetchItem item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stop_ || !error_.ok()) return;
      item.index = next_item_++;
      item.batch = item.index / options_.batch_size;
      item.position = item.index % options_.batch_size;
      item.slot = static_cast<int>(item.batch % slots);
      const size_t slot = static_cast<size_t>(item.slot);
      cv_.wait(lock, [&] { return stop_ || !error_.ok() || slot_batch_[slot] == item.batch; });
      if (stop_ || !error_.ok()) return;
    }
    Status status;
    try {
      status = fill_(item);
    } catch (const std::exception& e) {
      status = InternalError(std::string("prefetch: filling a sample threw: ") + e.what());
    } catch (...) {
      status = InternalError("prefetch: filling a sample threw a non-standard exception");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!status.ok()) {
        if (error_.ok()) error_ = std::move(status);
      } else {
        ++slot_filled_[static_cast<size_t>(item.slot)];
      }
    }
    cv_.notify_all();
  }
}

StatusOr<PrefetchedBatch> PrefetchEngine::Next() {
  std::unique_lock<std::mutex> lock(mu_);
  const size_t slot = static_cast<size_t>(next_batch_ % options_.num_slots);
  cv_.wait(lock, [&] {
    return !error_.ok() ||
           (slot_batch_[slot] == next_batch_ && slot_filled_[slot] == options_.batch_size);
  });
  if (!error_.ok()) return error_;
  PrefetchedBatch batch;
  batch.number = next_batch_++;
  batch.slot = static_cast<int>(slot);
  return batch;
}

bool PrefetchEngine::Release(int64_t number) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (number < 0 || number >= next_batch_) return false;
    const size_t slot = static_cast<size_t>(number % options_.num_slots);
    if (slot_batch_[slot] != number) return false;
    slot_batch_[slot] = number + options_.num_slots;
    slot_filled_[slot] = 0;
  }
  cv_.notify_all();
  return true;
}

}  // namespace bench_train
