// Baselines: a reference result per configuration with lower and upper tolerances
// (ReFrame-style), and how a figure compares with one. Pure.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/core/job.h"

namespace bench {

struct Baseline {
  ConfigurationKey configuration;  // device_kind and gpu_model of the reference job
  std::string job_id;
  double images_per_second = 0;
  double lower_tolerance_pct = 5;
  double upper_tolerance_pct = 5;
  absl::Time set;
};
using Baselines = std::map<ConfigurationKey, Baseline>;

enum class BaselineVerdict { kWithin, kBelow, kAbove };

struct BaselineComparison {
  BaselineVerdict verdict = BaselineVerdict::kWithin;
  std::string baseline_job_id;
  double baseline_images_per_second = 0;
  double ratio = 0;  // figure / baseline
};

inline constexpr double kDefaultTolerancePct = 5;

// Validates the tolerances (0 is allowed: any difference counts): INVALID_ARGUMENT for
// a lower one outside [0, 100) or an upper one that is negative or not finite, naming
// the field.
absl::Status NormalizeTolerances(double& lower_pct, double& upper_pct);

// BELOW if `images_per_second` < baseline × (1 − lower/100), ABOVE if it is >
// baseline × (1 + upper/100), else WITHIN (the bounds themselves are within).
BaselineComparison CompareWithBaseline(double images_per_second, const Baseline& baseline);

// The comparison with the baseline of `configuration`, if it has one.
std::optional<BaselineComparison> CompareWithBaselines(double images_per_second,
                                                       const ConfigurationKey& configuration,
                                                       const Baselines& baselines);

}  // namespace bench
