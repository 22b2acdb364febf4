// bench-sim-train's events: bench-train's JSON lines (docs/trainer-events.md), written
// with common/trainer_contract.h's names; the start event says "simulated": true. Each
// function returns one line without its newline. Standard library only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "worker/sim/sim_flags.h"
#include "worker/sim/sim_model.h"

namespace bench::sim {

// The precision in effect for --precision on --device, as bench-train names it.
std::string PrecisionInEffect(const std::string& requested, const std::string& device);

std::string StartEvent(const SimOptions& options, int rank, int world_size, int local_rank);
std::string IterEvent(const SimOptions& options, int rank, int iteration, const RankStep& step,
                      double elapsed_s);
// `measured`: the measured iterations' steps, in order.
std::string SummaryEvent(const SimOptions& options, int rank, const std::vector<RankStep>& measured,
                         int64_t max_rss_bytes);
std::string ErrorEvent(int rank, const std::string& message);

// numpy's default percentile (linear interpolation between order statistics); 0 for none.
double Percentile(std::vector<double> values, double percent);

}  // namespace bench::sim
