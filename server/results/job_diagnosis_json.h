// A JobDiagnosis (job_diagnosis.h) as the JSON text the store keeps in
// job_diagnoses.result, and back: every field, causes and outcomes by their stable names
// (attribution.h's CauseName, checks.h's CheckOutcomeName). A round trip gives an equal
// value. Not the web API's JSON (that is the proto's JSON mapping of JobStatus).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "server/results/job_diagnosis.h"

namespace bench {

std::string DiagnosisToJson(const JobDiagnosis& diagnosis);
// INVALID_ARGUMENT naming what is wrong for text that is not such a JSON object.
absl::StatusOr<JobDiagnosis> DiagnosisFromJson(std::string_view text);

}  // namespace bench
