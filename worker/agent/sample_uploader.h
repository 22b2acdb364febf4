// SampleUploader: the SampleSink of the agent, i.e. iteration and GPU samples on their
// way to the controller through one Outbox (outbox.h) and the UploadSamples RPC.
//
// Samples of both kinds queue in one queue, in the order added, and go in batches of up
// to max_batch samples of either kind (or whatever has gathered after `linger`), at least
// once, retried with back-off; the outbox holds the rules (acknowledgement, giving up on
// a poisoned batch, pausing, discarding).
//
// Two kinds of queue (outbox_store.h):
// - On disk (a Spool, see spool.h; the agent's, with its state directory): Add() writes
//   the sample to the spool (write(2)) before it returns; the queue is the spool itself,
//   read back a batch at a time, so memory holds one batch whatever the backlog. The
//   spool is fdatasync'ed before each upload; an acknowledged batch is acknowledged in
//   the spool. What a previous agent left unacknowledged in the spool is sent first
//   (replay). When the spool is full (its max_bytes), further samples are dropped, the
//   NEWEST ones: counted in stats().dropped / gpu_dropped and logged. Trainers are never
//   blocked by the uploader.
// - In memory (no Spool given): beyond max_queued samples (both kinds) the oldest are
//   dropped (counted and logged).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "benchfleet/v1/agent.pb.h"
#include "worker/agent/outbox.h"
#include "worker/agent/outbox_store.h"
#include "worker/agent/sinks.h"
#include "worker/agent/spool.h"

namespace bench::agent {

// The UploadSamples RPC (ControllerClient in production, a fake in tests). Must be
// callable from the uploader's thread.
class SampleUploadRpc {
 public:
  virtual ~SampleUploadRpc() = default;
  virtual absl::Status UploadSamples(const benchfleet::v1::UploadSamplesRequest& request,
                                     benchfleet::v1::UploadSamplesResponse* response) = 0;
};

struct SampleUploaderOptions {
  size_t max_batch = 2000;
  absl::Duration linger = absl::Milliseconds(50);
  size_t max_queued = 1000000;
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(2);
  int max_permanent_failures = 5;
  // The name put in each request's `agent` field until SetAgent (so that a replayed
  // spool is not sent without one).
  std::string agent;
  // Start held: nothing is uploaded until Resume().
  bool start_paused = false;
};

// added, acknowledged and dropped count iteration samples; gpu_* count GPU samples.
struct SampleUploaderStats {
  uint64_t added = 0;
  uint64_t acknowledged = 0;    // samples in acknowledged batches
  uint64_t dropped = 0;         // dropped (queue full, or a batch given up on)
  uint64_t gpu_added = 0;
  uint64_t gpu_acknowledged = 0;
  uint64_t gpu_dropped = 0;
  uint64_t failed_uploads = 0;  // UploadSamples calls that failed
  uint64_t batches = 0;         // UploadSamples calls that succeeded
  uint64_t replayed = 0;        // samples (both kinds) found in the spool at start
  uint64_t discarded = 0;       // samples (both kinds) forgotten by DiscardPending
};

// Thread-safe. `rpc` and `spool` (null: the queue is in memory) are not owned and must
// outlive the uploader; nothing else may read or acknowledge that spool.
class SampleUploader : public SampleSink {
 public:
  explicit SampleUploader(SampleUploadRpc* rpc, SampleUploaderOptions options = {},
                          Spool* spool = nullptr);
  ~SampleUploader() override;  // Shutdown()
  SampleUploader(const SampleUploader&) = delete;
  SampleUploader& operator=(const SampleUploader&) = delete;

  // The name put in each request's `agent` field.
  void SetAgent(std::string agent);

  // With a spool, a sample dropped because the spool is full (or cannot be written)
  // gets the ticket of the sample before it, so tickets never decrease.
  uint64_t Add(benchfleet::v1::IterationSample sample) override;
  uint64_t AddGpuSample(benchfleet::v1::GpuSample sample) override;
  // Covers tickets of both kinds.
  bool WaitDelivered(uint64_t ticket) override;

  // Holds uploads: none starts until Resume() (an upload already in flight completes;
  // its outcome is ignored if DiscardPending runs meanwhile). Idempotent.
  void Pause();
  void Resume();
  // Forgets every sample queued now (with a spool: acknowledges all of it, in memory:
  // empties the queue) without uploading it, and returns how many; they count as given
  // up on (WaitDelivered returns true for them) and in stats().discarded. Samples added
  // afterwards queue as usual.
  uint64_t DiscardPending();

  // Waits until the queue is empty (true) or `deadline` passes (false).
  bool Drain(absl::Time deadline);
  // Stops the upload thread (after an upload in flight returns); samples not yet
  // acknowledged are abandoned and WaitDelivered callers return false. Idempotent.
  void Shutdown();

  SampleUploaderStats stats() const;

 private:
  class UploadBatch;

  SampleUploadRpc* const rpc_;
  const SampleUploaderOptions options_;
  std::unique_ptr<OutboxStore> store_;
  std::unique_ptr<UploadBatch> batch_;
  std::unique_ptr<Outbox> outbox_;  // last: its thread uses the others
};

}  // namespace bench::agent
