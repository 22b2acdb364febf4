#include "common/spec_names.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace bench {

using benchfleet::v1::JobState;
using benchfleet::v1::Precision;

std::string PrecisionName(Precision precision) {
  switch (precision) {
    case benchfleet::v1::PRECISION_FP32: return "fp32";
    case benchfleet::v1::PRECISION_AMP: return "amp";
    case benchfleet::v1::PRECISION_TF32: return "tf32";
    case benchfleet::v1::PRECISION_BF16: return "bf16";
    default: return "unspecified";
  }
}

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == "fp32") return benchfleet::v1::PRECISION_FP32;
  if (lower == "amp") return benchfleet::v1::PRECISION_AMP;
  if (lower == "tf32") return benchfleet::v1::PRECISION_TF32;
  if (lower == "bf16") return benchfleet::v1::PRECISION_BF16;
  return absl::InvalidArgumentError(absl::StrCat(
      "precision: unknown precision \"", name, "\" (expected fp32, tf32, amp or bf16)"));
}

std::string JobStateName(JobState state) {
  switch (state) {
    case benchfleet::v1::JOB_STATE_QUEUED: return "QUEUED";
    case benchfleet::v1::JOB_STATE_RUNNING: return "RUNNING";
    case benchfleet::v1::JOB_STATE_SUCCEEDED: return "SUCCEEDED";
    case benchfleet::v1::JOB_STATE_FAILED: return "FAILED";
    case benchfleet::v1::JOB_STATE_CANCELLED: return "CANCELLED";
    default: return "UNSPECIFIED";
  }
}

bool IsTerminal(JobState state) {
  return state == benchfleet::v1::JOB_STATE_SUCCEEDED ||
         state == benchfleet::v1::JOB_STATE_FAILED ||
         state == benchfleet::v1::JOB_STATE_CANCELLED;
}

}  // namespace bench
