// Checks a job spec before anything is stored. Errors are INVALID_ARGUMENT and name the
// field as the API spells it, with benchctl's flag beside it; a refused value is quoted
// as a short prefix only (bench::QuotePrefix), so an error stays small whatever came in.
// The limits below are documented in docs/limits.md.
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "server/core/job.h"

namespace bench {

// Bounds on a spec's free text and lists, in bytes (UTF-8 is fine; lengths count bytes).
inline constexpr size_t kMaxJobNameBytes = 256;
inline constexpr size_t kMaxRequestIdBytes = 128;
inline constexpr size_t kMaxModelBytes = 64;
inline constexpr size_t kMaxDataBytes = 64;
inline constexpr size_t kMaxDataPathBytes = 1024;  // data_path, an absolute path on the nodes
inline constexpr int kMaxLoaderThreads = 256;       // loader_threads, per rank
inline constexpr size_t kMaxLabels = 32;  // spec.labels, and node_labels, each
inline constexpr size_t kMaxLabelKeyBytes = 63;
inline constexpr size_t kMaxLabelValueBytes = 256;
inline constexpr size_t kMaxAllowedNodes = 256;
// Node names (allowed_nodes), as agents register them: 1-63 bytes of [A-Za-z0-9._-],
// starting with a letter or a digit.
inline constexpr size_t kMaxNodeNameBytes = 63;

// Fills what benchd fills (common/spec_defaults.h: data "synthetic" when empty, devices
// from nodes × devices_per_node when 0) and validates every field; models are checked
// against kModelNames (common/names.h, IsKnownModel). Text fields: name, request_id and
// label keys refuse every control byte (below 0x20, and 0x7f: a newline would forge a log
// line); label values refuse NUL, CR and LF only (any other byte, 0x1f and '=' included, is
// kept as given). Label keys are non-empty and have no '='.
// Data: `data` is one of kDataNames; imagefolder and coco need `data_path`, an absolute
// path of at most kMaxDataPathBytes without control bytes (its existence is each agent's
// to check, on its node), and synthetic refuses one; imagefolder is for classification
// models and coco for detection ones; loader_threads is 0..kMaxLoaderThreads.
absl::Status NormalizeAndValidateSpec(JobSpec& spec);

}  // namespace bench
