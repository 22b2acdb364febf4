// The data sources' prefetch engine: loader threads fill batches, sample by sample, into
// a fixed ring of slots ahead of one consumer, which takes them in order (the image folder
// loader, image_folder.h, and the COCO source, coco_source.h).
//
// Torch-free: what a slot holds is the caller's; the engine hands out slot numbers. Batch
// b lives in slot b % num_slots. Sample `index` (batch * batch_size + position) is one
// work item: threads take items in order, wait until the item's slot belongs to its batch
// (the consumer has released the batch num_slots before it), and call `fill` for it, so
// at most num_slots batches exist at a time (one ring of them ahead of the consumer, the
// ones it holds included). Next() returns batches in order 0, 1, 2, ..., each once all of
// its samples are filled; Release() gives a batch's slot back to the threads.
//
// Errors: the first `fill` that returns a non-OK Status (or throws: INTERNAL naming the
// exception) stops the threads; from then on Next() returns that Status, even for batches
// already complete. Bad options are INVALID_ARGUMENT from Start, naming the option.
//
// Thread-safety: Next() and Release() from one consumer thread; `fill` runs on the engine's
// threads, concurrently for different items (and for different samples of one batch). The
// destructor stops the threads, waking those waiting for a slot, and joins them once their
// current `fill` has returned: destroy the engine before what `fill` writes into.
#ifndef BENCHFLEET_WORKER_TRAIN_PREFETCH_H_
#define BENCHFLEET_WORKER_TRAIN_PREFETCH_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "worker/train/status.h"

namespace bench_train {

struct PrefetchOptions {
  int64_t batch_size = 0;  // samples per batch, >= 1
  int num_slots = 0;       // batches in flight, >= 1
  int threads = 0;         // loader threads, >= 1
};

// One sample to fill.
struct PrefetchItem {
  int64_t index = 0;     // batch * batch_size + position: the place in the sample stream
  int64_t batch = 0;     // 0-based
  int64_t position = 0;  // in its batch, 0..batch_size-1
  int slot = 0;          // batch % num_slots
};

// A complete batch, as Next() hands it out.
struct PrefetchedBatch {
  int64_t number = 0;
  int slot = 0;
};

class PrefetchEngine {
 public:
  using Fill = std::function<Status(const PrefetchItem& item)>;

  // Starts options.threads threads calling `fill`.
  static StatusOr<std::unique_ptr<PrefetchEngine>> Start(const PrefetchOptions& options, Fill fill);
  ~PrefetchEngine();
  PrefetchEngine(const PrefetchEngine&) = delete;
  PrefetchEngine& operator=(const PrefetchEngine&) = delete;

  // Blocks until the next batch (in order) is complete, or returns the first error.
  StatusOr<PrefetchedBatch> Next();
  // Gives batch `number`'s slot back to the threads. False (and nothing done) for a batch
  // that Next() has not handed out or that was already released.
  bool Release(int64_t number);

  const PrefetchOptions& options() const { return options_; }

 private:
  PrefetchEngine(const PrefetchOptions& options, Fill fill);
  void Loop();

  const PrefetchOptions options_;
  const Fill fill_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  Status error_;                      // the first failure; OK while there is none
  int64_t next_item_ = 0;             // the next sample a thread takes
  int64_t next_batch_ = 0;            // the next batch Next() hands out
  std::vector<int64_t> slot_batch_;   // the batch that owns each slot now
  std::vector<int64_t> slot_filled_;  // its samples filled
  std::vector<std::thread> threads_;  // last: started once the rest is set up
};

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_PREFETCH_H_
