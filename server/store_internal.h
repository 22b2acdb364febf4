// Row-level helpers shared by store.cc and store_telemetry.cc (not part of the API).
// Each runs on the connection it is given; the caller holds that connection.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/job.h"
#include "server/store.h"

namespace bench {

class Database;

absl::StatusOr<std::vector<IterationSample>> SelectSamples(Database& db,
                                                           const std::string& job_id,
                                                           int attempt,
                                                           int from_iteration = 0);
absl::StatusOr<std::vector<GpuSample>> SelectGpuSamples(Database& db, const std::string& job_id,
                                                         int attempt);
// INSERT OR IGNORE; counts into result->gpu_stored / gpu_duplicates.
absl::Status InsertGpuSamples(Database& db, const std::vector<GpuSample>& samples,
                              AppendResult* result);
// The job's current-attempt gpu_telemetry rows, replaced by job.gpu_telemetry.
absl::Status WriteGpuTelemetryRows(Database& db, const Job& job);
// Fills each job's gpu_telemetry (current attempt); `index` maps job id → position.
absl::Status LoadGpuTelemetry(Database& db, const std::map<std::string, size_t>& index,
                              std::vector<Job>& jobs);

}  // namespace bench
