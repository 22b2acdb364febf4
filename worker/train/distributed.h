// Data parallelism over c10d: rendezvous, process groups, gradient averaging.
//
// ConnectProcessGroup joins the ranks exactly as torchrun's env:// init does: a
// c10d::TCPStore on MASTER_ADDR:MASTER_PORT (rank 0 serves it), then a Gloo
// (CPU tensors) or NCCL (CUDA tensors; only in builds with BENCH_WITH_NCCL)
// process group. Every call below is collective: all ranks make the same calls,
// with tensors of the same shapes and dtypes, in the same order.
//
// A Communicator is used by one thread at a time (the rank's training thread).
// Shutdown() ends the rank's part of the group after its last collective (see below);
// the destructor calls it too.
//
// The rendezvous store always uses c10d's classic TCPStore server, never the libuv one:
// libtorch >= 2.4 asks for libuv by default, and builds without it (Debian's) then fail
// every multi-rank start; with at most a few hundred ranks per job the classic server is
// enough.
#ifndef BENCHFLEET_WORKER_TRAIN_DISTRIBUTED_H_
#define BENCHFLEET_WORKER_TRAIN_DISTRIBUTED_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "worker/train/options.h"
#include "worker/train/status.h"

namespace torch {
namespace autograd {
struct Node;
}  // namespace autograd
}  // namespace torch

namespace bench_train {

enum class Backend { kGloo, kNccl };

// Gradients are averaged in flat buckets of at most this many bytes (a single
// tensor larger than this gets a bucket of its own).
inline constexpr int64_t kDefaultBucketBytes = 25 << 20;

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual const char* backend_name() const = 0;  // "gloo" or "nccl"

  // In-place SUM over all ranks of each tensor (one collective per tensor, all
  // started before any is awaited). Returns once the results may be used: on the
  // host for Gloo; for NCCL, once the current CUDA stream is ordered after them.
  virtual void AllReduceSum(const std::vector<at::Tensor>& tensors) = 0;
  // Starts an in-place SUM of `tensor` over all ranks and returns a function
  // that waits for it (same meaning of "done" as AllReduceSum). Call the waiter
  // exactly once. Thread-compatible: one caller at a time.
  virtual std::function<void()> StartAllReduceSum(const at::Tensor& tensor) = 0;
  // In-place broadcast of each tensor from `root`.
  virtual void Broadcast(const std::vector<at::Tensor>& tensors, int root) = 0;

  // Ends this rank's part of the process group, so that no communicator thread keeps
  // the process alive or hanging after its last event: NCCL's communicators are shut
  // down (ProcessGroupNCCL::shutdown() in libtorch >= 2.2, else abort() where that
  // exists, else its destructor), then the group and the rendezvous store are released
  // (Gloo needs only that). Call it on every rank after the last collective (e.g. after
  // the summary event); it is not collective and does not wait for the other ranks.
  // Never throws (a failure is logged to stderr); safe to call again, and the
  // destructor calls it. After it, the collectives above throw std::logic_error.
  virtual void Shutdown() {}
  // True once Shutdown() has run.
  virtual bool is_shut_down() const { return false; }
};

// Connects to the other ranks. Blocks until all `rendezvous.world_size` ranks
// have joined, or fails with Unavailable: a non-zero rank gives up after
// `rendezvous.timeout_s` without a store to connect to; rank 0 waits up to that
// long for the others to reach the store and as long again for Gloo's mesh.
// The Gloo group's timeout (each later collective) is also `timeout_s`.
// Requires rendezvous.world_size > 1.
StatusOr<std::unique_ptr<Communicator>> ConnectProcessGroup(const RendezvousOptions& rendezvous,
                                                            Backend backend);

// Replaces each parameter's gradient by its mean over all ranks: gradients are
// packed into flat buckets (by dtype and device), all-reduced with SUM, divided
// by the world size and copied back. A parameter without a gradient counts as a
// zero gradient (and gets one), so that all ranks pack identical buckets.
void AverageGradients(const std::vector<at::Tensor>& parameters, Communicator& communicator,
                      int64_t bucket_bytes = kDefaultBucketBytes);

// A contiguous slice of a flat gradient buffer and the parameters whose .grad()
// are views into it.
struct GradientBucket {
  at::Tensor flat;
  std::vector<at::Tensor> parameters;
};

// Averages gradients over the ranks while backward runs, as PyTorch DDP does:
// a post hook on each parameter's gradient accumulator counts the bucket's
// ready gradients; when a bucket is complete (and every bucket before it has
// been started: all ranks start the same collectives in the same order) its
// all-reduce starts asynchronously, so communication overlaps the rest of
// backward. Finish() starts any bucket not yet started (a parameter without a
// gradient), waits for all, and divides by the world size.
//
// Usage per step: Prepare(); loss.backward(); Finish(). The hooks run on
// autograd's threads; the reducer guards its state with a mutex. The
// parameters' .grad() must already be the bucket views (FlatSgd) and stay so.
// Destroying the reducer removes its hooks.
class GradientReducer {
 public:
  GradientReducer(std::vector<GradientBucket> buckets, Communicator& communicator);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  void Prepare();
  void Finish();

  // Buckets whose all-reduce started inside backward in the last step (for tests
  // and logs: with more than one bucket, at least one should).
  int64_t started_during_backward() const { return started_in_backward_; }
  size_t num_buckets() const { return buckets_.size(); }

 private:
  struct Hook {
    std::shared_ptr<torch::autograd::Node> accumulator;
    uintptr_t key = 0;
  };
  void OnGradReady(size_t bucket);
  void StartReadyBuckets();  // with mu_ held

  Communicator& communicator_;
  std::vector<GradientBucket> buckets_;
  std::vector<Hook> hooks_;
  std::mutex mu_;
  std::vector<int64_t> pending_;  // per bucket: gradients not yet accumulated
  size_t next_to_start_ = 0;
  bool in_backward_ = false;
  int64_t started_in_backward_ = 0;
  std::vector<std::function<void()>> waiters_;
};

// Overwrites `tensors` (parameters and buffers) with rank `root`'s values.
void BroadcastTensors(const std::vector<at::Tensor>& tensors, Communicator& communicator,
                      int root = 0, int64_t bucket_bytes = kDefaultBucketBytes);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_DISTRIBUTED_H_
