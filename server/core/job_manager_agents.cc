// JobManager's agent-facing half: registration, heartbeats, assignment streams, rank
// reports, sample uploads, lost agents and nodes, and telling ranks to stop.
#include "server/core/job_manager.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "server/core/job_manager_text.h"
#include "server/core/sample_validation.h"
#include "server/results/environment.h"

namespace bench {
namespace {

using manager_text::Count;
using manager_text::Truncate;

}  // namespace

absl::StatusOr<std::string> JobManager::RegisterAgent(AgentInventory inventory) {
  absl::Status valid = bench::Fleet::NormalizeInventory(inventory);
  if (!valid.ok()) return valid;
  absl::MutexLock lock(&mu_);
  if (shut_down_) return absl::UnavailableError("benchd is shutting down");
  fleet_.Register(inventory);
  PublishAgentsAwaited();
  return inventory.name;
}

absl::Status JobManager::UploadsAdmitted() const {
  int awaited = agents_awaited_.load(std::memory_order_relaxed);
  if (awaited == 0) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "benchd restarted and waits for ", awaited, " agent", awaited == 1 ? "" : "s",
      " of its running jobs to reconnect (at most ", absl::FormatDuration(options_.reconcile_grace),
      "); samples are taken after that: keep them and retry"));
}

void JobManager::PublishAgentsAwaited() {
  const int awaited = fleet_.placeholders();
  if (awaited == 0 && agents_awaited_.load(std::memory_order_relaxed) > 0) {
    // Uploads are taken again: the hang clocks, stopped while they were refused
    // (CheckLimits), start again from now.
    const absl::Time now = clock_->Now();
    jobs_.ForEachLive([&](Job& job) {
      mu_.AssertHeld();
      if (job.state != JobState::kRunning) return;
      absl::Time& last_progress = runtime_[job.id].last_progress;
      last_progress = std::max(last_progress, now);
    });
  }
  agents_awaited_.store(awaited, std::memory_order_relaxed);
}

absl::Status JobManager::Heartbeat(const std::string& agent_name,
                                   const std::vector<RunningOnAgent>& running) {
  absl::MutexLock lock(&mu_);
  if (!fleet_.Registered(agent_name)) {
    return absl::NotFoundError(absl::StrCat("agent ", agent_name, " is not registered"));
  }
  fleet_.Touch(agent_name);
  AgentChannel* channel = fleet_.Channel(agent_name);
  // Ranks the controller does not expect there (their job ended or was requeued, or it
  // is unknown) must not keep holding devices: tell the agent to stop them.
  std::set<std::pair<std::string, int>> listed;
  for (const RunningOnAgent& entry : running) {
    Job* job = FindJob(entry.job_id);
    int attempt = entry.attempt > 0 ? entry.attempt : (job != nullptr ? job->attempt : 0);
    listed.insert({entry.job_id, attempt});
    bool expected = job != nullptr && job->state == JobState::kRunning && attempt == job->attempt &&
                    !ingestion_.Fenced(agent_name, job->id, attempt) &&
                    std::any_of(job->placements.begin(), job->placements.end(),
                                [&](const Placement& p) { return p.agent == agent_name; });
    if (expected || channel == nullptr) continue;
    std::string reason = job == nullptr ? "unknown job"
                         : attempt != job->attempt
                             ? absl::StrCat("attempt ", attempt, " is over (the job is on attempt ",
                                            job->attempt, ")")
                             : absl::StrCat("the job is ", JobStateText(job->state),
                                            job->reason.empty() ? "" : ": ", job->reason);
    channel->SendCancel(CancelMessage{entry.job_id, attempt, std::move(reason)});
  }
  // The other way round: devices held for attempts the agent no longer runs. The agent
  // drops an attempt from its list only after its final reports were delivered, so an
  // ended attempt's devices are free; a running job whose acknowledged ranks vanished
  // (the agent restarted within its lease) lost its node. Twice in a row, in case this
  // heartbeat overtook the acknowledgement.
  for (const auto& [job_id, attempt] : fleet_.HeldAttempts(agent_name)) {
    Job* job = FindJob(job_id);
    JobRuntime& runtime = runtime_[job_id];
    if (listed.count({job_id, attempt}) > 0) {
      runtime.missing_from_heartbeat.erase(agent_name);
      continue;
    }
    if (job == nullptr || attempt != job->attempt || job->state != JobState::kRunning) {
      if (job != nullptr && attempt == job->attempt) runtime.running_ranks.erase(agent_name);
      fleet_.Release(agent_name, job_id, attempt);
      continue;
    }
    if (runtime.undelivered.count(agent_name) > 0) continue;  // not acknowledged yet
    if (++runtime.missing_from_heartbeat[agent_name] < 2) continue;
    runtime.running_ranks.erase(agent_name);
    ReleaseAllDevices(*job, agent_name);
    NodeLost(*job, agent_name,
             absl::StrCat("node lost: the ranks on ", agent_name,
                          " vanished (the agent no longer runs them; did it restart?)"));
  }
  Schedule();
  return absl::OkStatus();
}

