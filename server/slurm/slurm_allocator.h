// benchd's Slurm adapter (benchd --slurm-partition; docs/deploy-slurm.md, "Slurm allocates"):
// each job waiting for an allocation becomes a Slurm job — a batch script whose one
// step starts a bench-agent on every node, labelled bench_job=<job id> so that only
// this job runs there — and Slurm's queue, not benchd's, decides when it runs. Every
// poll reads Slurm's view of those jobs (`scontrol show job`) into
// JobManager::UpdateAllocation (state, reason, node list; an allocation that ended
// fails its job with Slurm's reason), and scancels the allocation of a job that ended
// (benchctl cancel included). It runs Slurm's own commands: sbatch, scontrol and
// scancel on benchd's PATH find the cluster as any Slurm client does (SLURM_CONF).
// With a JoinTokens (benchd --agent-signing-cert) and no agent_cert_dir, each allocation
// gets its own join token (uses: its node count; expiry: its Slurm time limit plus
// join_token_margin; revoked once the allocation ends) in the batch script's environment,
// so that each node's agent makes its own key and gets its certificate from benchd
// (docs/security.md): no node's key is readable by another.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/auth/join_tokens.h"
#include "server/core/job_manager.h"

namespace bench {

struct SlurmOptions {
  std::string partition;  // sbatch --partition
  // The agent's command on the nodes, split on spaces, with any flags of its own (TLS,
  // --bench-train); benchd adds --controller, --name, --label and, on CPU nodes,
  // --cpu-slots.
  std::vector<std::string> agent_command = {"bench-agent"};
  std::string controller;  // HOST:PORT the agents dial (benchd's gRPC address)
  // With security on: each node's agent presents DIR/<Slurm node>.pem and .key (as
  // deploy/pki/make-client-cert.sh agent <node> makes them); "" for none (then, with join
  // tokens, each agent bootstraps its own key).
  std::string agent_cert_dir;
  // A join token's life beyond the allocation's --time: how long the job may wait in
  // Slurm's queue before its agents enrol. The token is revoked when the allocation ends.
  absl::Duration join_token_margin = absl::Hours(24);
  // The nodes have no GPUs: ask Slurm for CPUs and let the agents offer CPU slots.
  // Otherwise each node is asked for its GPUs (--gpus-per-node) and agents find them.
  bool cpu_nodes = false;
  std::string script_dir;  // batch scripts and Slurm's output of them (created)
  absl::Duration poll_interval = absl::Seconds(2);
  // Slurm's --time is the job's wall-time limit plus this (agents start, the rendezvous).
  absl::Duration time_margin = absl::Minutes(5);
  absl::Duration command_timeout = absl::Seconds(30);  // one sbatch/scontrol/scancel
};

// Slurm's view of one job (`scontrol show job`).
struct SlurmJob {
  std::string name;    // JobName
  std::string state;   // JobState: PENDING, RUNNING, COMPLETING, TIMEOUT, ...
  std::string reason;  // Reason, "" for None
  std::string nodes;   // NodeList, "" for (null)
};

// The node count and devices per node a job asks Slurm for: its --nodes and
// --gpus-per-node when set, else one node with all its devices.
struct SlurmShape {
  int nodes = 1;
  int devices_per_node = 1;
};
SlurmShape SlurmShapeOf(const JobSpec& spec);
// Slurm's --time for `limit` (whole minutes, rounded up; at least 1).
std::string SlurmTimeLimit(absl::Duration limit);
// The batch script sbatch runs for `request`. With `join_token` (and no agent_cert_dir)
// the script exports it as BENCH_JOIN_TOKEN and each node's step writes it to a 0600 file
// of its own (mktemp), drops it from the environment and starts the agent with
// --join-token-file: the token is never on a command line.
std::string SlurmBatchScript(const SlurmOptions& options, const AllocationRequest& request,
                             const std::string& join_token = "");
// The description of the join token benchd makes for the allocation of the Slurm job named
// `job_name` (benchd finds the token by it to revoke it, after a restart too).
std::string SlurmJoinTokenDescription(const std::string& job_name);
// `scontrol show job --oneliner` (every job, one a line) by Slurm job id.
std::map<std::string, SlurmJob> ParseScontrolJobs(std::string_view text);
// A state after which the job holds no nodes (COMPLETED, CANCELLED, TIMEOUT, NODE_FAIL,
// FAILED, ...); PENDING, RUNNING, COMPLETING, SUSPENDED, ... are not.
bool SlurmStateEnded(std::string_view state);

class SlurmAllocator {
 public:
  // `manager` and `join_tokens` not owned; must outlive Stop(). `join_tokens` may be null
  // (no join tokens: agents use agent_cert_dir, or no certificate).
  SlurmAllocator(JobManager* manager, SlurmOptions options, JoinTokens* join_tokens = nullptr);
  ~SlurmAllocator();  // Stop()
  SlurmAllocator(const SlurmAllocator&) = delete;
  SlurmAllocator& operator=(const SlurmAllocator&) = delete;

  // Creates script_dir and starts polling. Errors name the directory.
  absl::Status Start();
  // Stops polling (allocations are left as they are: a restarted benchd takes them up).
  void Stop();
  // One round: submits the jobs waiting for an allocation, reads Slurm's states of the
  // live ones, scancels those of ended jobs. The poll thread's body.
  void PollOnce();

 private:
  void Submit(const AllocationRequest& request);
  absl::StatusOr<std::map<std::string, SlurmJob>> ReadJobs();
  void Release(const std::string& job_id, const Allocation& allocation);
  // Revokes the join tokens made for `job_id`'s allocation that are not yet revoked.
  void RevokeJoinTokens(const std::string& job_id);
  bool UsesJoinTokens() const;

  JobManager* const manager_;
  JoinTokens* const join_tokens_;
  const SlurmOptions options_;
  absl::Notification stop_;
  std::thread thread_;
  absl::Time last_error_log_ = absl::InfinitePast();
};

}  // namespace bench
