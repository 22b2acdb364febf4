// The simulated agent's retry policy, bench-agent's (worker/agent/sample_uploader.h,
// retry.h): back-off bounds, how many permanent refusals end a batch, RPC deadlines and
// which gRPC codes are worth retrying. Shared by sim_agent.cc and sim_resolve.cc.
#pragma once

#include <chrono>

#include <grpcpp/grpcpp.h>

namespace bench::fleetsim {

inline constexpr auto kMinBackoff = std::chrono::milliseconds(100);
inline constexpr auto kMaxBackoff = std::chrono::seconds(2);
inline constexpr int kMaxPermanentFailures = 5;

// A call's deadline, `seconds` from now.
inline std::chrono::system_clock::time_point Deadline(int seconds) {
  return std::chrono::system_clock::now() + std::chrono::seconds(seconds);
}

// Worth retrying: the call may succeed if sent again.
inline bool Transient(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::INTERNAL: return true;
    default: return false;
  }
}

}  // namespace bench::fleetsim
