// Data parallelism over c10d: rendezvous, process groups, gradient averaging.
//
// ConnectProcessGroup joins the ranks exactly as torchrun's env:// init does: a
// c10d::TCPStore on MASTER_ADDR:MASTER_PORT (rank 0 serves it), then a Gloo
// (CPU tensors) or NCCL (CUDA tensors; only in builds with BENCH_WITH_NCCL)
// process group. Every call below is collective: all ranks make the same calls,
// with tensors of the same shapes and dtypes, in the same order.
//
// A Communicator is used by one thread at a time (the rank's training thread).
#ifndef BENCHFLEET_WORKER_TRAIN_DISTRIBUTED_H_
#define BENCHFLEET_WORKER_TRAIN_DISTRIBUTED_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "worker/train/options.h"
#include "worker/train/status.h"

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
  // In-place broadcast of each tensor from `root`.
  virtual void Broadcast(const std::vector<at::Tensor>& tensors, int root) = 0;
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

// Overwrites `tensors` (parameters and buffers) with rank `root`'s values.
void BroadcastTensors(const std::vector<at::Tensor>& tensors, Communicator& communicator,
                      int root = 0, int64_t bucket_bytes = kDefaultBucketBytes);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_DISTRIBUTED_H_
