// A minimal Status / StatusOr for bench-train.
//
// The trainer must build against nothing but libtorch (a GPU node may have only
// PyTorch's libtorch), so it cannot use absl::Status. These two types mirror the
// subset of absl's API that the trainer needs; the names match so that code reads
// the same as the rest of benchfleet. Value types; not thread-safe to mutate
// concurrently, safe to copy across threads.
#ifndef BENCHFLEET_WORKER_TRAIN_STATUS_H_
#define BENCHFLEET_WORKER_TRAIN_STATUS_H_

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace bench_train {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // bad flag or option: the process exits with code 2
  kUnavailable,       // a peer or a device is not there (rendezvous timeout, no GPU)
  kUnimplemented,     // a feature this build lacks (e.g. CUDA on a CPU libtorch)
  kInternal,          // anything else, including libtorch exceptions
};

class Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgumentError(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
inline Status UnavailableError(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}
inline Status UnimplementedError(std::string message) {
  return Status(StatusCode::kUnimplemented, std::move(message));
}
inline Status InternalError(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}

// Holds either a value or a non-OK Status. value() on an error throws
// std::logic_error (a programming error, like absl's crash).
template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit, like absl
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = InternalError("StatusOr built from an OK status");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & { Check(); return *value_; }
  const T& value() const& { Check(); return *value_; }
  T&& value() && { Check(); return std::move(*value_); }
  T& operator*() & { return value(); }
  T* operator->() { Check(); return &*value_; }
  const T* operator->() const { Check(); return &*value_; }

 private:
  void Check() const {
    if (!status_.ok()) throw std::logic_error("StatusOr has no value: " + status_.message());
  }
  Status status_;
  std::optional<T> value_;
};

}  // namespace bench_train

#define BENCH_TRAIN_CONCAT_INNER_(a, b) a##b
#define BENCH_TRAIN_CONCAT_(a, b) BENCH_TRAIN_CONCAT_INNER_(a, b)

#define BENCH_TRAIN_RETURN_IF_ERROR(expr)            \
  do {                                               \
    ::bench_train::Status bench_train_status_ = (expr); \
    if (!bench_train_status_.ok()) return bench_train_status_; \
  } while (0)

#define BENCH_TRAIN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                       \
  if (!tmp.ok()) return tmp.status();                      \
  lhs = std::move(tmp).value()

#define BENCH_TRAIN_ASSIGN_OR_RETURN(lhs, expr) \
  BENCH_TRAIN_ASSIGN_OR_RETURN_IMPL_(BENCH_TRAIN_CONCAT_(bench_train_or_, __LINE__), lhs, expr)

#endif  // BENCHFLEET_WORKER_TRAIN_STATUS_H_