absl::Status JobManager::AttachChannel(const std::string& agent_name, AgentChannel* channel) {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return absl::UnavailableError("benchd is shutting down");
  absl::Status attached = fleet_.Attach(agent_name, channel);
  if (!attached.ok()) return attached;
  // Re-send what this agent has not acknowledged yet (it ignores duplicates).
  jobs_.ForEachLive([&](const Job& job) {
    mu_.AssertHeld();
    if (job.state != JobState::kRunning) return;
    JobRuntime& runtime = runtime_[job.id];
    if (runtime.undelivered.count(agent_name) == 0) return;
    for (const Placement& placement : job.placements) {
      bool is_master = &placement == &job.placements.front();
      if (placement.agent == agent_name && (is_master || runtime.master_port != 0)) {
        channel->SendAssignment(AssignmentFor(job, placement));
      }
    }
  });
  Schedule();
  return absl::OkStatus();
}

void JobManager::DetachChannel(const std::string& agent_name, AgentChannel* channel) {
  absl::MutexLock lock(&mu_);
  fleet_.Detach(agent_name, channel);
}

void JobManager::ReportStatus(const std::string& agent_name, const std::string& job_id, int attempt,
                              int master_port, const std::vector<RankReport>& ranks,
                              ReportDone done) {
  std::shared_ptr<PersistWait> wait;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    persist_wait_ = &wait;  // Persist leaves its commit's wait here
    status = ReportStatusLocked(agent_name, job_id, attempt, master_port, ranks);
    persist_wait_ = nullptr;
  }
  // The answer is the acknowledgement: what the report changed must be committed first.
  if (!status.ok() || wait == nullptr) {
    done(std::move(status));
    return;
  }
  // A report whose changes could not be stored is to be sent again (UNAVAILABLE), whatever
  // the store's own code (a full disk, a constraint).
  wait->WhenCommitted([done = std::move(done)](absl::Status commit) {
    if (!commit.ok()) {
      commit = absl::UnavailableError(
          absl::StrCat("could not store the status report: ", commit.message()));
    }
    done(std::move(commit));
  });
}

absl::Status JobManager::ReportStatus(const std::string& agent_name, const std::string& job_id,
                                      int attempt, int master_port,
                                      const std::vector<RankReport>& ranks) {
  std::promise<absl::Status> answered;
  std::future<absl::Status> answer = answered.get_future();
  ReportStatus(agent_name, job_id, attempt, master_port, ranks,
               [&answered](absl::Status status) { answered.set_value(std::move(status)); });
  return answer.get();
}

