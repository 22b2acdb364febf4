// `benchctl compare JOB_A JOB_B` and GET /api/v1/compare: two jobs side by side. Pure
// functions.
#pragma once

#include <optional>
#include <string>

#include "benchfleet/v1/types.pb.h"

namespace bench::report {

// B's throughput over A's; nullopt when either has no figure (or A's is 0).
std::optional<double> ThroughputRatio(const benchfleet::v1::JobStatus& a,
                                      const benchfleet::v1::JobStatus& b);

// A table FIELD | A | B with "*" before every line whose values differ: state, spec
// fields, labels, images/s, energy per image, baseline verdicts, each version of the
// environment (union of keys, "-" where one side lacks it), hosts, and per rank its node,
// device, GPU name and UUID; then "throughput B/A: 1.023x" (or "no data: ..." saying which
// side lacks a figure) and a note on what "*" means.
std::string FormatComparison(const benchfleet::v1::JobStatus& a,
                             const benchfleet::v1::JobStatus& b);

// {"a": job, "b": job, "throughput_ratio": x|null, "differences": ["precision", ...]},
// one line ending in '\n'.
std::string ComparisonJson(const benchfleet::v1::JobStatus& a,
                           const benchfleet::v1::JobStatus& b);

}  // namespace bench::report
