// Checks a job spec before anything is stored. Errors are INVALID_ARGUMENT and name the
// field as the API spells it, with benchctl's flag beside it.
#pragma once

#include "absl/status/status.h"
#include "server/job.h"

namespace bench {

// Models bench-train can build (the registry's names).
bool IsKnownModel(const std::string& model);

// Fills defaults (data "synthetic" when empty) and validates every field.
absl::Status NormalizeAndValidateSpec(JobSpec& spec);

}  // namespace bench