absl::Status JobManager::ReportStatusLocked(const std::string& agent_name,
                                            const std::string& job_id, int attempt, int master_port,
                                            const std::vector<RankReport>& ranks) {
  if (!fleet_.Known(agent_name)) {
    // Typically benchd restarted and the agent has not registered again yet: a report
    // must not be lost, so this is worth retrying.
    return absl::UnavailableError(
        absl::StrCat("agent ", agent_name, " is not registered yet; retry after registering"));
  }
  fleet_.Touch(agent_name);
  Job* job = FindJob(job_id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("no job ", job_id));
  if (attempt != job->attempt || ingestion_.Fenced(agent_name, job_id, attempt)) {
    // A stale attempt (requeued since) or a fenced agent: only its devices matter.
    for (const RankReport& report : ranks) {
      if (report.outcome != RankOutcome::kStarted) {
        fleet_.Release(agent_name, job_id, attempt, report.rank);
      }
    }
    Schedule();
    return absl::OkStatus();
  }
  JobRuntime& runtime = runtime_[job_id];
  runtime.undelivered.erase(agent_name);

  if (master_port > 0 && runtime.master_port == 0 && !job->placements.empty() &&
      job->placements.front().agent == agent_name) {
    runtime.master_port = master_port;
    if (job->state == JobState::kRunning) {
      for (size_t i = 1; i < job->placements.size(); ++i) Dispatch(*job, job->placements[i]);
    }
  }

  bool changed = false;
  std::set<int> reported;  // what a write of `changed` covers (PersistRanks)
  for (const RankReport& report : ranks) {
    if (!RankPlacedOn(*job, agent_name, report.rank)) {
      if (events_ != nullptr) events_->OnRankReportRefused(job_id, kRankNotOnAgent);
      Log("ignored a report from ", agent_name, " for rank ", report.rank, " of ", job_id,
          ", which is not placed there");
      continue;
    }
    reported.insert(report.rank);
    if (report.parameters > 0 && job->parameters != report.parameters) {
      job->parameters = report.parameters;
      changed = true;
    }
    if (!report.telemetry_note.empty()) {
      runtime.telemetry_notes.insert(absl::StrCat(agent_name, ": ", report.telemetry_note));
    }
    auto known = job->rank_versions.find(report.rank);
    if (!report.versions.empty() &&
        (known == job->rank_versions.end() || known->second != report.versions)) {
      job->rank_versions[report.rank] = report.versions;
      changed = true;
    }
    if (report.simulated && !job->simulated) {
      job->simulated = true;  // kept: one simulated rank makes every figure simulated
      changed = true;
      if (events_ != nullptr) events_->OnSimulated(*job);
    }
    if (!report.precision.empty()) {
      auto [it, added] = job->rank_precisions.try_emplace(report.rank, report.precision);
      if (added || it->second != report.precision) {
        it->second = report.precision;
        changed = true;
        if (std::string mismatch = MergePrecision(*job).mismatch; !mismatch.empty()) {
          Log(job_id, ": rank ", report.rank, " runs at ", report.precision, " (", mismatch, ")");
        }
      }
    }
    if (report.outcome == RankOutcome::kStarted) continue;
    if (events_ != nullptr) events_->OnRankEnded(*job, report.rank);
    runtime.running_ranks[agent_name].erase(report.rank);
    if (report.outcome == RankOutcome::kSucceeded) {
      runtime.succeeded_ranks.insert(report.rank);
      if (report.summary) {
        auto fastest = runtime.fastest_step_by_rank.find(report.rank);
        std::optional<std::string_view> rejected = SummaryRejection(
            *report.summary, job->spec,
            fastest == runtime.fastest_step_by_rank.end() ? std::nullopt
                                                          : std::optional<double>(fastest->second));
        if (rejected) {
          // The rank finished, but its figures are not believable: the job gets no
          // throughput from it rather than a forged one.
          if (events_ != nullptr) events_->OnRankReportRefused(job_id, *rejected);
          Log("refused the summary of rank ", report.rank, " of ", job_id, " from ", agent_name,
              " (", std::string(*rejected), "): ", report.summary->measured_images, " images in ",
              report.summary->window_s, " s, median step ", report.summary->step_time_median_s,
              " s");
        } else {
          job->summaries[report.rank] = *report.summary;
        }
      }
      changed = true;
    } else if (report.outcome == RankOutcome::kFailed && job->state == JobState::kRunning &&
               absl::StartsWith(report.message, kAgentRestartedPrefix)) {
      // The agent died and came back: its node failed, not the trainer.
      ReleaseAllDevices(*job, agent_name);
      runtime.running_ranks.erase(agent_name);
      NodeLost(
          *job, agent_name,
          absl::StrCat("node lost: rank ", report.rank, " on ", agent_name, ": ", report.message));
      changed = false;
    } else if (report.outcome == RankOutcome::kFailed && job->state == JobState::kRunning &&
               absl::StartsWith(report.message, kLossDivergedPrefix)) {
      // The trainer ended the run itself: the outcome is the divergence, not a crash.
      EndRunningJob(
          *job, JobState::kFailed,
          absl::StrCat(kLossDivergedPrefix, " rank ", report.rank, " on ", agent_name, ": ",
                       absl::StripLeadingAsciiWhitespace(
                           absl::StripPrefix(report.message, kLossDivergedPrefix)),
                       " (", runtime.nonfinite_losses, " non-finite losses stored so far)"));
      changed = false;
    } else if (report.outcome == RankOutcome::kFailed && job->state == JobState::kRunning) {
      std::string reason =
          absl::StrCat("rank ", report.rank, " on ", agent_name, " failed (", report.message, ")");
      if (!report.stderr_tail.empty()) {
        absl::StrAppend(&reason, "; stderr tail:\n", Truncate(report.stderr_tail, 2000));
      }
      EndRunningJob(*job, JobState::kFailed, std::move(reason));
      changed = false;  // EndRunningJob persisted and notified
    }
  }
  MaybeReleaseDevices(*job, agent_name);
  if (job->state == JobState::kRunning &&
      static_cast<int>(runtime.succeeded_ranks.size()) == job->spec.devices) {
    Transition(*job, JobState::kSucceeded,
               absl::StrCat("all ", job->spec.devices, " ranks finished"));
  } else if (changed) {
    PersistRanks(*job, reported);
    Notify(*job);
  }
  Schedule();
  return absl::OkStatus();
}

