#include "worker/agent/sample_uploader.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/agent/agent_log.h"
#include "worker/agent/retry.h"

namespace bench::agent {

SampleUploader::SampleUploader(SampleUploadRpc* rpc, SampleUploaderOptions options,
                               Spool* spool)
    : rpc_(rpc), options_(std::move(options)), spool_(spool) {
  agent_ = options_.agent;
  paused_ = options_.start_paused;
  if (spool_ != nullptr) {
    spooled_ = spool_->pending_at_open();
    next_ticket_ = spooled_ + 1;
    stats_.replayed = spooled_;
    if (spooled_ > 0) {
      AgentLog(absl::StrCat("replaying ", spooled_, " unacknowledged samples from the spool ",
                            spool_->dir()));
    }
    thread_ = std::thread([this] { RunSpooled(); });
  } else {
    thread_ = std::thread([this] { Run(); });
  }
}

SampleUploader::~SampleUploader() { Shutdown(); }

void SampleUploader::SetAgent(std::string agent) {
  absl::MutexLock lock(&mu_);
  agent_ = std::move(agent);
}

void SampleUploader::Pause() {
  absl::MutexLock lock(&mu_);
  paused_ = true;
}

void SampleUploader::Resume() {
  absl::MutexLock lock(&mu_);
  paused_ = false;
  work_cv_.SignalAll();
}

uint64_t SampleUploader::DiscardPending() {
  absl::MutexLock lock(&mu_);
  ++discards_;
  uint64_t discarded = 0;
  if (spool_ != nullptr) {
    discarded = spooled_;
    absl::Status acked = spool_->Ack(spool_->end());
    if (!acked.ok()) AgentLog(absl::StrCat("warning: ", acked.message()));
    spooled_ = 0;
    spool_done_through_ = next_ticket_ - 1;
  } else {
    discarded = queue_.size();
    queue_.clear();
  }
  stats_.discarded += discarded;
  delivered_cv_.SignalAll();
  work_cv_.SignalAll();
  return discarded;
}

uint64_t SampleUploader::Add(benchfleet::v1::IterationSample sample) {
  if (spool_ != nullptr) {
    std::string payload = sample.SerializeAsString();
    absl::MutexLock lock(&mu_);
    ++stats_.added;
    return AppendToSpoolLocked(SpoolKind::kIterationSample, payload, /*gpu=*/false);
  }
  absl::MutexLock lock(&mu_);
  ++stats_.added;
  return Enqueue(Entry{0, std::move(sample)});
}

uint64_t SampleUploader::AddGpuSample(benchfleet::v1::GpuSample sample) {
  if (spool_ != nullptr) {
    std::string payload = sample.SerializeAsString();
    absl::MutexLock lock(&mu_);
    ++stats_.gpu_added;
    return AppendToSpoolLocked(SpoolKind::kGpuSample, payload, /*gpu=*/true);
  }
  absl::MutexLock lock(&mu_);
  ++stats_.gpu_added;
  return Enqueue(Entry{0, std::move(sample)});
}

uint64_t SampleUploader::AppendToSpoolLocked(SpoolKind kind, const std::string& payload,
                                             bool gpu) {
  absl::StatusOr<SpoolPosition> appended = spool_->Append(kind, payload);
  if (!appended.ok()) {
    ++(gpu ? stats_.gpu_dropped : stats_.dropped);
    uint64_t dropped = stats_.dropped + stats_.gpu_dropped;
    if (ShouldLogAttempt(dropped)) {
      AgentLog(absl::StrCat("warning: dropping samples: ", appended.status().message(),
                            "; ", dropped, " samples dropped so far"));
    }
    return next_ticket_ - 1;
  }
  ++spooled_;
  if (spooled_ == 1 || spooled_ == options_.max_batch) work_cv_.Signal();
  return next_ticket_++;
}

bool SampleUploader::EmptyLocked() const {
  return spool_ != nullptr ? spooled_ == 0 : queue_.empty();
}

uint64_t SampleUploader::Enqueue(Entry entry) {
  entry.ticket = next_ticket_++;
  if (options_.max_queued > 0 && queue_.size() >= options_.max_queued) {
    ++(queue_.front().gpu() ? stats_.gpu_dropped : stats_.dropped);
    queue_.pop_front();
    uint64_t dropped = stats_.dropped + stats_.gpu_dropped;
    if (ShouldLogAttempt(dropped)) {
      AgentLog(absl::StrCat("warning: sample queue full (", options_.max_queued,
                            "); dropped ", dropped, " oldest samples so far"));
    }
    delivered_cv_.SignalAll();
  }
  uint64_t ticket = entry.ticket;
  queue_.push_back(std::move(entry));
  if (queue_.size() == 1 || queue_.size() == options_.max_batch) work_cv_.Signal();
  return ticket;
}

uint64_t SampleUploader::DoneThroughLocked() const {
  if (spool_ != nullptr) return spool_done_through_;
  return queue_.empty() ? next_ticket_ - 1 : queue_.front().ticket - 1;
}

SampleUploader::Counts SampleUploader::PopThroughLocked(uint64_t ticket) {
  Counts popped;
  while (!queue_.empty() && queue_.front().ticket <= ticket) {
    ++(queue_.front().gpu() ? popped.gpu : popped.iterations);
    queue_.pop_front();
  }
  delivered_cv_.SignalAll();
  return popped;
}

bool SampleUploader::WaitDelivered(uint64_t ticket) {
  absl::MutexLock lock(&mu_);
  while (DoneThroughLocked() < ticket && !stopping_) delivered_cv_.Wait(&mu_);
  return DoneThroughLocked() >= ticket;
}

bool SampleUploader::Drain(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  while (!EmptyLocked() && !stopping_) {
    if (delivered_cv_.WaitWithDeadline(&mu_, deadline)) break;
  }
  return EmptyLocked();
}

void SampleUploader::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    work_cv_.SignalAll();
    delivered_cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

SampleUploaderStats SampleUploader::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void SampleUploader::Run() {
  Backoff backoff(options_.initial_backoff, options_.max_backoff);
  bool retrying = false;
  uint64_t consecutive_failures = 0;
  int permanent_failures = 0;
  mu_.Lock();
  while (!stopping_) {
    if (queue_.empty() || paused_) {
      work_cv_.Wait(&mu_);
      continue;
    }
    if (!retrying && queue_.size() < options_.max_batch) {
      absl::Time deadline = absl::Now() + options_.linger;
      while (!stopping_ && queue_.size() < options_.max_batch) {
        if (work_cv_.WaitWithDeadline(&mu_, deadline)) break;
      }
      if (stopping_) break;
      if (queue_.empty() || paused_) continue;
    }
    benchfleet::v1::UploadSamplesRequest request;
    request.set_agent(agent_);
    request.set_batch_id(next_batch_id_++);
    size_t count = std::min(queue_.size(), options_.max_batch);
    for (size_t i = 0; i < count; ++i) {
      if (const auto* gpu = std::get_if<benchfleet::v1::GpuSample>(&queue_[i].sample)) {
        *request.add_gpu_samples() = *gpu;
      } else {
        *request.add_samples() = std::get<benchfleet::v1::IterationSample>(queue_[i].sample);
      }
    }
    uint64_t last_ticket = queue_[count - 1].ticket;

    mu_.Unlock();
    benchfleet::v1::UploadSamplesResponse response;
    absl::Status status = rpc_->UploadSamples(request, &response);
    mu_.Lock();

    if (status.ok()) {
      Counts acknowledged = PopThroughLocked(last_ticket);
      stats_.acknowledged += acknowledged.iterations;
      stats_.gpu_acknowledged += acknowledged.gpu;
      ++stats_.batches;
      if (consecutive_failures > 0) {
        AgentLog(absl::StrCat("sample upload recovered after ", consecutive_failures,
                              " failed attempts"));
      }
      consecutive_failures = 0;
      permanent_failures = 0;
      retrying = false;
      backoff.Reset();
      continue;
    }
    ++stats_.failed_uploads;
    ++consecutive_failures;
    if (!IsTransientError(status) && ++permanent_failures >= options_.max_permanent_failures) {
      Counts dropped = PopThroughLocked(last_ticket);
      stats_.dropped += dropped.iterations;
      stats_.gpu_dropped += dropped.gpu;
      AgentLog(absl::StrCat("warning: dropping a batch of ", dropped.iterations + dropped.gpu,
                            " samples after ",
                            permanent_failures, " rejected uploads: ", status.ToString()));
      permanent_failures = 0;
      retrying = false;
      backoff.Reset();
      continue;
    }
    absl::Duration delay = backoff.Next();
    if (ShouldLogAttempt(consecutive_failures)) {
      AgentLog(absl::StrCat("sample upload failed (attempt ", consecutive_failures, ", ",
                            queue_.size(), " queued): ", status.ToString(), "; retrying in ",
                            absl::FormatDuration(delay)));
    }
    retrying = true;
    absl::Time deadline = absl::Now() + delay;
    while (!stopping_) {
      if (work_cv_.WaitWithDeadline(&mu_, deadline)) break;
    }
  }
  mu_.Unlock();
}

void SampleUploader::RunSpooled() {
  Backoff backoff(options_.initial_backoff, options_.max_backoff);
  uint64_t consecutive_failures = 0;
  int permanent_failures = 0;
  // The batch in flight (kept for retries): its request, where it ends in the spool,
  // and how many samples of each kind (and lost records) it covers.
  bool have_batch = false;
  benchfleet::v1::UploadSamplesRequest request;
  SpoolPosition end;
  Counts counts;
  uint64_t lost = 0;
  uint64_t unparsable = 0;
  uint64_t batch_discards = 0;  // discards_ when the batch was read
  mu_.Lock();
  while (!stopping_) {
    if (have_batch && batch_discards != discards_) have_batch = false;
    if (paused_) {
      work_cv_.Wait(&mu_);
      continue;
    }
    if (!have_batch) {
      if (spooled_ == 0) {
        work_cv_.Wait(&mu_);
        continue;
      }
      if (spooled_ < options_.max_batch) {
        absl::Time deadline = absl::Now() + options_.linger;
        while (!stopping_ && spooled_ < options_.max_batch) {
          if (work_cv_.WaitWithDeadline(&mu_, deadline)) break;
        }
        if (stopping_) break;
        if (paused_ || spooled_ == 0) continue;
      }
      batch_discards = discards_;
      mu_.Unlock();
      std::vector<SpoolRecord> records;
      lost = 0;
      unparsable = 0;
      counts = Counts{};
      request.Clear();
      end = spool_->Read(spool_->acked(), options_.max_batch, &records, &lost);
      for (const SpoolRecord& record : records) {
        bool parsed = false;
        if (record.kind == SpoolKind::kIterationSample) {
          parsed = request.add_samples()->ParseFromString(record.payload);
          if (parsed) ++counts.iterations; else request.mutable_samples()->RemoveLast();
        } else if (record.kind == SpoolKind::kGpuSample) {
          parsed = request.add_gpu_samples()->ParseFromString(record.payload);
          if (parsed) ++counts.gpu; else request.mutable_gpu_samples()->RemoveLast();
        }
        if (!parsed) ++unparsable;
      }
      if (unparsable > 0) {
        AgentLog(absl::StrCat("spool ", spool_->dir(), ": ", unparsable,
                              " records are not samples; skipped"));
      }
      absl::Status synced = spool_->Sync();
      if (!synced.ok()) AgentLog(absl::StrCat("warning: ", synced.message()));
      mu_.Lock();
      if (batch_discards != discards_) continue;  // what was read is discarded
      const uint64_t covered = records.size() + lost;
      if (covered == 0) {
        // Nothing readable although samples were counted: a bug or a vanished file.
        AgentLog(absl::StrCat("warning: spool ", spool_->dir(), " has none of the ", spooled_,
                              " samples expected; forgetting them"));
        spool_done_through_ = next_ticket_ - 1;
        spooled_ = 0;
        delivered_cv_.SignalAll();
        continue;
      }
      if (request.samples_size() + request.gpu_samples_size() == 0) {
        mu_.Unlock();
        spool_->Ack(end).IgnoreError();
        mu_.Lock();
        if (batch_discards != discards_) continue;
        spool_done_through_ += covered;
        spooled_ -= std::min(spooled_, covered);
        delivered_cv_.SignalAll();
        continue;
      }
      have_batch = true;
      request.set_agent(agent_);
      request.set_batch_id(next_batch_id_++);
    }

    request.set_agent(agent_);
    mu_.Unlock();
    benchfleet::v1::UploadSamplesResponse response;
    absl::Status status = rpc_->UploadSamples(request, &response);
    bool release = status.ok();
    if (!status.ok() && !IsTransientError(status) &&
        permanent_failures + 1 >= options_.max_permanent_failures) {
      release = true;
    }
    absl::Status acked = absl::OkStatus();
    if (release) acked = spool_->Ack(end);
    mu_.Lock();
    if (batch_discards != discards_) {
      have_batch = false;  // discarded while in flight (its Ack was before the discard's)
      continue;
    }
    if (!acked.ok()) AgentLog(absl::StrCat("warning: ", acked.message()));

    if (release) {
      const uint64_t covered = counts.iterations + counts.gpu + lost + unparsable;
      spool_done_through_ += covered;
      spooled_ -= std::min(spooled_, covered);
      stats_.dropped += lost + unparsable;
      if (status.ok()) {
        stats_.acknowledged += counts.iterations;
        stats_.gpu_acknowledged += counts.gpu;
        ++stats_.batches;
        if (consecutive_failures > 0) {
          AgentLog(absl::StrCat("sample upload recovered after ", consecutive_failures,
                                " failed attempts"));
        }
      } else {
        ++stats_.failed_uploads;
        stats_.dropped += counts.iterations;
        stats_.gpu_dropped += counts.gpu;
        AgentLog(absl::StrCat("warning: dropping a batch of ", counts.iterations + counts.gpu,
                              " samples after ", permanent_failures + 1,
                              " rejected uploads: ", status.ToString()));
      }
      delivered_cv_.SignalAll();
      have_batch = false;
      consecutive_failures = 0;
      permanent_failures = 0;
      backoff.Reset();
      continue;
    }
    ++stats_.failed_uploads;
    ++consecutive_failures;
    if (!IsTransientError(status)) ++permanent_failures;
    absl::Duration delay = backoff.Next();
    if (ShouldLogAttempt(consecutive_failures)) {
      AgentLog(absl::StrCat("sample upload failed (attempt ", consecutive_failures, ", ",
                            spooled_, " spooled): ", status.ToString(), "; retrying in ",
                            absl::FormatDuration(delay)));
    }
    absl::Time deadline = absl::Now() + delay;
    while (!stopping_) {
      if (work_cv_.WaitWithDeadline(&mu_, deadline)) break;
    }
  }
  mu_.Unlock();
}

}  // namespace bench::agent
