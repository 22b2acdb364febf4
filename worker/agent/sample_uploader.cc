#include "worker/agent/sample_uploader.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "worker/agent/agent_log.h"
#include "worker/agent/retry.h"

namespace bench::agent {

SampleUploader::SampleUploader(SampleUploadRpc* rpc, SampleUploaderOptions options)
    : rpc_(rpc), options_(std::move(options)) {
  thread_ = std::thread([this] { Run(); });
}

SampleUploader::~SampleUploader() { Shutdown(); }

void SampleUploader::SetAgent(std::string agent) {
  absl::MutexLock lock(&mu_);
  agent_ = std::move(agent);
}

uint64_t SampleUploader::Add(benchfleet::v1::IterationSample sample) {
  absl::MutexLock lock(&mu_);
  ++stats_.added;
  return Enqueue(Entry{0, std::move(sample)});
}

uint64_t SampleUploader::AddGpuSample(benchfleet::v1::GpuSample sample) {
  absl::MutexLock lock(&mu_);
  ++stats_.gpu_added;
  return Enqueue(Entry{0, std::move(sample)});
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
  while (!queue_.empty() && !stopping_) {
    if (delivered_cv_.WaitWithDeadline(&mu_, deadline)) break;
  }
  return queue_.empty();
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
    if (queue_.empty()) {
      work_cv_.Wait(&mu_);
      continue;
    }
    if (!retrying && queue_.size() < options_.max_batch) {
      absl::Time deadline = absl::Now() + options_.linger;
      while (!stopping_ && queue_.size() < options_.max_batch) {
        if (work_cv_.WaitWithDeadline(&mu_, deadline)) break;
      }
      if (stopping_) break;
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

}  // namespace bench::agent