void JobManager::LogLossHealth(const Job& job) {
  const JobRuntime& runtime = runtime_[job.id];
  int64_t skipped = 0;
  for (const auto& [rank, summary] : job.summaries) skipped += summary.skipped_steps;
  if (runtime.nonfinite_losses == 0 && skipped == 0) return;
  Log(job.id, " attempt ", job.attempt, ": ", runtime.nonfinite_losses,
      " non-finite losses stored, ", skipped, " skipped (overflowed) steps in ",
      job.summaries.size(), " of ", job.spec.devices, " rank summaries");
}

void JobManager::EndRunningJob(Job& job, JobState state, std::string reason) {
  Transition(job, state, std::move(reason));
  StopRanks(job);
}

void JobManager::NodeLost(Job& job, const std::string& agent, std::string reason) {
  ingestion_.Fence(agent, job.id, job.attempt);
  if (options_.external_allocation) {
    // Its allocation decides: the allocator says how it ended (UpdateAllocation), or
    // CheckLimits fails the job after allocation_grace.
    JobRuntime& runtime = runtime_[job.id];
    if (runtime.node_left.empty()) {
      runtime.node_left = std::move(reason);
      runtime.node_left_at = clock_->Now();
    }
    StopRanks(job);
    return;
  }
  if (job.requeues >= options_.max_requeues) {
    if (options_.max_requeues > 0) {
      absl::StrAppend(&reason, "; not requeued again (", Count(job.requeues, "requeue"),
                      " already, --requeue_on_node_lost=", options_.max_requeues, ")");
    }
    EndRunningJob(job, JobState::kFailed, std::move(reason));
    return;
  }
  job.requeues += 1;
  absl::StrAppend(&reason, "; requeued (", job.requeues, " of ", options_.max_requeues, ")");
  StopRanks(job);
  JobRuntime& runtime = runtime_[job.id];
  runtime.iterations_by_rank.clear();
  runtime.fastest_step_by_rank.clear();
  runtime.samples_stored = 0;
  runtime.nonfinite_losses = 0;
  Transition(job, JobState::kQueued, std::move(reason));
}

