// The node agent: registers this node's inventory with the controller, heartbeats,
// holds the StreamAssignments stream and runs each assignment with a RankSupervisor.
//
// Threads: the stream thread (Register, then StreamAssignments; on any end or failure
// it backs off 100 ms doubling to 2 s, re-registers and re-opens the stream), the
// heartbeat thread (started after the first registration), plus those of the
// SampleUploader, the StatusReporter, the GpuSampler (on a GPU node), each
// RankSupervisor, and with a join token the CertificateRenewer's.
//
// Certificate (AgentOptions::join_token_file): Start first makes sure the state directory
// holds a usable certificate for the node, bootstrapping one with the token if not
// (cert_bootstrap.h; a refused token fails Start), then dials with it and renews it in the
// background (cert_renewer.h).
//
// State (AgentOptions::state_dir, see state_dir.h): unacknowledged samples and status
// reports are spooled on disk and replayed on the next start; live ranks are recorded,
// and on start the ranks a previous agent left running are killed and reported FAILED
// (LeftoverRankMessage). Without a state_dir (tests) samples and reports queue in
// memory only and ranks are not recorded.
//
// Controller database: the uploader and the reporter are held (nothing is sent, spooled
// or new) until the agent has registered; at every registration the stream thread
// compares RegisterResponse.controller_id with the id the queued records were meant for
// (DIR/controller_id, or the previous registration's). A different, non-empty id means
// benchd's database was wiped or replaced (job ids restart): what is queued or spooled
// is discarded (logged with both ids and the counts), the new id is recorded, and only
// then is sending resumed. An empty id (an older benchd) keeps the queue as it is.
// Assignments still running from the old database are cancelled and fenced: what their
// ranks produce afterwards is dropped (FencedSinks), they leave the heartbeats, and the
// new database may assign the same (job, attempt) ids again.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "benchfleet/v1/agent.pb.h"
#include "worker/agent/cert_bootstrap.h"
#include "worker/agent/cert_renewer.h"
#include "worker/agent/controller_client.h"
#include "worker/agent/gpu_sampler.h"
#include "worker/agent/nvml_inventory.h"
#include "worker/agent/rank_registry.h"
#include "worker/agent/rank_supervisor.h"
#include "worker/agent/retry.h"
#include "worker/agent/sample_uploader.h"
#include "worker/agent/sinks.h"
#include "worker/agent/spool.h"
#include "worker/agent/state_dir.h"
#include "worker/agent/status_reporter.h"

namespace bench::agent {

struct AgentOptions {
  std::string controller;                   // HOST:PORT of benchd
  // TLS to benchd with this node's certificate (--tls-ca/--tls-cert/--tls-key; the
  // certificate names the node, so `name` must match it); empty: plain.
  ClientCredentialOptions credentials;
  // --join-token-file (cert_bootstrap.h): with credentials.tls_ca and no certificate of its
  // own, the agent uses STATE_DIR/agent.pem and agent.key, bootstrapped with this token when
  // missing or expired, and renews them (cert_renewer.h). Needs state_dir.
  std::string join_token_file;
  // How long Start keeps retrying a bootstrap that fails transiently (benchd away).
  absl::Duration bootstrap_retry_for = absl::Minutes(5);
  std::string name;                         // empty: the host name
  int cpu_slots = 0;                        // > 0: offer CPU slots, no GPU
  std::string address;                      // empty: DefaultAdvertisedAddress(controller)
  std::string bench_train = "bench-train";  // the trainer program
  std::string nvml_library = kDefaultNvmlLibrary;
  // NVML readings per second of each GPU that runs a rank; 0: no GPU sampling.
  double gpu_sample_hz = 10;
  // Test mode: offer NVML's GPUs but run their ranks on the CPU (RankSupervisorOptions).
  bool gpu_ranks_on_cpu = false;
  // Tests and demonstrations only: a fault scenario passed to every rank's trainer
  // (RankSupervisorOptions::fault_scenario). Empty, the default: none.
  std::string fault_scenario;
  absl::Duration kill_grace = absl::Seconds(5);
  // On Shutdown: how long to wait for samples and reports to reach the controller.
  absl::Duration shutdown_flush_timeout = absl::Seconds(5);
  // Labels of this node (--label KEY=VALUE), put in the inventory.
  std::map<std::string, std::string> labels;
  // The folders real-data jobs may read (--data-root, repeatable; data_path.h); empty:
  // this agent runs synthetic-data jobs only.
  std::vector<std::string> data_roots;
  // Where the spools and the rank records live (created if missing); empty: none.
  std::string state_dir;
  // The bound of the sample spool (bytes of its files); the report spool has its own,
  // kReportSpoolMaxBytes.
  uint64_t spool_max_bytes = uint64_t{1} << 30;
};

inline constexpr uint64_t kReportSpoolMaxBytes = uint64_t{64} << 20;

// The message of the FAILED report of a rank that a previous agent left running:
// "bench-agent restarted while this rank ran; it was killed (pid N)".
std::string LeftoverRankMessage(int pid);

// The telemetry note of every GPU rank of an agent run with --gpu-ranks-on-cpu.
inline constexpr char kGpuRanksOnCpuNote[] =
    "ranks ran on the CPU (--gpu-ranks-on-cpu, a test mode): the GPU readings are of GPUs "
    "that did not run them";

// The trainer next to this executable (/proc/self/exe's directory) if it exists and is
// executable, else "bench-train" (looked up on PATH).
std::string DefaultBenchTrainPath();

// Start() and Shutdown() are called from one thread (main); everything else is internal.
class Agent {
 public:
  explicit Agent(AgentOptions options);
  ~Agent();  // Shutdown()
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Builds the inventory and starts the threads; returns at once. An unreachable
  // controller is not an error: the stream thread keeps trying (and logs).
  absl::Status Start();
  // Stops the stream and heartbeats, terminates every rank (SIGTERM, SIGKILL after the
  // grace period), waits until no rank process is left, reports the ranks (bounded by
  // shutdown_flush_timeout), deregisters from the controller with `reason` (e.g.
  // "SIGTERM") and joins all threads. Idempotent.
  void Shutdown(const std::string& reason = "");

