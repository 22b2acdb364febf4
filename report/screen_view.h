// Fleet screening as text (`benchctl screen --wait`, `benchctl screen --show ID`, the page's
// text): one function per message, shared by every caller so that the same stored data
// prints the same lines. Pure: the output is a function of the message alone (no clock).
//
// RenderScreeningReport prints, in this order: a title line (the id, how many GPUs on how
// many nodes, how many flagged, how many jobs still pending); one line per configuration
// (its fleet median step time, the spread and the slow threshold); the table of GPUs in the
// message's order (flagged first) with NODE, GPU, VERDICT ("ok", "slow +x.x %", "fault",
// "failed"), VS FLEET (its median against the fleet median), CAUSE (the probable cause first),
// EVIDENCE and JOB; the table of nodes (NODE, GPUS, VERDICT: "ok" or "flagged: GPU 2, 5");
// and a closing line ("5 of 64 GPUs flagged" or "all 64 GPUs ok").
#pragma once

#include <string>

#include "benchfleet/v1/controller.pb.h"

namespace bench::report {

// The exit code of `benchctl screen --wait` and `--show` when a GPU is flagged or a job
// failed (0 when every GPU is ok; 1 stays for errors, 2 for usage).
inline constexpr int kScreenFlaggedExitCode = 3;

// "ok", "slow +12.3 %", "fault" or "failed".
std::string ScreenVerdictText(const benchfleet::v1::ScreeningGpuVerdict& gpu);

std::string RenderScreeningReport(const benchfleet::v1::ScreeningReport& report);

// The list of screenings: ID, CREATED (UTC, RFC 3339 to the second), JOBS, PENDING,
// SUCCEEDED, FAILED, NODES; "no screenings" when empty.
std::string RenderScreeningList(const benchfleet::v1::ListScreeningsResponse& list);

}  // namespace bench::report