void JobManager::StopRanks(Job& job) {
  JobRuntime& runtime = runtime_[job.id];
  for (size_t i = 0; i < job.placements.size(); ++i) {
    const std::string& agent_name = job.placements[i].agent;
    std::set<int>& ranks = runtime.running_ranks[agent_name];
    if (ranks.empty()) continue;
    bool sent = i == 0 || runtime.master_port != 0 || runtime.all_dispatched;
    if (!sent) {
      // Its assignment was still waiting for the rendezvous port: nothing runs there.
      ranks.clear();
      ReleaseAllDevices(job, agent_name);
      continue;
    }
    if (AgentChannel* channel = fleet_.Channel(agent_name)) {
      channel->SendCancel(CancelMessage{job.id, job.attempt, job.reason});
    }
  }
}

void JobManager::MaybeReleaseDevices(Job& job, const std::string& agent_name) {
  JobRuntime& runtime = runtime_[job.id];
  auto it = runtime.running_ranks.find(agent_name);
  if (it != runtime.running_ranks.end() && !it->second.empty()) return;
  ReleaseAllDevices(job, agent_name);
}

void JobManager::ReleaseAllDevices(Job& job, const std::string& agent_name) {
  fleet_.Release(agent_name, job.id, job.attempt);
}

void JobManager::UploadSamples(const std::string& agent_name, std::vector<IterationSample> samples,
                               std::vector<GpuSample> gpu_samples, UploadDone done) {
  std::vector<IterationSample> known;
  std::vector<GpuSample> known_gpu;
  int64_t rejected_count = 0;
  {
    absl::MutexLock lock(&mu_);
    fleet_.Touch(agent_name);
    ScreenedSamples screened = ingestion_.Screen(
        agent_name, fleet_.Inventory(agent_name),
        [this](const std::string& job_id) -> const Job* {
          mu_.AssertHeld();  // Screen calls it before it returns
          return FindJob(job_id);
        },
        std::move(samples), std::move(gpu_samples));
    for (const IterationSample& sample : screened.iterations) {
      if (sample.warmup || sample.step_time_s <= 0) continue;
      auto [fastest, added] =
          runtime_[sample.job_id].fastest_step_by_rank.try_emplace(sample.rank, sample.step_time_s);
      if (!added) fastest->second = std::min(fastest->second, sample.step_time_s);
    }
    if (events_ != nullptr) events_->OnSamplesScreened(agent_name, screened);
    known = std::move(screened.iterations);
    known_gpu = std::move(screened.gpu_samples);
    rejected_count = screened.rejected_count();
  }
  if (known.empty() && known_gpu.empty()) {
    AppendResult nothing;
    nothing.rejected = static_cast<int>(rejected_count);
    done(nothing);
    return;
  }
  int64_t received = static_cast<int64_t>(known.size() + known_gpu.size());
  store_->AppendSamples(
      std::move(known), std::move(known_gpu),
      [this, received, rejected_count,
       done = std::move(done)](absl::StatusOr<AppendResult> result) {
        if (result.ok()) result->rejected = static_cast<int>(rejected_count);
        if (events_ != nullptr) {
          if (result.ok()) {
            events_->OnSamplesStored(result->stored, result->gpu_stored,
                                     result->duplicates + result->gpu_duplicates);
          } else {
            events_->OnSamplesNotStored(received);
          }
        }
        if (result.ok()) {
          absl::MutexLock lock(&mu_);
          std::set<std::string> touched;
          for (const auto& [key, stored] : result->stored_by_rank) {
            const auto& [job_id, attempt, rank] = key;
            Job* job = FindJob(job_id);
            if (job == nullptr || job->attempt != attempt) continue;
            JobRuntime& runtime = runtime_[job_id];
            runtime.iterations_by_rank[rank] += stored;  // distinct stored iterations
            runtime.samples_stored += stored;
            if (stored > 0) runtime.last_progress = clock_->Now();
            auto nonfinite = result->nonfinite_by_rank.find(key);
            if (nonfinite != result->nonfinite_by_rank.end()) {
              if (runtime.nonfinite_losses == 0) {
                Log(job_id, ": rank ", rank, " reported a non-finite loss (attempt ", attempt,
                    "); such iterations are stored and counted");
              }
              runtime.nonfinite_losses += nonfinite->second;
            }
            touched.insert(job_id);
          }
          for (const std::string& id : touched) Notify(*FindJob(id));
        }
        done(std::move(result));
      });
}

