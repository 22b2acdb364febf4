// The web API's live server-sent-event streams (docs/web-api.md), on the HttpServer's
// event streams. Every `data:` is one line of JSON; objects from the v1 proto use the
// proto3 JSON mapping with the proto's field names and every primitive field printed
// (as benchctl's --json).
//
// GET /api/v1/jobs/{id}/events — one job, live:
//   event `job`:     a benchfleet.v1.JobStatus. First at once, then on each change of
//                    state, attempt or reason; the stream ends after the `job` event of a
//                    terminal state.
//   event `samples`: a JSON array of benchfleet.v1.IterationSample of the current
//                    attempt, as they are stored: each exactly once, each rank's in
//                    iteration order (a batch holds at most `batch_rows`).
//   event `gpu`:     a JSON array of benchfleet.v1.GpuSample, as `samples` (by rank, seq).
//   Unknown job: 404 JSON error. A requeued job starts over at the new attempt's
//   iteration 1 (after the `job` event of the new attempt).
//
// GET /api/v1/fleet/events — the fleet, every `fleet_period`:
//   event `fleet`: {"agents":[benchfleet.v1.AgentStatus...],
//                   "gpus":[{"job_id":"…","rank":0,"node":"agent name","gpu_index":0,
//                            "gpu_uuid":"…","time_unix_ns":"…","power_w":…,
//                            "sm_clock_mhz":…,"temperature_c":…,
//                            "gpu_utilization_pct":…}...]}
//   `gpus`: the latest reading of each running rank that has one (LiveMetrics), by job
//   then rank; a reading's absent figure is absent from its object. The event is
//   rendered once per fleet_period and the same bytes go to every open fleet stream
//   (fleet_event.h), so an event may be up to one fleet_period old.
//
// Memory per client is bounded by design: a job stream keeps cursors (the last
// iteration and GPU seq sent per rank) and reads the store's rows after them, at most
// `batch_rows` per read. It looks every `poll_period`: iterations only after
// JobManager::Watch reported a change (the manager notifies after each commit that
// stored iterations of the job; the callback only records the latest view), GPU
// readings then and at least once a second (they are stored without a notification). While idle a stream
// sends a comment every `ping_period`; it ends when the client goes or the server stops.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "httpd/http_server.h"
#include "server/core/job_manager.h"
#include "server/metrics/live_metrics.h"
#include "server/store/store.h"

namespace bench {

struct LiveStreamOptions {
  absl::Duration poll_period = absl::Milliseconds(250);
  int batch_rows = 5000;
  absl::Duration fleet_period = absl::Seconds(1);
  absl::Duration ping_period = absl::Seconds(10);
  // Tests: counts the fleet events rendered (one per fleet_period with any fleet stream
  // open, whatever their number).
  std::atomic<int64_t>* fleet_renders = nullptr;
};

// Registers both streams on `http` (before its Start). None of the pointers is owned;
// all must outlive the server's Stop(). `live` may be null (no `gpus`).
void RegisterLiveStreams(HttpServer& http, JobManager* manager, Store* store,
                         LiveMetrics* live, LiveStreamOptions options = {});

}  // namespace bench
