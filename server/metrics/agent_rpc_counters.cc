#include "server/metrics/agent_rpc_counters.h"

#include <algorithm>

namespace bench {

std::string_view AgentRpcCounters::MethodName(Method method) {
  switch (method) {
    case Method::kRegister: return "Register";
    case Method::kHeartbeat: return "Heartbeat";
    case Method::kStreamAssignments: return "StreamAssignments";
    case Method::kReportStatus: return "ReportStatus";
    case Method::kUploadSamples: return "UploadSamples";
    case Method::kDeregister: return "Deregister";
    case Method::kRequestCertificate: return "RequestCertificate";
  }
  return "unknown";
}

std::string AgentRpcCounters::CodeName(int code) {
  return code >= 0 && code < kCodes ? absl::StatusCodeToString(static_cast<absl::StatusCode>(code))
                                    : "UNKNOWN";
}

void AgentRpcCounters::CountCall(Method method, absl::StatusCode code) {
  int index = static_cast<int>(code);
  if (index < 0 || index >= kCodes) index = static_cast<int>(absl::StatusCode::kUnknown);
  calls_[static_cast<int>(method)][index].fetch_add(1, std::memory_order_relaxed);
}

void AgentRpcCounters::AtomicHistogram::Observe(int64_t value) {
  const auto bucket = std::lower_bound(kBatchBounds.begin(), kBatchBounds.end(), value);
  buckets[bucket - kBatchBounds.begin()].fetch_add(1, std::memory_order_relaxed);
  count.fetch_add(1, std::memory_order_relaxed);
  sum.fetch_add(value, std::memory_order_relaxed);
}

AgentRpcCounters::Histogram AgentRpcCounters::AtomicHistogram::Read() const {
  Histogram out;
  for (int i = 0; i < kBuckets; ++i) out.buckets[i] = buckets[i].load(std::memory_order_relaxed);
  out.count = count.load(std::memory_order_relaxed);
  out.sum = sum.load(std::memory_order_relaxed);
  return out;
}

void AgentRpcCounters::CountUpload(int64_t iterations, int64_t gpu_readings) {
  if (iterations > 0) iteration_batches_.Observe(iterations);
  if (gpu_readings > 0) gpu_batches_.Observe(gpu_readings);
}

AgentRpcCounters::Figures AgentRpcCounters::Read() const {
  Figures out;
  for (int m = 0; m < kMethods; ++m) {
    for (int c = 0; c < kCodes; ++c) out.calls[m][c] = calls_[m][c].load(std::memory_order_relaxed);
  }
  out.iteration_batches = iteration_batches_.Read();
  out.gpu_batches = gpu_batches_.Read();
  return out;
}

}  // namespace bench
