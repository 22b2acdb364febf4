// The agent's one send loop: records (samples, status reports) queued in an OutboxStore
// (memory or the on-disk spool, outbox_store.h) go to the controller through an OutboxRpc,
// at least once, in order.
//
// A background thread reads up to max_batch records from the front of the store (after
// waiting up to `linger` for a full batch; 0: no wait), syncs the store, and sends them as
// one batch. The batch leaves the store only when the controller acknowledges it (the RPC
// returns OK). A failed send is retried, the same batch, with back-off (the controller
// dedupes by identity, so a retry after a lost acknowledgement is harmless); a batch
// refused with a non-transient error max_permanent_failures times in a row is dropped
// with a warning, so that one poisoned batch cannot block the rest. Records the RPC cannot
// carry (unparsable, or of a kind it does not send) and records lost in a corrupt spool
// are dropped, counted and logged.
//
// Tickets: every queued record gets the next ticket (1, 2, ...; records found in the
// store at construction, the replay, take the first ones). A record the store refuses
// (a full spool) is dropped, counted and logged (the 1st, 2nd, 4th, ... and every 30th
// time) and Add returns the previous ticket, so tickets never decrease. A record is
// delivered once acknowledged or given up on (dropped, evicted, discarded).
//
// Holding: while paused (Pause(), or from construction with options.start_paused)
// nothing is sent, not even a retry; records keep queueing. DiscardPending() forgets
// everything queued without sending it (a batch in flight then is not released by its
// outcome): the records were meant for another controller database.
//
// Thread-safe. The store and the RPC are not owned and must outlive the outbox; the RPC
// is only called from the outbox's thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "worker/agent/outbox_store.h"
#include "worker/agent/spool.h"

namespace bench::agent {

// Turns a batch of records into one RPC to the controller, e.g. UploadSamples. Called
// only from the outbox's thread: StartBatch, AddToBatch per record, then SendBatch once
// or more (retries of the same batch).
class OutboxRpc {
 public:
  virtual ~OutboxRpc() = default;
  virtual void StartBatch() = 0;
  // False if `record` cannot be carried (unparsable, or a kind this RPC does not send).
  virtual bool AddToBatch(const OutboxRecord& record) = 0;
  // Sends the batch built, with `agent` in the request's agent field.
  virtual absl::Status SendBatch(const std::string& agent) = 0;
  // The batch for logs, e.g. "a batch of 12 samples", "a status report for job job-1".
  virtual std::string DescribeBatch() const = 0;
};

struct OutboxOptions {
  std::string noun = "records";  // in logs: "samples", "status reports"
  size_t max_batch = 2000;       // records per send
  absl::Duration linger = absl::Milliseconds(50);
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(2);
  int max_permanent_failures = 5;
  // The agent field of each send until SetAgent (so that a replay is not sent without).
  std::string agent;
  bool start_paused = false;  // nothing is sent until Resume()
};

// Counts of records, by SpoolKind (index: the kind's value; 0 for records of no known
// kind, e.g. lost in a corrupt spool), and of sends. A record is counted once, when it is
// delivered: acknowledged, dropped or discarded (one evicted while its batch was being
// sent is dropped, whatever that send's outcome).
struct OutboxStats {
  std::array<uint64_t, 4> added{};
  std::array<uint64_t, 4> acknowledged{};  // in acknowledged batches
  std::array<uint64_t, 4> dropped{};       // refused by the store, evicted, given up on
  uint64_t failed_sends = 0;
  uint64_t batches = 0;    // acknowledged sends
  uint64_t replayed = 0;   // found in the store at construction
  uint64_t discarded = 0;  // forgotten by DiscardPending
};

class Outbox {
 public:
  Outbox(OutboxStore* store, OutboxRpc* rpc, OutboxOptions options);
  ~Outbox();  // Shutdown()
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  void SetAgent(std::string agent);
  // Queues a record; returns its ticket (see above).
  uint64_t Add(OutboxRecord record);
  void Pause();
  void Resume();
  // Forgets every record queued now; returns how many. They count as delivered.
  uint64_t DiscardPending();
  // Blocks until every record through `ticket` is delivered (true) or the outbox shuts
  // down first (false).
  bool WaitDelivered(uint64_t ticket);
  bool IsDelivered(uint64_t ticket) const;
  // Waits until nothing is queued (true) or `deadline` passes or the outbox stops (false).
  bool Drain(absl::Time deadline);
  // Stops the thread after a send in flight returns; what is not acknowledged is
  // abandoned (a spool keeps it for the next agent). Idempotent.
  void Shutdown();
  OutboxStats stats() const;

 private:
  struct InFlight;
  void Run();
  uint64_t PendingLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return next_ticket_ - 1 - done_through_;
  }
  // Reads, builds and syncs the next batch (lingering first unless `retrying`); false if
  // there is none to send (the loop starts over). Releases mu_ meanwhile.
  bool NextBatchLocked(InFlight* batch, bool retrying) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes the batch's records from the store: they are delivered. Takes the records
  // evicted meanwhile out of the batch's counts.
  void ReleaseLocked(InFlight* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SleepLocked(absl::Duration delay) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  OutboxStore* const store_;
  OutboxRpc* const rpc_;
  const OutboxOptions options_;

  mutable absl::Mutex mu_;
  absl::CondVar work_cv_;       // the send thread waits here
  absl::CondVar delivered_cv_;  // WaitDelivered / Drain wait here
  std::string agent_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t done_through_ ABSL_GUARDED_BY(mu_) = 0;  // every ticket <= it is delivered
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t discards_ ABSL_GUARDED_BY(mu_) = 0;   // increased by DiscardPending
  uint64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;  // records a bounded store evicted
  OutboxStats stats_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace bench::agent