std::vector<AgentView> JobManager::ListAgents() {
  absl::MutexLock lock(&mu_);
  return fleet_.Views();
}

bool JobManager::AgentLive(const std::string& name) {
  absl::MutexLock lock(&mu_);
  return fleet_.Registered(name);
}

void JobManager::CheckAgents(SteadyTime now) {
  absl::MutexLock lock(&mu_);
  int lost =
      fleet_.ExpireLeases(now, options_.agent_lease, [&](const bench::Fleet::LostAgent& agent) {
        const std::string& name = agent.name;
        std::string why =
            agent.was_placeholder
                ? absl::StrCat("node lost: agent ", name, " did not reconnect within ",
                               absl::FormatDuration(options_.reconcile_grace),
                               " of benchd's restart")
                : absl::StrCat("node lost: agent ", name, " not heard from for ",
                               absl::FormatDuration(options_.agent_lease));
        Log("agent ", name, " lost: ", why);
        AgentLost(agent, why);
      });
  PublishAgentsAwaited();
  // Nothing else frees or adds capacity with time alone: events (reports, heartbeats,
  // registrations, submits) schedule for themselves.
  if (lost > 0) Schedule();
}

void JobManager::AgentLost(const bench::Fleet::LostAgent& agent, const std::string& why) {
  std::set<std::string> lost_jobs;
  for (const auto& [job_id, attempt] : agent.held) {
    Job* job = FindJob(job_id);
    if (job == nullptr || attempt != job->attempt) continue;
    runtime_[job_id].running_ranks.erase(agent.name);
    if (job->state == JobState::kRunning) lost_jobs.insert(job_id);
  }
  // Ranks the agent stopped itself (reported CANCELLED as it shut down) freed their
  // devices already, but their job cannot finish without them.
  jobs_.ForEachLive([&](const Job& job) {
    mu_.AssertHeld();
    if (job.state != JobState::kRunning) return;
    const std::set<int>& succeeded = runtime_[job.id].succeeded_ranks;
    for (const Placement& placement : job.placements) {
      if (placement.agent != agent.name) continue;
      for (int rank : placement.ranks) {
        if (succeeded.count(rank) == 0) lost_jobs.insert(job.id);
      }
    }
  });
  for (const std::string& job_id : lost_jobs) {
    Job* job = FindJob(job_id);
    if (job != nullptr && job->state == JobState::kRunning) NodeLost(*job, agent.name, why);
  }
}

absl::Status JobManager::Deregister(const std::string& agent_name, const std::string& reason,
                                    const std::string& instance_id) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<bench::Fleet::LostAgent> agent = fleet_.Remove(agent_name, instance_id);
  if (!agent.ok()) return agent.status();
  std::string why = absl::StrCat("node left: agent ", agent_name, " stopped",
                                 reason.empty() ? "" : " (", Truncate(reason, 200),
                                 reason.empty() ? "" : ")");
  Log("agent ", agent_name, " deregistered: ", why);
  AgentLost(*agent, why);
  Schedule();
  return absl::OkStatus();
}

}  // namespace bench
