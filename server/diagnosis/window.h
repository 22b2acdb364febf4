// The measured window the per-job analyses share: a job's ranks sorted by rank (duplicates
// dropped), each with its valid measured iterations sorted by iteration (warm-up, duplicate
// and invalid ones dropped) and its readings sorted by time. Internal to server/diagnosis/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/diagnosis/inputs.h"

namespace bench::diagnosis {

struct PreparedRank {
  int rank = 0;
  std::string node;
  int gpu_index = -1;
  std::string gpu_uuid;
  std::vector<IterationTiming> measured;  // valid, not warm-up, ascending, unique
  std::vector<GpuReading> readings;       // ascending time, unique times
};

std::vector<PreparedRank> PrepareRanks(const JobInputs& job);

// The iterations every rank measured, ascending.
std::vector<int> CommonIterations(const std::vector<PreparedRank>& ranks);

// The rank's iteration `iteration`, or nullptr (binary search in `measured`).
const IterationTiming* FindIteration(const PreparedRank& rank, int iteration);

// The readings of `readings` (ascending time) with a time in [from_ns, to_ns]; when none,
// the one nearest to that interval if within `nearest_ns`; empty otherwise.
std::vector<const GpuReading*> ReadingsOverlapping(const std::vector<GpuReading>& readings,
                                                   int64_t from_ns, int64_t to_ns,
                                                   int64_t nearest_ns);

// True when the reading's SM clock is below `ratio` of its maximum (both known).
bool ClockBelowMax(const GpuReading& reading, double ratio);

}  // namespace bench::diagnosis
