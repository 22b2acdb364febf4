// Ends a unary callback RPC at once with an absl::Status (the common case for our
// adapters: the domain call already ran synchronously).
#pragma once

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "common/grpc_status.h"

namespace bench {

inline grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                           const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace bench
