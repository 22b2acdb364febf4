#include "worker/agent/sample_uploader.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace bench::agent {

// One UploadSamplesRequest: iteration and GPU samples; a batch id per batch, kept
// across its retries.
class SampleUploader::UploadBatch final : public OutboxRpc {
 public:
  explicit UploadBatch(SampleUploadRpc* rpc) : rpc_(rpc) {}

  void StartBatch() override {
    request_.Clear();
    request_.set_batch_id(next_batch_id_++);
  }
  bool AddToBatch(const OutboxRecord& record) override {
    if (record.kind == SpoolKind::kIterationSample) {
      if (request_.add_samples()->ParseFromString(record.payload)) return true;
      request_.mutable_samples()->RemoveLast();
    } else if (record.kind == SpoolKind::kGpuSample) {
      if (request_.add_gpu_samples()->ParseFromString(record.payload)) return true;
      request_.mutable_gpu_samples()->RemoveLast();
    }
    return false;
  }
  absl::Status SendBatch(const std::string& agent) override {
    request_.set_agent(agent);
    benchfleet::v1::UploadSamplesResponse response;
    return rpc_->UploadSamples(request_, &response);
  }
  std::string DescribeBatch() const override {
    return absl::StrCat("a batch of ", request_.samples_size() + request_.gpu_samples_size(),
                        " samples");
  }

 private:
  SampleUploadRpc* const rpc_;
  benchfleet::v1::UploadSamplesRequest request_;
  int64_t next_batch_id_ = 1;
};

SampleUploader::SampleUploader(SampleUploadRpc* rpc, SampleUploaderOptions options, Spool* spool)
    : rpc_(rpc), options_(std::move(options)) {
  if (spool != nullptr) {
    store_ = std::make_unique<SpoolOutboxStore>(spool);
  } else {
    store_ = std::make_unique<MemoryOutboxStore>(options_.max_queued);
  }
  batch_ = std::make_unique<UploadBatch>(rpc_);
  OutboxOptions outbox;
  outbox.noun = "samples";
  outbox.max_batch = options_.max_batch;
  outbox.linger = options_.linger;
  outbox.initial_backoff = options_.initial_backoff;
  outbox.max_backoff = options_.max_backoff;
  outbox.max_permanent_failures = options_.max_permanent_failures;
  outbox.agent = options_.agent;
  outbox.start_paused = options_.start_paused;
  outbox_ = std::make_unique<Outbox>(store_.get(), batch_.get(), std::move(outbox));
}

SampleUploader::~SampleUploader() { Shutdown(); }

void SampleUploader::SetAgent(std::string agent) { outbox_->SetAgent(std::move(agent)); }

uint64_t SampleUploader::Add(benchfleet::v1::IterationSample sample) {
  return outbox_->Add(OutboxRecord{SpoolKind::kIterationSample, sample.SerializeAsString()});
}

uint64_t SampleUploader::AddGpuSample(benchfleet::v1::GpuSample sample) {
  return outbox_->Add(OutboxRecord{SpoolKind::kGpuSample, sample.SerializeAsString()});
}

bool SampleUploader::WaitDelivered(uint64_t ticket) { return outbox_->WaitDelivered(ticket); }

void SampleUploader::Pause() { outbox_->Pause(); }

void SampleUploader::Resume() { outbox_->Resume(); }

uint64_t SampleUploader::DiscardPending() { return outbox_->DiscardPending(); }

bool SampleUploader::Drain(absl::Time deadline) { return outbox_->Drain(deadline); }

void SampleUploader::Shutdown() { outbox_->Shutdown(); }

SampleUploaderStats SampleUploader::stats() const {
  const OutboxStats outbox = outbox_->stats();
  constexpr size_t kIterations = static_cast<size_t>(SpoolKind::kIterationSample);
  constexpr size_t kGpu = static_cast<size_t>(SpoolKind::kGpuSample);
  SampleUploaderStats stats;
  stats.added = outbox.added[kIterations];
  stats.acknowledged = outbox.acknowledged[kIterations];
  // Records of no sample kind (lost in a corrupt spool, or not samples) count here.
  stats.dropped = outbox.dropped[kIterations] + outbox.dropped[0] +
                  outbox.dropped[static_cast<size_t>(SpoolKind::kReport)];
  stats.gpu_added = outbox.added[kGpu];
  stats.gpu_acknowledged = outbox.acknowledged[kGpu];
  stats.gpu_dropped = outbox.dropped[kGpu];
  stats.failed_uploads = outbox.failed_sends;
  stats.batches = outbox.batches;
  stats.replayed = outbox.replayed;
  stats.discarded = outbox.discarded;
  return stats;
}

}  // namespace bench::agent
