// The v1 API's precisions, data sources and job states by their user-facing names (common/names.h),
// shared by benchd's adapters, the agent and benchctl, so that every surface spells them
// the same way.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchfleet/v1/types.pb.h"
#include "common/names.h"

namespace bench {

// "fp32" / "tf32" / "amp" / "bf16"; UNSPECIFIED prints as "unspecified".
std::string PrecisionName(benchfleet::v1::Precision precision);
// Accepts "fp32", "tf32", "amp" and "bf16" (case-insensitive); anything else is INVALID_ARGUMENT
// naming it.
absl::StatusOr<benchfleet::v1::Precision> ParsePrecision(absl::string_view name);

// "synthetic" / "imagefolder" / "coco" (kDataNames); UNSPECIFIED (and a number this
// build does not know) prints as "synthetic", what benchd fills in.
std::string DataSourceName(benchfleet::v1::DataSource data);
// Accepts the kDataNames (case-insensitive); anything else is INVALID_ARGUMENT naming it.
absl::StatusOr<benchfleet::v1::DataSource> ParseDataSource(absl::string_view name);

// "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED" (kJobStates); else "UNSPECIFIED".
std::string JobStateName(benchfleet::v1::JobState state);
// SUCCEEDED, FAILED or CANCELLED (kJobStates' terminal ones).
bool IsTerminal(benchfleet::v1::JobState state);

}  // namespace bench
