// The robust statistics the diagnosis room shares (docs/diagnosis.md): median, median
// absolute deviation, Theil-Sen slope. Pure; NaN and infinite values must be left out by
// the caller. Internal to server/diagnosis/.
#pragma once

#include <vector>

namespace bench::diagnosis {

// The median (the mean of the two middle values for an even count); 0 for no values.
double MedianOf(std::vector<double> values);
// The median absolute deviation from the median (unscaled; x 1.4826 estimates sigma for
// normal data); 0 for no values.
double MadOf(const std::vector<double>& values);
// The Theil-Sen slope of y over x (the median of the pairwise slopes, pairs with equal x
// left out); 0 for fewer than two distinct x. Above kTheilSenMaxPoints points the series is
// first reduced to that many block medians (consecutive blocks of equal size), so that
// the cost stays bounded; x must be ascending.
inline constexpr int kTheilSenMaxPoints = 1000;
double TheilSenSlope(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace bench::diagnosis
