#include "server/slurm/slurm_allocator.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/log.h"
#include "common/run_command.h"
#include "common/subprocess.h"

namespace bench {
namespace {

constexpr char kSystem[] = "slurm";

// A word for /bin/sh, single-quoted.
std::string ShellQuote(std::string_view word) {
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

// The Slurm job name of `job_id`: the database's id in it, so that a benchd on another
// database never takes the job for its own.
std::string SlurmJobName(const std::string& controller_id, const std::string& job_id) {
  return absl::StrCat("benchfleet-", controller_id.substr(0, 8), "-", job_id);
}

std::string FirstLine(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  return std::string(absl::StripAsciiWhitespace(absl::string_view(line.data(), line.size())));
}

}  // namespace

SlurmShape SlurmShapeOf(const JobSpec& spec) {
  SlurmShape shape;
  if (spec.nodes > 0) {
    shape.nodes = spec.nodes;
    shape.devices_per_node =
        spec.devices_per_node > 0 ? spec.devices_per_node : spec.devices / spec.nodes;
  } else {
    shape.devices_per_node = spec.devices_per_node > 0 ? spec.devices_per_node : spec.devices;
    shape.nodes = (spec.devices + shape.devices_per_node - 1) / shape.devices_per_node;
  }
  shape.nodes = std::max(shape.nodes, 1);
  shape.devices_per_node = std::max(shape.devices_per_node, 1);
  return shape;
}

std::string SlurmTimeLimit(absl::Duration limit) {
  int64_t minutes = absl::ToInt64Minutes(absl::Ceil(limit, absl::Minutes(1)));
  return absl::StrCat(std::max<int64_t>(minutes, 1));
}

std::string SlurmJoinTokenDescription(const std::string& job_name) {
  return absl::StrCat("slurm allocation ", job_name);
}

std::string SlurmBatchScript(const SlurmOptions& options, const AllocationRequest& request,
                             const std::string& join_token) {
  const SlurmShape shape = SlurmShapeOf(request.spec);
  std::string script = absl::StrCat(
      "#!/bin/sh\n",
      "# Written by benchd for ", request.job_id,
      ": one bench-agent per node, for this job only\n"
      "# (docs/deploy-slurm.md, \"Slurm allocates\"). Slurm's SIGTERM at scancel or the time\n"
      "# limit stops the agents, which stop their ranks, report them and deregister.\n",
      "#SBATCH --job-name=", request.job_name, "\n");
  if (!options.partition.empty()) absl::StrAppend(&script, "#SBATCH --partition=", options.partition, "\n");
  absl::StrAppend(&script, "#SBATCH --nodes=", shape.nodes, "\n",
                  "#SBATCH --ntasks-per-node=1\n");
  if (options.cpu_nodes) {
    absl::StrAppend(&script, "#SBATCH --cpus-per-task=", shape.devices_per_node, "\n");
  } else {
    absl::StrAppend(&script, "#SBATCH --gpus-per-node=", shape.devices_per_node, "\n");
  }
  absl::StrAppend(&script, "#SBATCH --exclusive\n",
                  "#SBATCH --time=", SlurmTimeLimit(request.wall_time + options.time_margin),
                  "\n", "#SBATCH --output=", options.script_dir, "/", request.job_id,
                  "-slurm-%j.out\n");
  // Each node's agent is named after its Slurm node (as its certificate, with security
  // on), from the step's own environment; its instance id tells it apart from the agent
  // of the next allocation on that node.
  std::vector<std::string> agent = options.agent_command;
  for (const std::string& arg :
       {std::string("--controller"), options.controller,
        absl::StrCat("--label=", kAllocationLabel, "=", request.job_id)}) {
    agent.push_back(arg);
  }
  if (options.cpu_nodes) {
    agent.push_back("--cpu-slots");
    agent.push_back(absl::StrCat(shape.devices_per_node));
  }
  std::vector<std::string> quoted;
  for (const std::string& word : agent) quoted.push_back(ShellQuote(word));
  if (!options.agent_cert_dir.empty()) {
    absl::StrAppend(&script, "export BENCH_AGENT_CERT_DIR=", ShellQuote(options.agent_cert_dir),
                    "\n");
  } else if (!join_token.empty()) {
    // Each node's agent bootstraps its own key with this allocation's join token (revoked
    // when the allocation ends). It travels in the environment (this script is 0600, and
    // Slurm shows a job's script and environment only to its owner and Slurm's admins),
    // becomes a 0600 file of each task's own, and leaves the environment before the agent
    // starts: never on a command line.
    absl::StrAppend(&script, "BENCH_JOIN_TOKEN=", ShellQuote(join_token),
                    "\nexport BENCH_JOIN_TOKEN\n",
                    "exec srun --kill-on-bad-exit=0 /bin/sh -c 'umask 077 && "
                    "f=$(mktemp \"${TMPDIR:-/tmp}/bench-join-token.XXXXXX\") && "
                    "printf \"%s\\n\" \"$BENCH_JOIN_TOKEN\" > \"$f\" && unset BENCH_JOIN_TOKEN && "
                    "exec \"$@\" --name \"$SLURMD_NODENAME\" --label \"slurm_job=$SLURM_JOB_ID\" "
                    "--join-token-file \"$f\"' sh ",
                    absl::StrJoin(quoted, " "), "\n");
    return script;
  }
  absl::StrAppend(&script,
                  "exec srun --kill-on-bad-exit=0 /bin/sh -c 'exec \"$@\" "
                  "--name \"$SLURMD_NODENAME\" --label \"slurm_job=$SLURM_JOB_ID\" "
                  "${BENCH_AGENT_CERT_DIR:+--tls-cert \"$BENCH_AGENT_CERT_DIR/$SLURMD_NODENAME.pem\" "
                  "--tls-key \"$BENCH_AGENT_CERT_DIR/$SLURMD_NODENAME.key\"}' sh ",
                  absl::StrJoin(quoted, " "), "\n");
  return script;
}

std::map<std::string, SlurmJob> ParseScontrolJobs(std::string_view text) {
  std::map<std::string, SlurmJob> jobs;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    std::string id;
    SlurmJob job;
    std::set<std::string> seen;
    for (absl::string_view field : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      size_t eq = field.find('=');
      if (eq == absl::string_view::npos) continue;
      std::string key(field.substr(0, eq));
      std::string value(field.substr(eq + 1));
      if (!seen.insert(key).second) continue;  // the first of a repeated key
      if (key == "JobId") id = value;
      if (key == "JobName") job.name = value;
      if (key == "JobState") job.state = value;
      if (key == "Reason") job.reason = value == "None" ? "" : value;
      if (key == "NodeList") job.nodes = value == "(null)" ? "" : value;
    }
    if (!id.empty() && !job.state.empty()) jobs[id] = std::move(job);
  }
  return jobs;
}

bool SlurmStateEnded(std::string_view state) {
  static const std::set<std::string_view> kEnded = {
      "BOOT_FAIL", "CANCELLED",     "COMPLETED", "DEADLINE", "FAILED",
      "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT"};
  return kEnded.count(state) > 0;
}

SlurmAllocator::SlurmAllocator(JobManager* manager, SlurmOptions options, JoinTokens* join_tokens)
    : manager_(manager), join_tokens_(join_tokens), options_(std::move(options)) {}

bool SlurmAllocator::UsesJoinTokens() const {
  return join_tokens_ != nullptr && options_.agent_cert_dir.empty();
}

void SlurmAllocator::RevokeJoinTokens(const std::string& job_id) {
  if (!UsesJoinTokens()) return;
  const std::string description =
      SlurmJoinTokenDescription(SlurmJobName(manager_->controller_id(), job_id));
  absl::StatusOr<std::vector<JoinTokenRecord>> tokens = join_tokens_->List();
  if (!tokens.ok()) {
    Log("slurm: ", job_id, ": cannot list join tokens to revoke: ", tokens.status().message());
    return;
  }
  for (const JoinTokenRecord& token : *tokens) {
    if (token.revoked || token.description != description) continue;
    absl::Status revoked = join_tokens_->Revoke(token.id);
    if (revoked.ok()) {
      Log("slurm: ", job_id, ": revoked its allocation's join token ", token.id, " (", token.used,
          " of ", token.uses, " used)");
    } else {
      Log("slurm: ", job_id, ": cannot revoke join token ", token.id, ": ", revoked.message());
    }
  }
}

SlurmAllocator::~SlurmAllocator() { Stop(); }

absl::Status SlurmAllocator::Start() {
  std::error_code error;
  std::filesystem::create_directories(options_.script_dir, error);
  if (error) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--slurm-script-dir: cannot create ", options_.script_dir, ": ", error.message()));
  }
  thread_ = std::thread([this] {
    do {
      PollOnce();
    } while (!stop_.WaitForNotificationWithTimeout(options_.poll_interval));
  });
  return absl::OkStatus();
}

