// Where an Outbox's records wait until the controller acknowledges them: in memory
// (MemoryOutboxStore, optionally written through to a Spool) or in the on-disk Spool
// itself (SpoolOutboxStore). A store is a FIFO of records numbered by tickets (1, 2, ...
// in the order appended; records found at open take the first ones); the Outbox decides
// what to append, read, pop and clear, and calls Append, PopThrough and Clear under its
// own lock (one at a time), ReadFront and Sync from its send thread. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "worker/agent/spool.h"

namespace bench::agent {

// One record: what kind of protobuf, and the protobuf serialized.
struct OutboxRecord {
  SpoolKind kind = SpoolKind::kIterationSample;
  std::string payload;
};

// The records at the front of a store, as ReadFront found them.
struct OutboxBatch {
  uint64_t first_ticket = 0;
  std::vector<OutboxRecord> records;
  uint64_t lost = 0;  // records at the front that could not be read (a corrupt spool)
  SpoolPosition end;  // SpoolOutboxStore: just after the batch
  // Tickets first_ticket .. first_ticket + covered() - 1.
  uint64_t covered() const { return records.size() + lost; }
};

class OutboxStore {
 public:
  virtual ~OutboxStore() = default;
  // Records a previous owner left (tickets 1 .. replayed()), found at construction.
  virtual uint64_t replayed() const = 0;
  // Queues `record` as `ticket` (the last ticket + 1). An error: it is not queued. A
  // bounded store may evict its oldest record to make room: its kind in *evicted.
  virtual absl::Status Append(uint64_t ticket, OutboxRecord record,
                              std::optional<SpoolKind>* evicted) = 0;
  // Up to `max` records from the front, left in the store.
  virtual OutboxBatch ReadFront(size_t max) = 0;
  // Makes the records appended so far durable (before they are sent).
  virtual absl::Status Sync() = 0;
  // Removes the records through `last_ticket`, read as `batch` (some may be gone
  // already, e.g. evicted).
  virtual absl::Status PopThrough(uint64_t last_ticket, const OutboxBatch& batch) = 0;
  // Removes every record (the last ticket given is `last_ticket`).
  virtual absl::Status Clear(uint64_t last_ticket) = 0;
  // For logs: "memory" or the spool's directory.
  virtual std::string name() const = 0;
};

// Records in memory, at most `max_records` (0: unbounded; beyond it the oldest is
// evicted). With a `mirror` spool (not owned, outlives the store, nobody else reads or
// acknowledges it) each record is also appended to it and fdatasync'ed before Append
// returns (one that cannot be is logged and kept in memory only), acknowledged there
// once popped, and what the spool holds at construction is loaded first (replay).
class MemoryOutboxStore final : public OutboxStore {
 public:
  explicit MemoryOutboxStore(size_t max_records = 0, Spool* mirror = nullptr);
  uint64_t replayed() const override { return replayed_; }
  absl::Status Append(uint64_t ticket, OutboxRecord record,
                      std::optional<SpoolKind>* evicted) override;
  OutboxBatch ReadFront(size_t max) override;
  absl::Status Sync() override { return absl::OkStatus(); }
  absl::Status PopThrough(uint64_t last_ticket, const OutboxBatch& batch) override;
  absl::Status Clear(uint64_t last_ticket) override;
  std::string name() const override;

 private:
  struct Entry {
    uint64_t ticket = 0;
    OutboxRecord record;
    std::optional<SpoolPosition> spooled;  // where it ends in the mirror
  };
  const size_t max_records_;
  Spool* const mirror_;
  uint64_t replayed_ = 0;
  mutable absl::Mutex mu_;
  std::deque<Entry> entries_ ABSL_GUARDED_BY(mu_);
};

// The spool is the queue: memory holds one batch whatever the backlog. Append writes the
// record (write(2)); a full spool refuses it (RESOURCE_EXHAUSTED). Sync is fdatasync;
// PopThrough acknowledges the batch in the spool. `spool` is not owned, outlives the
// store, and nobody else reads or acknowledges it.
class SpoolOutboxStore final : public OutboxStore {
 public:
  explicit SpoolOutboxStore(Spool* spool);
  uint64_t replayed() const override { return replayed_; }
  absl::Status Append(uint64_t ticket, OutboxRecord record,
                      std::optional<SpoolKind>* evicted) override;
  OutboxBatch ReadFront(size_t max) override;
  absl::Status Sync() override { return spool_->Sync(); }
  absl::Status PopThrough(uint64_t last_ticket, const OutboxBatch& batch) override;
  absl::Status Clear(uint64_t last_ticket) override;
  std::string name() const override { return "the spool " + spool_->dir(); }

 private:
  Spool* const spool_;
  uint64_t replayed_ = 0;
  absl::Mutex mu_;
  uint64_t front_ticket_ ABSL_GUARDED_BY(mu_) = 1;  // the ticket of the record at acked()
};

}  // namespace bench::agent
