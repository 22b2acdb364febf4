// The value syntaxes benchctl's flags take, each turned into a C++ value with no I/O.
// Every error is INVALID_ARGUMENT and names the flag as "--<flag>: ..." (the flag is
// passed without its dashes), since it is printed as is before the usage text.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchfleet/v1/types.pb.h"
#include "ctl/args.h"

namespace bench::ctl {

// An int32 ("-5" included; ranges are the server's to judge).
absl::StatusOr<int32_t> ParseIntFlag(absl::string_view flag, absl::string_view value);
// A number as absl::SimpleAtod reads it.
absl::StatusOr<double> ParseDoubleFlag(absl::string_view flag, absl::string_view value);
// A boolean flag's "=value": true, 1, false or 0.
absl::StatusOr<bool> ParseBoolFlag(absl::string_view flag, absl::string_view value);
// "key=value" with a non-empty key (the value may be empty or hold more '=').
absl::StatusOr<std::pair<std::string, std::string>> ParseKeyValueFlag(absl::string_view flag,
                                                                      absl::string_view value);
// "1,8,32": every item an integer, none empty, none repeated.
absl::StatusOr<std::vector<int>> ParseIntListFlag(absl::string_view flag, absl::string_view value);
// A precision name (fp32, tf32, amp, bf16; any case).
absl::StatusOr<benchfleet::v1::Precision> ParsePrecisionFlag(absl::string_view value);
// A data source name (synthetic, imagefolder, coco; common/names.h kDataNames).
absl::StatusOr<benchfleet::v1::DataSource> ParseDataSourceFlag(absl::string_view value);
// "fp32,amp": precision names, none empty, none repeated.
absl::StatusOr<std::vector<benchfleet::v1::Precision>> ParsePrecisionListFlag(
    absl::string_view value);
// RFC3339 ("2026-11-21T10:00:00Z") or a duration ago ("24h", "90m", "7d").
absl::StatusOr<TimeBound> ParseTimeBoundFlag(absl::string_view flag, absl::string_view value);

}  // namespace bench::ctl
