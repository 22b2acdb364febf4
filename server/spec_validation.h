// Checks a job spec before anything is stored. Errors are INVALID_ARGUMENT and name the
// field as the API spells it, with benchctl's flag beside it.
#pragma once

#include "absl/status/status.h"
#include "server/job.h"

namespace bench {

// Fills what benchd fills (common/spec_defaults.h: data "synthetic" when empty, devices
// from nodes × devices_per_node when 0) and validates every field; models are checked
// against kModelNames (common/names.h, IsKnownModel).
absl::Status NormalizeAndValidateSpec(JobSpec& spec);

}  // namespace bench
