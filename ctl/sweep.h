// `benchctl sweep`: the grid of jobs a sweep submits, their deterministic request ids, and
// how its progress reads. Pure functions, no I/O.
//
// Request ids: "sweep-<16 hex>-g<N>-<precision>-bs<B>-r<k>", where the hash covers what
// every job of the sweep shares (model, iterations, warm-up, image size, data, name,
// labels, and the node constraints --node/--node-label where given, not the limits) plus
// an optional nonce (--again). The lists and --repeat choose which cells
// exist, not what a cell is, so re-running a sweep, or widening it (another GPU count,
// more repeats), finds the jobs already submitted instead of duplicating them. A cell
// whose job FAILED or was CANCELLED is resubmitted under RetryRequestId(id, 1), (id, 2), ...
#pragma once

#include <string>
#include <vector>

#include "benchfleet/v1/types.pb.h"
#include "ctl/args.h"

namespace bench::ctl {

struct SweepJob {
  benchfleet::v1::JobSpec spec;  // the whole spec, request_id included
  std::string cell;              // "g8-amp-bs256-r2"
};

// 16 lowercase hex digits (FNV-1a 64) of the shared spec and `nonce`.
std::string SweepHash(const benchfleet::v1::JobSpec& base, const std::string& nonce);

// Every (gpus, precision, batch size, repeat) in the order given (GPU counts outermost,
// repeats innermost), each with its request id.
std::vector<SweepJob> ExpandSweep(const SweepOptions& options, const std::string& nonce = "");

// "<id>-retry-<n>" for n >= 1; `id` itself for n <= 0.
std::string RetryRequestId(const std::string& request_id, int retry);

// "sweep: 5/12 done (4 SUCCEEDED, 1 FAILED; 3 RUNNING, 4 QUEUED)"; states with no job are
// left out.
std::string SweepProgressLine(const std::vector<benchfleet::v1::JobStatus>& jobs);

// The closing table once every job is terminal: one row per job (ID, CELL, STATE,
// IMAGES/S with "no data" where there is no figure), then "N/M jobs succeeded".
std::string SweepSummary(const std::vector<SweepJob>& sweep,
                         const std::vector<benchfleet::v1::JobStatus>& jobs);

}  // namespace bench::ctl
