// A job's figures in the words of `benchctl status`, for benchctl and for the web API's
// GET /api/v1/jobs/{id}/text (the job view shows them as they come): one function per
// figure, over the v1 API's JobStatus. Pure functions, no I/O.
#pragma once

#include <string>

#include "benchfleet/v1/types.pb.h"

namespace bench::report {

// --data-vs-compute's figure: "0.62 of compute: 120.3 images/s on its data, 193.1 on
// synthetic data", or "no data (every rank's run on synthetic data is needed)" until every
// rank has both. Meaningful only for a job whose spec asks for it (spec.data_vs_compute).
std::string DataVsComputeText(const benchfleet::v1::JobStatus& job);

// The job's text figures as one JSON object and '\n' (docs/web-api.md):
// {"vs_compute": DataVsComputeText, or "" when the spec does not ask for it,
//  "diagnosis": report/diagnosis_view.h's DiagnosisText, or "" until the job has one}.
std::string JobFiguresJson(const benchfleet::v1::JobStatus& job);

}  // namespace bench::report
