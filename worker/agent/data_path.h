// Which data folders a real-data job may read on this node (issue 24, item 6): the roots
// an operator names with bench-agent --data-root DIR (repeatable), and the check a job's
// data_path passes before any rank starts. Pure but for the file system it looks at.
//
// A job's data_path may be read only when it lies inside a root: the realpath of the
// path is a root's realpath or below it (so `..` and symlinks are resolved first: a
// symlink inside a root that points outside is outside). A path outside every root is
// refused with exactly the message of a missing path, so that a submitter cannot learn
// from a failed job what exists on the node outside the roots; so is a path that cannot
// be resolved at all (missing, or behind a folder this agent may not search). An agent
// with no root reads no data: every real-data job fails with kNoDataRootsMessage, which
// names no path. Inside a root the checks and their messages are as before: a directory
// this agent can read and search, and for coco annotations/instances_*.json.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "benchfleet/v1/types.pb.h"

namespace bench::agent {

// The reason, after "node NODE: ", when the agent has no --data-root.
inline constexpr char kNoDataRootsMessage[] =
    "this agent reads no data (start it with --data-root)";

// OK for synthetic data. Otherwise FAILED_PRECONDITION: "node NODE: " +
// kNoDataRootsMessage without roots; "node NODE: data path PATH: No such file or
// directory" for a path outside every root, missing or unresolvable; inside a root
// "node NODE: data path PATH: <strerror>" when it is no directory this process can read
// and search, and for coco "...: no annotations folder (...)" or "...: no
// annotations/instances_*.json (...)". Roots that do not resolve are skipped.
absl::Status CheckDataPath(const benchfleet::v1::JobSpec& spec, absl::string_view node,
                           const std::vector<std::string>& data_roots);

// bench-agent's --data-root values, checked at start: each an absolute path of an
// existing directory, else INVALID_ARGUMENT "--data-root DIR: <why>".
absl::Status CheckDataRoots(const std::vector<std::string>& data_roots);

}  // namespace bench::agent
