// Renderings of fleet-wide figures for benchctl: per-GPU variability (`gpus`) and
// baselines (`baseline`, `baselines`). Pure functions.
#pragma once

#include <string>
#include <vector>

#include "benchfleet/v1/controller.pb.h"
#include "benchfleet/v1/types.pb.h"

namespace bench::ctl {

// `gpus`: GPUs as the server ranked them (slowest first): UUID, name, node (agent/host),
// index, jobs, iterations, step time vs the fleet ("1.52x"), CV, SM clock p50 (p5-p95),
// power p50, temperature p50 and "SLOW" for outliers, then a line naming the threshold.
// `outliers_only` keeps the flagged ones, saying "no GPU is slower than the fleet by more
// than 5%" when there are none. Without GPUs: a "no data" line.
std::string FormatGpuVariability(const benchfleet::v1::GpuVariabilityResponse& response,
                                 bool outliers_only);

// After `baseline JOB`: what was set, with its bounds in images/s.
std::string FormatBaselineSet(const benchfleet::v1::Baseline& baseline);
// `baselines`: one row per baseline (model, kind, GPU model, devices, precision, batch,
// images/s, bounds, job, when set), or "no baselines\n".
std::string FormatBaselinesTable(const std::vector<benchfleet::v1::Baseline>& baselines);

}  // namespace bench::ctl
