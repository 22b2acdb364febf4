#include "common/spec_names.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace bench {

using benchfleet::v1::JobState;
using benchfleet::v1::Precision;

namespace {

// kJobStates is in the API's order, from JOB_STATE_QUEUED = 1.
static_assert(benchfleet::v1::JOB_STATE_QUEUED == 1 && benchfleet::v1::JOB_STATE_CANCELLED == 5 &&
              std::size(kJobStates) == 5);
const JobStateNaming* Naming(JobState state) {
  const int index = static_cast<int>(state) - 1;
  if (index < 0 || index >= static_cast<int>(std::size(kJobStates))) return nullptr;
  return &kJobStates[index];
}

}  // namespace

std::string PrecisionName(Precision precision) {
  switch (precision) {
    case benchfleet::v1::PRECISION_FP32: return kPrecisionFp32;
    case benchfleet::v1::PRECISION_AMP: return kPrecisionAmp;
    case benchfleet::v1::PRECISION_TF32: return kPrecisionTf32;
    case benchfleet::v1::PRECISION_BF16: return kPrecisionBf16;
    default: return kPrecisionUnspecified;
  }
}

std::string DataSourceName(benchfleet::v1::DataSource data) {
  switch (data) {
    case benchfleet::v1::DATA_SOURCE_IMAGEFOLDER: return kDataImageFolder;
    case benchfleet::v1::DATA_SOURCE_COCO: return kDataCoco;
    default: return kDataSynthetic;
  }
}

absl::StatusOr<benchfleet::v1::DataSource> ParseDataSource(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == kDataSynthetic) return benchfleet::v1::DATA_SOURCE_SYNTHETIC;
  if (lower == kDataImageFolder) return benchfleet::v1::DATA_SOURCE_IMAGEFOLDER;
  if (lower == kDataCoco) return benchfleet::v1::DATA_SOURCE_COCO;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown data source \"", name, "\" (known: ", JoinNames(kDataNames), ")"));
}

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == kPrecisionFp32) return benchfleet::v1::PRECISION_FP32;
  if (lower == kPrecisionAmp) return benchfleet::v1::PRECISION_AMP;
  if (lower == kPrecisionTf32) return benchfleet::v1::PRECISION_TF32;
  if (lower == kPrecisionBf16) return benchfleet::v1::PRECISION_BF16;
  return absl::InvalidArgumentError(absl::StrCat("precision: unknown precision \"", name,
                                                 "\" (expected ", JoinNames(kPrecisionNames), ")"));
}

std::string JobStateName(JobState state) {
  const JobStateNaming* naming = Naming(state);
  return naming ? naming->name : kJobStateUnknown;
}

bool IsTerminal(JobState state) {
  const JobStateNaming* naming = Naming(state);
  return naming != nullptr && naming->terminal;
}

}  // namespace bench
