// Whole small files read and written safely, for what the agent keeps in its state
// directory (controller_id, agent.key, agent.pem): a bounded read that tells a missing
// file from an unreadable one, and an atomic, durable replace. Stateless; thread-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace bench::agent {

// The whole file; NOT_FOUND when it does not exist, OUT_OF_RANGE when it is longer than
// `max_bytes`, INTERNAL for other errors; each error names the file.
absl::StatusOr<std::string> ReadFileText(const std::string& path, size_t max_bytes = 1 << 20);

// Writes `contents` to PATH.new (created with `mode` whatever the umask, fsync'ed), renames
// it over `path` and fsyncs the directory: a reader sees the old file or the new one, never
// a part, and the new one survives a crash once this returns OK. The error names the file.
absl::Status WriteFileAtomically(const std::string& path, const std::string& contents, mode_t mode);

}  // namespace bench::agent
