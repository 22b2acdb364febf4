// What /metrics shows about jobs while they run (and for a while after): live
// throughput per job and rank, each running rank's latest GPU reading, ingest counters.
//
// Fed by the JobManager as samples arrive and jobs change state; read by the metrics
// exporter at scrape time. Cardinality is bounded: a rank's GPU series exist only
// while it runs, and a job's series go away `retention` after it ended (an ended job
// keeps no ranks).
//
// Live throughput of a rank: images of its last kWindow iterations over the time they
// took on its own clock (elapsed_s); a job's is the sum over its ranks. Once the job
// has ended (`ended`) the job's figure is its measured throughput (ARCHITECTURE.md's
// definition) or absent when there is none. Thread-safe.
//
// It is the JobManager's JobEvents (job_events.h): benchd hands it to the manager, whose
// events become these figures (a placement starts a job's series, its end ends them,
// screened and stored uploads feed the rates and counters).
//
// It also holds the agent service's RPC counters (agent_rpc_counters.h): lock-free, the
// adapter counts into agent_rpcs() and Take copies them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/core/job.h"
#include "server/core/job_events.h"
#include "server/metrics/agent_rpc_counters.h"

namespace bench {

class LiveMetrics : public JobEvents {
 public:
  static constexpr int kWindow = 10;  // iterations per rank in the live rate

  struct JobLabels {
    std::string model;
    std::string precision;
    int batch_size = 0;
    int devices = 0;
    bool simulated = false;  // every per-job series gets simulated="true" (issue 26)
  };
  struct RankState {
    std::string node;
    std::optional<double> images_per_second;
    std::optional<GpuSample> gpu;  // latest reading while the rank runs
  };
  struct JobState {
    JobLabels labels;
    std::map<int, RankState> ranks;
    std::optional<double> images_per_second;
    std::optional<double> energy_per_image_j;
    bool ended = false;
  };
  struct Counters {
    int64_t samples_ingested = 0;
    int64_t gpu_samples_ingested = 0;
    int64_t duplicates = 0;
    std::map<std::string, int64_t> ingest_errors;          // by reason
    std::map<std::string, int64_t> rank_reports_rejected;  // summaries refused, by reason
  };
  struct Snapshot {
    std::map<std::string, JobState> jobs;  // by job id
    Counters counters;
    AgentRpcCounters::Figures agent_rpcs;
  };

  explicit LiveMetrics(absl::Duration retention = absl::Minutes(10));

  void JobStarted(const std::string& job_id, JobLabels labels);
  void RecordIteration(const std::string& job_id, const std::string& node,
                       const IterationSample& sample);
  // The same as RecordIteration for each sample in turn, under one lock.
  void RecordIterations(const std::string& node, const std::vector<IterationSample>& samples);
  void RecordGpuSample(const std::string& job_id, const std::string& node, const GpuSample& sample);
  // The same as RecordGpuSample for each sample (of its own job) in turn, under one lock.
  void RecordGpuSamples(const std::string& node, const std::vector<GpuSample>& samples);
  // The rank's process ended: its GPU series go.
  void RankEnded(const std::string& job_id, int rank);
  // `images_per_second`: the measured throughput, if any.
  void JobEnded(const std::string& job_id, std::optional<double> images_per_second, absl::Time now);
  void SetEnergyPerImage(const std::string& job_id, double joules);
  // The job's figures are simulated (bench-sim-train): its series are labelled so.
  void MarkSimulated(const std::string& job_id);

  void CountStored(int64_t samples, int64_t gpu_samples, int64_t duplicates);
  // `reason`: one of a bounded set (sample_validation.h), never free text.
  void CountIngestErrors(const std::string& reason, int64_t count);
  void CountRankReportRejected(const std::string& reason);

  // Where the agent service counts its calls and upload batches (never under mu_).
  AgentRpcCounters& agent_rpcs() { return agent_rpcs_; }

  // Drops jobs that ended more than `retention` before `now`, then copies the rest.
  Snapshot Take(absl::Time now);
  // Drops as Take, then calls `visit` with each running rank's latest GPU reading (jobs
  // not ended, by job id then rank), under the lock and without a copy: `visit` must be
  // quick and must not call back into this object. (The live fleet stream's renderer.)
  void VisitLatestGpu(absl::Time now,
                      absl::FunctionRef<void(const std::string& job_id, int rank,
                                             const std::string& node, const GpuSample& gpu)>
                          visit);

  // JobEvents: RUNNING → JobStarted; the end of a placed attempt → JobEnded with its
  // throughput, at its transition's time; the rest to the recorders and counters above.
  void OnStateChanged(const Job& job) override;
  void OnRankEnded(const Job& job, int rank) override;
  void OnRankReportRefused(const std::string& job_id, std::string_view reason) override;
  void OnSamplesScreened(const std::string& agent, const ScreenedSamples& screened) override;
  void OnSamplesStored(int64_t samples, int64_t gpu_samples, int64_t duplicates) override;
  void OnSamplesNotStored(int64_t count) override;
  void OnTelemetryJoined(const Job& job) override;
  void OnSimulated(const Job& job) override;

 private:
  // A rank's last kWindow + 1 iterations, by iteration (a repeat replaces its entry),
  // inline: an upload's iterations allocate nothing.
  struct WindowEntry {
    int iteration = 0;
    double elapsed_s = 0;
    int images = 0;
  };
  struct RankWindow {
    absl::InlinedVector<WindowEntry, kWindow + 2> recent;
  };
  struct Entry {
    JobState state;
    std::map<int, RankWindow> windows;
    absl::Time ended_at = absl::InfinitePast();
  };

  static std::optional<double> RateOf(const RankWindow& window);
  static void AddToWindow(RankWindow& window, const IterationSample& sample);
  // The rank's live rate (a running job's sum over its ranks is taken when read).
  static void UpdateRate(Entry& entry, int rank);
  // A running job's live rate: the sum over its ranks that have one.
  static std::optional<double> SumOfRanks(const JobState& state);
  void PruneLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration retention_;
  absl::Mutex mu_;
  std::map<std::string, Entry> jobs_ ABSL_GUARDED_BY(mu_);
  Counters counters_ ABSL_GUARDED_BY(mu_);
  AgentRpcCounters agent_rpcs_;
};

}  // namespace bench