 private:
  using JobKey = std::pair<std::string, int>;  // (job id, attempt)

  // The bootstrap's and the renewer's options, from options_ and the inventory's name.
  BootstrapOptions BootstrapOptionsFor() const;
  void StreamLoop();
  // The next re-registration delay: `backoff`'s, capped at the heartbeat interval.
  absl::Duration RetryDelay(Backoff& backoff);
  void HeartbeatLoop();
  void OnEvent(const benchfleet::v1::AssignmentEvent& event);
  void OnAssign(const benchfleet::v1::Assignment& assignment);
  void OnCancel(const benchfleet::v1::CancelAssignment& cancel);
  // Joins and forgets supervisors whose reports are all delivered.
  void ReapFinished();
  // Tells the controller this agent leaves (after its ranks were stopped and reported).
  void Deregister(const std::string& reason);
  // Reports FAILED (through reporter_) the ranks a previous agent left running.
  void ReportLeftovers(const std::vector<LeftoverRank>& leftovers);
  // After a registration whose response carries `controller_id`: discards what is
  // queued if it was meant for another database, records the id. Stream thread only.
  void AdoptControllerId(const std::string& controller_id);
  // Fills the heartbeat's running_jobs and running from the supervisors.
  void FillRunning(benchfleet::v1::HeartbeatRequest* request);
  // Sleeps up to `duration`; false if the agent is stopping.
  bool SleepUnlessStopping(absl::Duration duration);

  AgentOptions options_;
  benchfleet::v1::AgentInventory inventory_;
  int cpu_threads_ = 1;
  std::unique_ptr<ControllerClient> client_;
  std::unique_ptr<CertificateRenewer> renewer_;  // with a join token only; uses client_
  std::unique_ptr<StateDirLock> state_lock_;
  std::unique_ptr<Spool> sample_spool_;  // before the uploader and reporter that use them
  std::unique_ptr<Spool> report_spool_;
  std::unique_ptr<RankRegistry> registry_;
  std::unique_ptr<SampleUploader> uploader_;
  std::unique_ptr<StatusReporter> reporter_;
  GpuTelemetrySession telemetry_;  // after uploader_: its sampler feeds it
  std::map<int, std::string> gpu_uuids_;
  // The database id the queued records are meant for ("" unknown): read from the state
  // directory by Start(), then only touched by the stream thread.
  std::string controller_id_;

  absl::Mutex mu_;
  absl::CondVar cv_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::string agent_name_ ABSL_GUARDED_BY(mu_);  // as the controller knows us
  absl::Duration heartbeat_interval_ ABSL_GUARDED_BY(mu_) = absl::Seconds(1);
  // One per controller database seen; the last is the current one's. Kept (they are
  // small), and declared before the supervisors, so that none outlives its sinks.
  std::vector<std::unique_ptr<FencedSinks>> sinks_ ABSL_GUARDED_BY(mu_);
  std::map<JobKey, std::unique_ptr<RankSupervisor>> supervisors_ ABSL_GUARDED_BY(mu_);
  // Supervisors of a previous controller database (cancelled and fenced), until done.
  std::vector<std::unique_ptr<RankSupervisor>> retired_ ABSL_GUARDED_BY(mu_);
  // Jobs run to the end here (the latest kMaxFinished), so that a re-sent assignment
  // is not run twice.
  std::set<JobKey> finished_ ABSL_GUARDED_BY(mu_);
  std::deque<JobKey> finished_order_ ABSL_GUARDED_BY(mu_);
  std::thread stream_thread_;
  std::thread heartbeat_thread_;
};

}  // namespace bench::agent
