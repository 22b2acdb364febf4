// Runs this agent's ranks of one assignment: spawns one bench-train process per rank
// (each in its own process group), turns its stdout events into samples and reports,
// and supervises it to the end.
//
// Per rank: a reader thread parses stdout (iter -> SampleSink, a non-finite loss
// included; start -> a STARTED report carrying the precision in effect, parameters and
// versions; start/summary/error kept for the final report; other lines are logged), a reader thread keeps a bounded tail of
// stderr and echoes it to the agent's stderr as "[JOB rank N] ...", and a waiter thread
// reaps the process. When a rank exits, the waiter kills what is left of its process
// group, waits until the SampleSink has delivered every sample of that rank, then hands
// the rank's final report to the ReportSink, so that a controller which sees the final
// state already has all the samples. A GPU rank's GPU is registered with the GpuSampler
// (if any) when the rank is spawned and unregistered, after a final reading, when it
// exits; its final report also waits for that final GPU sample. A rank that fails makes the supervisor terminate
// its siblings (SIGTERM, SIGKILL after kill_grace), which are reported CANCELLED (or
// FAILED if they failed on their own first).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "benchfleet/v1/agent.pb.h"
#include "common/subprocess.h"
#include "worker/agent/gpu_sampler.h"
#include "worker/agent/output_tail.h"
#include "worker/agent/rank_registry.h"
#include "worker/agent/sinks.h"

namespace bench::agent {

struct RankSupervisorOptions {
  std::string bench_train = "bench-train";  // program to run (PATH is searched)
  // This node's address: where the rendezvous port is picked when hosting rank 0, and
  // MASTER_ADDR when the assignment names none.
  std::string address = "127.0.0.1";
  // This agent's name: in messages (a missing data path) and every rank's BENCH_NODE_NAME.
  std::string node_name;
  // The folders real-data jobs may read, with what is below them (--data-root); empty:
  // no real data at all. A job's data_path is checked against them (CheckDataPath,
  // data_path.h) before any rank starts.
  std::vector<std::string> data_roots;
  int cpu_threads = 1;  // --threads and OMP_NUM_THREADS of each CPU rank
  int host_cores = 1;   // the node's cores, shared by a GPU job's ranks for host threads
  absl::Duration kill_grace = absl::Seconds(5);
  // Test mode (--gpu-ranks-on-cpu): GPU ranks (device_kind "cuda") are launched with
  // --device cpu and cpu_threads threads, as CPU ranks; their GPU is still sampled.
  bool gpu_ranks_on_cpu = false;
  // Tests and demonstrations only (--fault-scenario): a scenario file (common/
  // fault_scenario.h) passed to every rank as trainer_contract.h's kFlagFaultScenario.
  // Empty, the default: not passed.
  std::string fault_scenario;
  // Samples each GPU rank's GPU while it runs. Not owned; null: GPUs are not sampled.
  GpuSampler* gpu_sampler = nullptr;
  std::map<int, std::string> gpu_uuids;  // GPU index -> UUID, for the GPU samples
  // Put in every report of a GPU rank (RankReport.telemetry_note): why its GPU is not
  // sampled. Empty where it is.
  std::string telemetry_note;
  // Where each rank is recorded from its spawn until it is reaped, so that an agent
  // restarted after a crash kills it. Not owned; null: ranks are not recorded.
  RankRegistry* registry = nullptr;
};

// The command line and environment of one rank (exposed for tests).
struct RankLaunch {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
};
RankLaunch BuildRankLaunch(const benchfleet::v1::Assignment& assignment, size_t index,
                           const std::string& master_addr, int master_port,
                           const RankSupervisorOptions& options);

// Cancel, Done, WaitExited and the accessors are thread-safe; Start and Join are called
// once each, from the owner's thread. `samples` and `reports` are not owned and must
// outlive the supervisor.
class RankSupervisor {
 public:
  RankSupervisor(benchfleet::v1::Assignment assignment, RankSupervisorOptions options,
                 SampleSink* samples, ReportSink* reports);
  // Cancel("agent stopped supervising the job"), then Join().
  ~RankSupervisor();
  RankSupervisor(const RankSupervisor&) = delete;
  RankSupervisor& operator=(const RankSupervisor&) = delete;