void SlurmAllocator::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void SlurmAllocator::PollOnce() {
  AllocationWork work = manager_->PendingAllocationWork();
  if (work.to_allocate.empty() && work.to_poll.empty() && work.to_release.empty()) return;
  absl::StatusOr<std::map<std::string, SlurmJob>> jobs = ReadJobs();
  if (!jobs.ok()) {
    // Slurm's controller may be restarting: the next poll tries again.
    if (absl::Now() - last_error_log_ > absl::Minutes(1)) {
      Log("slurm: ", jobs.status().message());
      last_error_log_ = absl::Now();
    }
    return;
  }
  std::map<std::string, std::string> live_by_name;  // a benchd that stopped after sbatch
  for (const auto& [id, job] : *jobs) {
    if (!SlurmStateEnded(job.state)) live_by_name[job.name] = id;
  }
  for (AllocationRequest& request : work.to_allocate) {
    request.job_name = SlurmJobName(manager_->controller_id(), request.job_id);
    auto adopted = live_by_name.find(request.job_name);
    if (adopted != live_by_name.end()) {
      const SlurmJob& job = jobs->at(adopted->second);
      Log("slurm: ", request.job_id, " takes up Slurm job ", adopted->second, " submitted before");
      manager_->UpdateAllocation(request.job_id, {kSystem, adopted->second, job.state, job.reason,
                                                  job.nodes, false})
          .IgnoreError();
      continue;
    }
    Submit(request);
  }
  auto seen = [&](const Allocation& allocation) {
    Allocation now = allocation;
    auto it = jobs->find(allocation.id);
    if (it == jobs->end()) {
      now.state = "UNKNOWN";
      now.reason = "no longer listed by scontrol";
      now.ended = true;
    } else {
      now.state = it->second.state;
      now.reason = it->second.reason;
      if (!it->second.nodes.empty()) now.nodes = it->second.nodes;
      now.ended = SlurmStateEnded(now.state);
    }
    return now;
  };
  for (const auto& [job_id, allocation] : work.to_poll) {
    Allocation now = seen(allocation);
    manager_->UpdateAllocation(job_id, now).IgnoreError();
    if (now.ended) RevokeJoinTokens(job_id);
  }
  for (const auto& [job_id, allocation] : work.to_release) {
    Allocation now = seen(allocation);
    if (now.ended) {
      manager_->UpdateAllocation(job_id, now).IgnoreError();
      RevokeJoinTokens(job_id);
    } else {
      Release(job_id, now);
    }
  }
}

