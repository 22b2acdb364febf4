// JobEvents: what happens to jobs in the JobManager, told to whoever keeps figures of it
// (LiveMetrics, for /metrics: benchd gives it to the manager). The manager calls each
// event where the change happens; every event does nothing unless overridden.
//
// Calls come under the manager's lock, in the order things happen, except
// OnSamplesStored and OnSamplesNotStored, which come from the store's writer thread
// without it. An implementation must be thread-safe, must not block and must not call
// back into the manager.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "server/core/job.h"
#include "server/core/sample_ingestion.h"

namespace bench {

class JobEvents {
 public:
  virtual ~JobEvents() = default;

  // A submitted job was stored (QUEUED).
  virtual void OnSubmitted(const Job& /*job*/) {}
  // The job changed state: its state, reason and history's last entry (with its time)
  // are the new ones. RUNNING: an attempt was placed (job.attempt is its number).
  virtual void OnStateChanged(const Job& /*job*/) {}
  // A rank of the job's current attempt ended (its report said how).
  virtual void OnRankEnded(const Job& /*job*/, int /*rank*/) {}
  // A rank report (or its summary) was refused; `reason` is one of sample_validation.h's.
  virtual void OnRankReportRefused(const std::string& /*job_id*/, std::string_view /*reason*/) {}
  // An upload of `agent` was screened (sample_ingestion.h): what goes to the store, and
  // what was refused by reason.
  virtual void OnSamplesScreened(const std::string& /*agent*/,
                                 const ScreenedSamples& /*screened*/) {}
  // The store committed an upload: new iterations, new GPU readings, repeats of stored ones.
  virtual void OnSamplesStored(int64_t /*samples*/, int64_t /*gpu_samples*/,
                               int64_t /*duplicates*/) {}
  // The store failed an upload of `count` samples (the agent sends them again).
  virtual void OnSamplesNotStored(int64_t /*count*/) {}
  // The ended attempt's GPU telemetry was joined (job.gpu_telemetry, job.telemetry_note).
  virtual void OnTelemetryJoined(const Job& /*job*/) {}
  // A rank's trainer said "simulated": true: job.simulated has just been set (issue 26).
  virtual void OnSimulated(const Job& /*job*/) {}
};

}  // namespace bench
