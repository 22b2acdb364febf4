// Conversions between absl::Status and grpc::Status (codes share numbering).
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace bench {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace bench
