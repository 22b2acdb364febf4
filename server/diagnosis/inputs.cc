#include "server/diagnosis/inputs.h"

#include <algorithm>
#include <cmath>

namespace bench::diagnosis {
namespace {

bool Usable(const std::optional<double>& v) { return v && std::isfinite(*v) && *v >= 0; }

}  // namespace

double IterationTiming::ComputeSeconds() const {
  if (Usable(forward_backward_time_s)) return *forward_backward_time_s;
  if (Usable(compute_time_s)) return *compute_time_s;
  const double data = std::isfinite(data_time_s) && data_time_s > 0 ? data_time_s : 0;
  if (!std::isfinite(step_time_s)) return 0;
  return std::max(0.0, step_time_s - data);
}

}  // namespace bench::diagnosis
