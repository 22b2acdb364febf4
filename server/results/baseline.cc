#include "server/results/baseline.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace bench {

absl::Status NormalizeTolerances(double& lower_pct, double& upper_pct) {
  if (!(lower_pct >= 0 && lower_pct < 100)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lower_tolerance_pct: ", lower_pct, " is outside [0, 100)"));
  }
  if (!(upper_pct >= 0) || !std::isfinite(upper_pct)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "upper_tolerance_pct: ", upper_pct, " must be >= 0"));
  }
  return absl::OkStatus();
}

BaselineComparison CompareWithBaseline(double images_per_second, const Baseline& baseline) {
  BaselineComparison comparison;
  comparison.baseline_job_id = baseline.job_id;
  comparison.baseline_images_per_second = baseline.images_per_second;
  comparison.ratio = images_per_second / baseline.images_per_second;
  double lower = baseline.images_per_second * (1 - baseline.lower_tolerance_pct / 100);
  double upper = baseline.images_per_second * (1 + baseline.upper_tolerance_pct / 100);
  if (images_per_second < lower) {
    comparison.verdict = BaselineVerdict::kBelow;
  } else if (images_per_second > upper) {
    comparison.verdict = BaselineVerdict::kAbove;
  } else {
    comparison.verdict = BaselineVerdict::kWithin;
  }
  return comparison;
}

std::optional<BaselineComparison> CompareWithBaselines(double images_per_second,
                                                       const ConfigurationKey& configuration,
                                                       const Baselines& baselines) {
  auto it = baselines.find(configuration);
  if (it == baselines.end() || it->second.images_per_second <= 0) return std::nullopt;
  return CompareWithBaseline(images_per_second, it->second);
}

}  // namespace bench