  // Picks the rendezvous port if the assignment's master_port is 0, spawns the ranks
  // and reports them STARTED (with master_port where picked here) in one report. Call
  // once. Nothing is returned: a rank that cannot start is reported FAILED and its
  // siblings are cancelled.
  void Start();
  // Terminates every live rank (SIGTERM to its process group, SIGKILL after
  // kill_grace); they are reported CANCELLED with `reason`. Returns at once. Idempotent.
  void Cancel(absl::string_view reason);

  // True once every rank's final report has been handed to the ReportSink.
  bool Done() const;
  // Waits until no rank process is left and all their output has been read, so every
  // sample is in the SampleSink (true), or until `deadline` passes (false).
  bool WaitExited(absl::Time deadline) const;
  // Blocks until Done(), then joins the threads. Needs Start() first, unless never started.
  void Join();

  const std::string& job_id() const { return assignment_.job_id(); }
  int attempt() const { return assignment_.attempt(); }
  // The ticket of the latest report handed to the ReportSink (0 if none).
  uint64_t last_report_ticket() const;
  // MASTER_PORT given to the ranks (0 before Start).
  int master_port() const;
  // The ranks whose processes are alive (spawned and not yet reaped), in order.
  std::vector<int> LiveRanks() const;

 private:
  struct Rank {
    int rank = 0;
    size_t index = 0;  // within the assignment (LOCAL_RANK)
    int device_index = 0;
    bool gpu_sampled = false;  // registered with the GpuSampler (set before threads run)
    std::unique_ptr<Subprocess> process;
    bool exited = false;     // guarded by mu_ (process reaped)
    bool signalled = false;  // guarded by mu_ (we sent SIGTERM/SIGKILL while it ran)
    // Written by the stdout reader; read by the waiter after joining it.
    bool saw_summary = false;
    benchfleet::v1::RankSummary summary;
    int64_t parameters = 0;
    std::map<std::string, std::string> versions;  // from the start event
    std::string precision;                        // in effect, from the start event
    bool simulated = false;                       // the start event's "simulated"
    int64_t nonfinite_losses = 0;                 // iter events with a NaN or infinite loss
    std::string error_message;
    uint64_t last_sample_ticket = 0;
    // Written by the stderr reader; read by the waiter after joining it.
    OutputTail stderr_tail;
    std::thread stdout_reader;
    std::thread stderr_reader;
    std::thread waiter;
  };

  void ReadStdout(Rank* rank);
  void ReadStderr(Rank* rank);
  void Supervise(Rank* rank);
  void Terminator();
  void RequestTerminationLocked(absl::string_view reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t SendReport(benchfleet::v1::ReportStatusRequest report);
  benchfleet::v1::RankReport NewReport(int rank, benchfleet::v1::RankState state,
                                       absl::string_view message = "") const;
  std::string Prefix(const Rank& rank) const;

  const benchfleet::v1::Assignment assignment_;
  const RankSupervisorOptions options_;
  SampleSink* const samples_;
  ReportSink* const reports_;

  std::vector<std::unique_ptr<Rank>> ranks_;  // filled by Start() before any thread runs

  mutable absl::Mutex mu_;
  mutable absl::CondVar cv_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool joined_ ABSL_GUARDED_BY(mu_) = false;
  bool terminate_ ABSL_GUARDED_BY(mu_) = false;
  std::string terminate_reason_ ABSL_GUARDED_BY(mu_);
  int live_ ABSL_GUARDED_BY(mu_) = 0;     // spawned and not yet reaped
  int reading_ ABSL_GUARDED_BY(mu_) = 0;  // spawned and output not yet read to the end
  int pending_ ABSL_GUARDED_BY(mu_) = 0;  // spawned and final report not yet sent
  int master_port_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t last_report_ticket_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread terminator_;
};

}  // namespace bench::agent
