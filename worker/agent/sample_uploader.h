// Streams iteration samples and GPU samples to the controller in batches, at least once.
//
// Samples of both kinds queue in one queue, in the order added, and a background thread
// sends them with UploadSamples in batches (up to max_batch samples of either kind, or
// whatever has gathered after `linger`). A batch leaves the queue only when the
// controller acknowledges it; a failed upload is retried with back-off (the controller
// dedupes by sample identity, so a retry after a lost acknowledgement is harmless). A
// batch that fails with a non-transient error max_permanent_failures times in a row is
// dropped with a warning, so one poisoned batch cannot block the rest.
//
// Two kinds of queue:
// - In memory (no Spool given): beyond max_queued samples (both kinds) the oldest are
//   dropped (counted and logged).
// - On disk (a Spool, see spool.h): Add() writes the sample to the spool (write(2))
//   before it returns; the queue is the spool itself, read back a batch at a time, so
//   memory holds one batch whatever the backlog. The spool is fdatasync'ed before each
//   upload (a batch boundary); an acknowledged batch is acknowledged in the spool. What
//   a previous agent left unacknowledged in the spool is sent first (replay). When the
//   spool is full (its max_bytes), further samples are dropped, the NEWEST ones (the
//   queue is on disk): counted in stats().dropped / gpu_dropped and logged (the 1st,
//   2nd, 4th, ... and every 30th time). Trainers are never blocked by the uploader.
//
// Holding: while paused (Pause(), or from construction with options.start_paused)
// nothing is uploaded, not even a retry; samples keep queueing (and spooling). The
// agent holds its uploader until it has registered and checked the controller's
// database id. DiscardPending() forgets everything queued (acknowledging the whole
// spool) without sending it: the samples were meant for another controller database.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <thread>
#include <variant>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "benchfleet/v1/agent.pb.h"
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
  struct Entry {
    uint64_t ticket;
    std::variant<benchfleet::v1::IterationSample, benchfleet::v1::GpuSample> sample;
    bool gpu() const { return sample.index() == 1; }
  };
  struct Counts {
    uint64_t iterations = 0;
    uint64_t gpu = 0;
  };

  void Run();
  void RunSpooled();
  uint64_t Enqueue(Entry entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t AppendToSpoolLocked(SpoolKind kind, const std::string& payload, bool gpu)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool EmptyLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t DoneThroughLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Counts PopThroughLocked(uint64_t ticket) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  SampleUploadRpc* const rpc_;
  const SampleUploaderOptions options_;
  Spool* const spool_;

  mutable absl::Mutex mu_;
  absl::CondVar work_cv_;       // the upload thread waits here
  absl::CondVar delivered_cv_;  // WaitDelivered / Drain wait here
  std::string agent_ ABSL_GUARDED_BY(mu_);
  std::deque<Entry> queue_ ABSL_GUARDED_BY(mu_);  // without a spool
  // With a spool: samples in it not yet acknowledged (or given up on), and the ticket
  // through which everything is acknowledged or given up on.
  uint64_t spooled_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t spool_done_through_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t next_batch_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  // Increased by DiscardPending: a batch read before it is not the queue's any more.
  uint64_t discards_ ABSL_GUARDED_BY(mu_) = 0;
  SampleUploaderStats stats_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace bench::agent
