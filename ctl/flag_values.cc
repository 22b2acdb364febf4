#include "ctl/flag_values.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/spec_names.h"

namespace bench::ctl {

absl::StatusOr<int32_t> ParseIntFlag(absl::string_view flag, absl::string_view value) {
  int32_t n = 0;
  if (!absl::SimpleAtoi(value, &n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": expected an integer, got \"", value, "\""));
  }
  return n;
}

absl::StatusOr<double> ParseDoubleFlag(absl::string_view flag, absl::string_view value) {
  double x = 0;
  if (!absl::SimpleAtod(value, &x)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": expected a number, got \"", value, "\""));
  }
  return x;
}

absl::StatusOr<bool> ParseBoolFlag(absl::string_view flag, absl::string_view value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, ": expected true or false, got \"", value, "\""));
}

absl::StatusOr<std::pair<std::string, std::string>> ParseKeyValueFlag(absl::string_view flag,
                                                                      absl::string_view value) {
  const size_t eq = value.find('=');
  if (eq == absl::string_view::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": expected key=value, got \"", value, "\""));
  }
  return std::make_pair(std::string(value.substr(0, eq)), std::string(value.substr(eq + 1)));
}

absl::StatusOr<std::vector<int>> ParseIntListFlag(absl::string_view flag, absl::string_view value) {
  std::vector<int> out;
  for (absl::string_view item : absl::StrSplit(value, ',')) {
    if (item.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": empty item in \"", value, "\""));
    }
    int32_t n = 0;
    if (!absl::SimpleAtoi(item, &n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": expected integers, got \"", item, "\""));
    }
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", n, " given twice"));
    }
    out.push_back(n);
  }
  return out;
}

absl::StatusOr<benchfleet::v1::Precision> ParsePrecisionFlag(absl::string_view value) {
  absl::StatusOr<benchfleet::v1::Precision> precision = ParsePrecision(value);
  if (!precision.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--precision: expected ", JoinNames(kPrecisionNames), ", got \"", value, "\""));
  }
  return *precision;
}

absl::StatusOr<benchfleet::v1::DataSource> ParseDataSourceFlag(absl::string_view value) {
  absl::StatusOr<benchfleet::v1::DataSource> data = ParseDataSource(value);
  if (!data.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--data: expected ", JoinNames(kDataNames), ", got \"", value, "\""));
  }
  return *data;
}

absl::StatusOr<std::vector<benchfleet::v1::Precision>> ParsePrecisionListFlag(
    absl::string_view value) {
  std::vector<benchfleet::v1::Precision> out;
  for (absl::string_view item : absl::StrSplit(value, ',')) {
    if (item.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--precision: empty item in \"", value, "\""));
    }
    absl::StatusOr<benchfleet::v1::Precision> precision = ParsePrecisionFlag(item);
    if (!precision.ok()) return precision.status();
    if (std::find(out.begin(), out.end(), *precision) != out.end()) {
      return absl::InvalidArgumentError(absl::StrCat("--precision: ", item, " given twice"));
    }
    out.push_back(*precision);
  }
  return out;
}

absl::StatusOr<TimeBound> ParseTimeBoundFlag(absl::string_view flag, absl::string_view value) {
  TimeBound out;
  absl::Time at;
  std::string error;
  if (absl::ParseTime(absl::RFC3339_full, value, &at, &error)) {
    out.at = at;
    return out;
  }
  absl::Duration ago;
  bool parsed = false;
  if (value.size() > 1 && value.back() == 'd') {
    int32_t days = 0;
    if (absl::SimpleAtoi(value.substr(0, value.size() - 1), &days)) {
      ago = absl::Hours(24) * days;
      parsed = true;
    }
  } else {
    parsed = absl::ParseDuration(value, &ago);
  }
  if (!parsed || ago < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag,
                     ": expected an RFC3339 time (2026-11-21T10:00:00Z) or a duration ago "
                     "(24h, 7d), got \"",
                     value, "\""));
  }
  out.ago = ago;
  return out;
}

}  // namespace bench::ctl
