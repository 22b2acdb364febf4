// Node labels (bench-agent --label KEY=VALUE, repeatable): the AgentInventory.labels
// that job constraints (JobSpec.node_labels) match.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace bench::agent {

// Parses "KEY=VALUE" specs. KEY: 1 to 63 characters of [A-Za-z0-9._/-], starting with
// a letter or digit; VALUE: up to 255 characters, none of them a control character (it
// may be empty, and may contain '='). A KEY given twice is an error. Errors name the
// flag and the bad spec.
absl::StatusOr<std::map<std::string, std::string>> ParseLabels(
    const std::vector<std::string>& specs);

// Removes every "--NAME VALUE" and "--NAME=VALUE" (also "-NAME") from `args` (args[0],
// the program, is kept; nothing after "--" is touched) and returns the VALUEs in order:
// a repeatable flag, which absl flags cannot express. A "--NAME" without a value is an
// error.
absl::StatusOr<std::vector<std::string>> ExtractRepeatedFlag(const std::string& name,
                                                             std::vector<std::string>* args);

}  // namespace bench::agent