void SlurmAllocator::Submit(const AllocationRequest& request) {
  const std::string path = absl::StrCat(options_.script_dir, "/", request.job_id, ".sbatch");
  std::string join_token;
  if (UsesJoinTokens()) {
    // One use per node; alive while the job may wait in Slurm's queue and run.
    absl::StatusOr<JoinTokens::Created> created =
        join_tokens_->Create(SlurmShapeOf(request.spec).nodes,
                             request.wall_time + options_.time_margin + options_.join_token_margin,
                             false, SlurmJoinTokenDescription(request.job_name), absl::Now());
    if (!created.ok()) {
      Log("slurm: ", request.job_id, ": cannot make a join token: ", created.status().message(),
          "; trying again");
      return;
    }
    join_token = created->token;
  }
  // A failure below leaves no live token behind: the next round makes a new one.
  auto give_up = [&] {
    if (!join_token.empty()) RevokeJoinTokens(request.job_id);
  };
  {
    // 0600: with a join token the script holds it.
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || fchmod(fd, 0600) != 0) {
      Log("slurm: ", request.job_id, ": cannot write ", path, ": ", std::strerror(errno));
      if (fd >= 0) close(fd);
      give_up();
      return;
    }
    close(fd);
    std::ofstream out(path, std::ios::trunc);
    out << SlurmBatchScript(options_, request, join_token);
    if (!out.flush()) {
      Log("slurm: ", request.job_id, ": cannot write ", path, ": ", std::strerror(errno));
      give_up();
      return;
    }
  }
  absl::StatusOr<CommandOutput> sbatch =
      RunCommand({"sbatch", "--parsable", path}, options_.command_timeout);
  if (!sbatch.ok()) {
    Log("slurm: ", request.job_id, ": ", sbatch.status().message(), "; trying again");
    give_up();
    return;
  }
  if (sbatch->exit_code != 0) {
    std::string why = FirstLine(sbatch->stderr_text);
    // slurmctld answered and said no (no such partition, a shape no node has, ...): the
    // job cannot run. Anything else (slurmctld unreachable) is tried again.
    if (absl::StrContains(sbatch->stderr_text, "Batch job submission failed")) {
      manager_->AllocationRefused(request.job_id, absl::StrCat("sbatch refused it: ", why))
          .IgnoreError();
    } else {
      Log("slurm: ", request.job_id, ": sbatch failed (", DescribeExit(sbatch->exit_code),
          "): ", why, "; trying again");
    }
    give_up();
    return;
  }
  // --parsable: "ID" or "ID;CLUSTER".
  std::string id = FirstLine(sbatch->stdout_text);
  id = id.substr(0, id.find(';'));
  if (id.empty() || !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    // It may have been submitted: the next round takes it up by name, token and all.
    Log("slurm: ", request.job_id, ": sbatch printed no job id: ", FirstLine(sbatch->stdout_text));
    return;
  }
  manager_->UpdateAllocation(request.job_id, {kSystem, id, "PENDING", "", "", false})
      .IgnoreError();
}

absl::StatusOr<std::map<std::string, SlurmJob>> SlurmAllocator::ReadJobs() {
  absl::StatusOr<CommandOutput> scontrol =
      RunCommand({"scontrol", "--oneliner", "show", "job"}, options_.command_timeout);
  if (!scontrol.ok()) return scontrol.status();
  if (scontrol->exit_code != 0) {
    return absl::UnavailableError(absl::StrCat("scontrol show job failed (",
                                               DescribeExit(scontrol->exit_code),
                                               "): ", FirstLine(scontrol->stderr_text)));
  }
  return ParseScontrolJobs(scontrol->stdout_text);
}

void SlurmAllocator::Release(const std::string& job_id, const Allocation& allocation) {
  absl::StatusOr<CommandOutput> scancel =
      RunCommand({"scancel", allocation.id}, options_.command_timeout);
  if (!scancel.ok() || scancel->exit_code != 0) {
    Log("slurm: ", job_id, ": scancel ", allocation.id, " failed: ",
        scancel.ok() ? FirstLine(scancel->stderr_text) : std::string(scancel.status().message()),
        "; trying again");
    return;
  }
  Log("slurm: ", job_id, " ended: cancelled Slurm job ", allocation.id);
}

}  // namespace bench
