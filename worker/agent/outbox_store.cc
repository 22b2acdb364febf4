#include "worker/agent/outbox_store.h"

#include <algorithm>
#include <utility>

#include "common/log.h"

namespace bench::agent {

MemoryOutboxStore::MemoryOutboxStore(size_t max_records, Spool* mirror)
    : max_records_(max_records), mirror_(mirror) {
  if (mirror_ == nullptr) return;
  absl::MutexLock lock(&mu_);
  SpoolPosition from = mirror_->acked();
  while (true) {
    std::vector<SpoolRecord> records;
    SpoolPosition next = mirror_->Read(from, 1000, &records);
    if (records.empty()) break;
    for (SpoolRecord& record : records) {
      Entry entry;
      entry.ticket = entries_.size() + 1;
      entry.record = OutboxRecord{record.kind, std::move(record.payload)};
      entry.spooled = record.end;
      entries_.push_back(std::move(entry));
    }
    from = next;
  }
  replayed_ = entries_.size();
}

absl::Status MemoryOutboxStore::Append(uint64_t ticket, OutboxRecord record,
                                       std::optional<SpoolKind>* evicted) {
  Entry entry;
  entry.ticket = ticket;
  if (mirror_ != nullptr) {
    absl::StatusOr<SpoolPosition> end = mirror_->Append(record.kind, record.payload);
    absl::Status synced = end.ok() ? mirror_->Sync() : end.status();
    if (end.ok()) entry.spooled = *end;
    if (!synced.ok()) {
      Log("warning: a record for ", mirror_->dir(),
          end.ok() ? " spooled but not synced: " : " kept in memory only: ", synced.message());
    }
  }
  entry.record = std::move(record);
  absl::MutexLock lock(&mu_);
  evicted->reset();
  if (max_records_ > 0 && entries_.size() >= max_records_) {
    *evicted = entries_.front().record.kind;
    entries_.pop_front();
  }
  entries_.push_back(std::move(entry));
  return absl::OkStatus();
}

OutboxBatch MemoryOutboxStore::ReadFront(size_t max) {
  absl::MutexLock lock(&mu_);
  OutboxBatch batch;
  if (entries_.empty()) return batch;
  batch.first_ticket = entries_.front().ticket;
  const size_t count = std::min(max, entries_.size());
  batch.records.reserve(count);
  for (size_t i = 0; i < count; ++i) batch.records.push_back(entries_[i].record);
  return batch;
}

absl::Status MemoryOutboxStore::PopThrough(uint64_t last_ticket, const OutboxBatch&) {
  std::optional<SpoolPosition> acknowledge;
  {
    absl::MutexLock lock(&mu_);
    while (!entries_.empty() && entries_.front().ticket <= last_ticket) {
      if (entries_.front().spooled) acknowledge = entries_.front().spooled;
      entries_.pop_front();
    }
  }
  return acknowledge && mirror_ != nullptr ? mirror_->Ack(*acknowledge) : absl::OkStatus();
}

absl::Status MemoryOutboxStore::Clear(uint64_t) {
  {
    absl::MutexLock lock(&mu_);
    entries_.clear();
  }
  return mirror_ != nullptr ? mirror_->Ack(mirror_->end()) : absl::OkStatus();
}

std::string MemoryOutboxStore::name() const {
  return mirror_ != nullptr ? "the spool " + mirror_->dir() : "memory";
}

SpoolOutboxStore::SpoolOutboxStore(Spool* spool)
    : spool_(spool), replayed_(spool->pending_at_open()) {}

absl::Status SpoolOutboxStore::Append(uint64_t, OutboxRecord record,
                                      std::optional<SpoolKind>* evicted) {
  evicted->reset();
  return spool_->Append(record.kind, record.payload).status();
}

OutboxBatch SpoolOutboxStore::ReadFront(size_t max) {
  OutboxBatch batch;
  {
    absl::MutexLock lock(&mu_);
    batch.first_ticket = front_ticket_;
  }
  std::vector<SpoolRecord> records;
  batch.end = spool_->Read(spool_->acked(), max, &records, &batch.lost);
  batch.records.reserve(records.size());
  for (SpoolRecord& record : records) {
    batch.records.push_back(OutboxRecord{record.kind, std::move(record.payload)});
  }
  return batch;
}

absl::Status SpoolOutboxStore::PopThrough(uint64_t last_ticket, const OutboxBatch& batch) {
  {
    absl::MutexLock lock(&mu_);
    front_ticket_ = std::max(front_ticket_, last_ticket + 1);
  }
  return spool_->Ack(batch.end);
}

absl::Status SpoolOutboxStore::Clear(uint64_t last_ticket) {
  {
    absl::MutexLock lock(&mu_);
    front_ticket_ = last_ticket + 1;
  }
  return spool_->Ack(spool_->end());
}

}  // namespace bench::agent
