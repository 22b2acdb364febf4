// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status and absl::StatusOr.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define BENCH_CONCAT_INNER_(a, b) a##b
#define BENCH_CONCAT_(a, b) BENCH_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                      \
  do {                                             \
    ::absl::Status bench_status_ = (expr);         \
    if (!bench_status_.ok()) return bench_status_; \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(BENCH_CONCAT_(bench_statusor_, __LINE__), lhs, expr)

#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                           \
  if (!statusor.ok()) return statusor.status();     \
  lhs = std::move(statusor).value()
