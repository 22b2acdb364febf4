#include "worker/agent/outbox.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "common/log.h"
#include "worker/agent/retry.h"

namespace bench::agent {

namespace {
size_t KindIndex(SpoolKind kind) {
  size_t index = static_cast<size_t>(kind);
  return index < 4 ? index : 0;
}
}  // namespace

// The batch being sent (kept for retries).
struct Outbox::InFlight {
  uint64_t discards = 0;               // discards_ when it was read
  uint64_t evictions = 0;              // evictions_ when it was read
  uint64_t last_ticket = 0;            // it covers the tickets up to here
  std::array<uint64_t, 4> carried{};   // records in the RPC, by kind
  std::array<uint64_t, 4> unusable{};  // records it could not carry (index 0: lost)
  std::vector<bool> carried_records;   // per read.records: in the RPC
  OutboxBatch read;
  uint64_t carried_total() const { return carried[1] + carried[2] + carried[3]; }
  // Takes its first `count` tickets out of carried and unusable: they were delivered
  // (evicted, and counted as dropped) while it was read or sent.
  void ForgetFront(uint64_t count) {
    for (uint64_t i = 0; i < count && i < read.covered(); ++i) {
      if (i < read.lost) {
        --unusable[0];
        continue;
      }
      const size_t record = i - read.lost;
      const size_t kind = KindIndex(read.records[record].kind);
      --(carried_records[record] ? carried[kind] : unusable[kind]);
    }
  }
};

Outbox::Outbox(OutboxStore* store, OutboxRpc* rpc, OutboxOptions options)
    : store_(store), rpc_(rpc), options_(std::move(options)) {
  agent_ = options_.agent;
  paused_ = options_.start_paused;
  stats_.replayed = store_->replayed();
  next_ticket_ = stats_.replayed + 1;
  if (stats_.replayed > 0) {
    Log("replaying ", stats_.replayed, " unacknowledged ", options_.noun, " from ", store_->name());
  }
  thread_ = std::thread([this] { Run(); });
}

Outbox::~Outbox() { Shutdown(); }

void Outbox::SetAgent(std::string agent) {
  absl::MutexLock lock(&mu_);
  agent_ = std::move(agent);
}

uint64_t Outbox::Add(OutboxRecord record) {
  const size_t kind = KindIndex(record.kind);
  absl::MutexLock lock(&mu_);
  ++stats_.added[kind];
  std::optional<SpoolKind> evicted;
  absl::Status appended = store_->Append(next_ticket_, std::move(record), &evicted);
  if (!appended.ok()) {
    ++stats_.dropped[kind];
    uint64_t dropped = 0;
    for (uint64_t count : stats_.dropped) dropped += count;
    if (ShouldLogAttempt(dropped)) {
      Log("warning: dropping ", options_.noun, ": ", appended.message(), "; ", dropped, " ",
          options_.noun, " dropped so far");
    }
    return next_ticket_ - 1;
  }
  if (evicted) {
    ++stats_.dropped[KindIndex(*evicted)];
    ++done_through_;
    ++evictions_;
    uint64_t dropped = 0;
    for (uint64_t count : stats_.dropped) dropped += count;
    if (ShouldLogAttempt(dropped)) {
      Log("warning: ", options_.noun, " queue full; dropped ", dropped, " oldest ", options_.noun,
          " so far");
    }
    delivered_cv_.SignalAll();
  }
  const uint64_t pending = PendingLocked() + 1;
  if (pending == 1 || pending == options_.max_batch) work_cv_.Signal();
  return next_ticket_++;
}

void Outbox::Pause() {
  absl::MutexLock lock(&mu_);
  paused_ = true;
}

void Outbox::Resume() {
  absl::MutexLock lock(&mu_);
  paused_ = false;
  work_cv_.SignalAll();
}

uint64_t Outbox::DiscardPending() {
  absl::MutexLock lock(&mu_);
  ++discards_;
  const uint64_t discarded = PendingLocked();
  absl::Status cleared = store_->Clear(next_ticket_ - 1);
  if (!cleared.ok()) Log("warning: ", cleared.message());
  done_through_ = next_ticket_ - 1;
  stats_.discarded += discarded;
  delivered_cv_.SignalAll();
  work_cv_.SignalAll();
  return discarded;
}

bool Outbox::WaitDelivered(uint64_t ticket) {
  absl::MutexLock lock(&mu_);
  while (done_through_ < ticket && !stopping_) delivered_cv_.Wait(&mu_);
  return done_through_ >= ticket;
}

bool Outbox::IsDelivered(uint64_t ticket) const {
  absl::MutexLock lock(&mu_);
  return ticket <= done_through_;
}

bool Outbox::Drain(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  while (PendingLocked() > 0 && !stopping_) {
    if (delivered_cv_.WaitWithDeadline(&mu_, deadline)) break;
  }
  return PendingLocked() == 0;
}

void Outbox::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    work_cv_.SignalAll();
    delivered_cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

OutboxStats Outbox::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void Outbox::SleepLocked(absl::Duration delay) {
  absl::Time deadline = absl::Now() + delay;
  while (!stopping_) {
    if (work_cv_.WaitWithDeadline(&mu_, deadline)) break;
  }
}

bool Outbox::NextBatchLocked(InFlight* batch, bool retrying) {
  if (!retrying && PendingLocked() < options_.max_batch && options_.linger > absl::ZeroDuration()) {
    absl::Time deadline = absl::Now() + options_.linger;
    while (!stopping_ && PendingLocked() < options_.max_batch) {
      if (work_cv_.WaitWithDeadline(&mu_, deadline)) break;
    }
    if (stopping_ || paused_ || PendingLocked() == 0) return false;
  }
  *batch = InFlight{};
  batch->discards = discards_;
  batch->evictions = evictions_;
  mu_.Unlock();
  batch->read = store_->ReadFront(options_.max_batch);
  rpc_->StartBatch();
  batch->unusable[0] = batch->read.lost;
  batch->carried_records.reserve(batch->read.records.size());
  for (const OutboxRecord& record : batch->read.records) {
    const size_t kind = KindIndex(record.kind);
    const bool carried = rpc_->AddToBatch(record);
    batch->carried_records.push_back(carried);
    ++(carried ? batch->carried[kind] : batch->unusable[kind]);
  }
  const uint64_t unusable = batch->read.records.size() - batch->carried_total();
  if (unusable > 0) {
    Log(store_->name(), ": ", unusable, " records are not ", options_.noun, "; skipped");
  }
  absl::Status synced = store_->Sync();
  if (!synced.ok()) Log("warning: ", synced.message());
  mu_.Lock();
  if (batch->discards != discards_) return false;  // what was read is discarded
  if (batch->read.covered() == 0) {
    // Nothing readable although records were counted: a bug or a vanished file.
    Log("warning: ", store_->name(), " has none of the ", PendingLocked(), " ", options_.noun,
        " expected; forgetting them");
    done_through_ = next_ticket_ - 1;
    delivered_cv_.SignalAll();
    return false;
  }
  batch->last_ticket = batch->read.first_ticket + batch->read.covered() - 1;
  if (batch->carried_total() == 0) {
    ReleaseLocked(batch);
    return false;
  }
  return true;
}

void Outbox::ReleaseLocked(InFlight* batch) {
  // Only evictions deliver a batch's tickets while it is read or sent (a discard makes
  // the outbox forget the batch instead): those records were counted as dropped then.
  if (done_through_ >= batch->read.first_ticket) {
    batch->ForgetFront(done_through_ - batch->read.first_ticket + 1);
  }
  absl::Status popped = store_->PopThrough(batch->last_ticket, batch->read);
  if (!popped.ok()) Log("warning: ", popped.message());
  done_through_ = std::max(done_through_, batch->last_ticket);
  for (size_t kind = 0; kind < 4; ++kind) stats_.dropped[kind] += batch->unusable[kind];
  delivered_cv_.SignalAll();
}

void Outbox::Run() {
  Backoff backoff(options_.initial_backoff, options_.max_backoff);
  uint64_t consecutive_failures = 0;
  int permanent_failures = 0;
  bool have_batch = false;
  bool retrying = false;  // the last send failed: no lingering before the next
  InFlight batch;
  mu_.Lock();
  while (!stopping_) {
    if (have_batch && batch.discards != discards_) have_batch = retrying = false;
    // Records evicted from a bounded memory store: read the front again.
    if (have_batch && batch.evictions != evictions_) have_batch = false;
    if (paused_ || (!have_batch && PendingLocked() == 0)) {
      work_cv_.Wait(&mu_);
      continue;
    }
    if (!have_batch) {
      if (!NextBatchLocked(&batch, retrying)) continue;
      have_batch = true;
      // Paused (or stopped) while the batch was read: nothing is sent; it waits.
      if (paused_ || stopping_) continue;
    }
    const std::string agent = agent_;
    mu_.Unlock();
    absl::Status status = rpc_->SendBatch(agent);
    mu_.Lock();
    if (batch.discards != discards_) {
      have_batch = false;  // discarded while in flight
      continue;
    }
    const bool give_up = !status.ok() && !IsTransientError(status) &&
                         permanent_failures + 1 >= options_.max_permanent_failures;
    if (status.ok() || give_up) {
      ReleaseLocked(&batch);
      if (status.ok()) {
        for (size_t kind = 0; kind < 4; ++kind) stats_.acknowledged[kind] += batch.carried[kind];
        ++stats_.batches;
        if (consecutive_failures > 0) {
          Log(options_.noun, " delivered after ", consecutive_failures, " failed attempts");
        }
      } else {
        ++stats_.failed_sends;
        for (size_t kind = 0; kind < 4; ++kind) stats_.dropped[kind] += batch.carried[kind];
        Log("warning: giving up on ", rpc_->DescribeBatch(), " after ", permanent_failures + 1,
            " rejected attempts: ", status.ToString());
      }
      have_batch = false;
      retrying = false;
      consecutive_failures = 0;
      permanent_failures = 0;
      backoff.Reset();
      continue;
    }
    ++stats_.failed_sends;
    ++consecutive_failures;
    retrying = true;
    if (!IsTransientError(status)) ++permanent_failures;
    absl::Duration delay = backoff.Next();
    if (ShouldLogAttempt(consecutive_failures)) {
      Log("sending ", rpc_->DescribeBatch(), " failed (attempt ", consecutive_failures, ", ",
          PendingLocked(), " ", options_.noun, " queued): ", status.ToString(), "; retrying in ",
          absl::FormatDuration(delay));
    }
    SleepLocked(delay);
  }
  mu_.Unlock();
}

}  // namespace bench::agent
