// The agent RPCs benchd served, by method and status code, and the sizes of the upload
// batches they carried (iteration samples and GPU readings apart): what
// bench_agent_rpcs_total and bench_upload_batch_samples show on /metrics.
//
// Counted by the agent service's adapter (server/rpc/agent_service.cc) on every call that
// reaches it, with the code it answers (a call gRPC itself refuses, e.g. an oversized
// message, never reaches it); StreamAssignments counts the stream's opening (OK once its
// agent is attached). An upload's batch sizes are observed once its request is admitted
// and parsed, each kind only when the batch carries some of it (the number of uploads is
// the UploadSamples count). Bounded: 7 methods × 17 codes, 2 histograms of 12 buckets.
//
// Thread-safe and lock-free: relaxed atomic increments on the RPC path; Read copies the
// figures (each counter exact, the copy not one instant across them).
#pragma once

#include <array>
#include <string>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"

namespace bench {

class AgentRpcCounters {
 public:
  enum class Method {
    kRegister,
    kHeartbeat,
    kStreamAssignments,
    kReportStatus,
    kUploadSamples,
    kDeregister,
    kRequestCertificate,
  };
  static constexpr int kMethods = 7;
  static constexpr int kCodes = 17;  // absl::StatusCode 0 (OK) .. 16 (UNAUTHENTICATED)
  // Upper bounds of the batch size buckets (samples); the last bucket is +Inf. An upload
  // carries at most 2,000 samples of each kind (docs/limits.md).
  static constexpr std::array<int64_t, 11> kBatchBounds = {1,   2,   5,   10,   20,  50,
                                                           100, 200, 500, 1000, 2000};
  static constexpr int kBuckets = kBatchBounds.size() + 1;

  struct Histogram {
    std::array<int64_t, kBuckets> buckets{};  // per bucket, not cumulative
    int64_t count = 0;
    int64_t sum = 0;
  };
  struct Figures {
    std::array<std::array<int64_t, kCodes>, kMethods> calls{};  // [method][code]
    Histogram iteration_batches;
    Histogram gpu_batches;
  };

  // The method's name as in the .proto ("Register", ...).
  static std::string_view MethodName(Method method);
  // The code's name as gRPC spells it ("OK", "INVALID_ARGUMENT", ...).
  static std::string CodeName(int code);  // absl::StatusCodeToString's name

  void CountCall(Method method, absl::StatusCode code);
  // One admitted upload's batch: `iterations` samples and `gpu_readings` readings.
  void CountUpload(int64_t iterations, int64_t gpu_readings);

  Figures Read() const;

 private:
  struct AtomicHistogram {
    std::array<std::atomic<int64_t>, kBuckets> buckets{};
    std::atomic<int64_t> count{0};
    std::atomic<int64_t> sum{0};
    void Observe(int64_t value);
    Histogram Read() const;
  };

  std::array<std::array<std::atomic<int64_t>, kCodes>, kMethods> calls_{};
  AtomicHistogram iteration_batches_;
  AtomicHistogram gpu_batches_;
};

}  // namespace bench
