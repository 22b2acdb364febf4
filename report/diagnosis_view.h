// A finished job's diagnosis (the v1 API's JobDiagnosis; docs/diagnosis.md) as the text of
// `benchctl status`'s "diagnosis:" section and of `benchctl diagnose`, and as the web API's
// GET /api/v1/jobs/{id}/text "diagnosis" figure, which the job page shows as it comes: one
// renderer for all three. Pure functions, no I/O; the same message gives the same bytes.
#pragma once

#include <string>

#include "benchfleet/v1/types.pb.h"

namespace bench::report {

// Lines, each ending in '\n', unindented:
//   stragglers: none (32 ranks, iterations 11-510)
//     or "2 ranks lost 1.52 s (3.0 % of the window, iterations 11-510)" and a table
//     RANK NODE GPU PHASES (iterations, excess) LOST S;
//   excess: "1.25 s above the ideal step (3.1 % of 40.50 s); ideal 0.0805 s: <rule>", a
//     table CAUSE SECONDS % OF EXCESS, a table by rank RANK NODE GPU CAUSE SECONDS %, and
//     "power capped at full clock, no cost: rank 4 (node-1, GPU 4, 120 iterations)";
//   checks: "6 pass, 1 fail, 0 not applicable" and a table CHECK OUTCOME FIGURE BOUND DETAIL
//     (outcome "FAIL" in capitals).
// Without data: its note ("no data: ..."), or "no data". A report that does not apply: its reason.
std::string DiagnosisText(const benchfleet::v1::JobDiagnosis& diagnosis);

}  // namespace bench::report
