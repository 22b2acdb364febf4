// An ended job's per-rank detail released from memory and put back: benchd keeps the
// detail of live jobs and of the most recently ended ones (JobManagerOptions), so that
// its memory follows what is running, not its history. What the walks over every job read
// of a released job (its GPU model, throughput, the grid's telemetry figures, whether its
// diagnosis has failing checks) is kept in Job::released_ranks; a view of the job loads
// the rest, the diagnosis with it, from the store again (Store::LoadRankDetail).
#pragma once

#include "server/core/job.h"

namespace bench {

// Keeps what the walks read in job.released_ranks and empties (freeing) summaries,
// gpu_telemetry, rank_devices, agent_versions, rank_versions, rank_precisions and the
// diagnosis. A job already released is left as it is.
void ReleaseRankDetail(Job& job);

// Puts back the detail `loaded` carries (Store::LoadRankDetail's, of the job's current
// attempt) and clears job.released_ranks. Placements are left as they are.
void RestoreRankDetail(Job& job, Job&& loaded);

}  // namespace bench
