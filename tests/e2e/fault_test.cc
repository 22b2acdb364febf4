// Fault tolerance end to end ("Fleet scheduling and fault tolerance"): real benchd,
// bench-agent, bench-train and benchctl processes on loopback, a real SQLite file. Each
// test builds its own cluster, injects one fault (kill -9 an agent or benchd, SIGSTOP an
// agent past its lease, a crashing rank, a full or read-only disk, a storm of submits,
// a wide job) and asserts on what benchctl prints (--format json, parsed into the API's
// messages) and on the SQLite file, read-only. Every wait polls a condition with a
// deadline.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchfleet/v1/agent.grpc.pb.h"
#include "benchfleet/v1/controller.grpc.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/e2e/cluster.h"

namespace bench::testing {
namespace {

namespace v1 = ::benchfleet::v1;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The lease the fault tests give agents (benchd --agent-lease; these tests use the old
// underscore spellings, which benchd keeps as aliases) and their heartbeat.
constexpr absl::Duration kLease = absl::Seconds(3);
const std::vector<std::string> kShortLease = {"--agent_lease=3s", "--heartbeat_interval=500ms"};
// How late benchd may notice an expired lease (it checks periodically) on a loaded machine.
constexpr absl::Duration kLeaseSlack = absl::Milliseconds(1500);

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

// Polls `done` until it holds (true) or `timeout` passes (false).
bool WaitUntil(absl::Duration timeout, const std::function<bool()>& done,
               absl::Duration period = absl::Milliseconds(100)) {
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (done()) return true;
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(period);
  }
}

std::string FirstLine(const std::string& text) {
  return std::string(absl::StripAsciiWhitespace(
      std::vector<std::string>(absl::StrSplit(text, '\n')).front()));
}

const char* StateName(v1::JobState state) { return v1::JobState_Name(state).c_str(); }

// What a user sees of one job: `benchctl status ID --format json`, parsed.
std::optional<v1::JobStatus> JobOf(LoopbackCluster& cluster, const std::string& job_id) {
  CommandResult result = cluster.Benchctl({"status", job_id, "--format", "json"}, 30);
  if (result.exit_code != 0) return std::nullopt;
  v1::JobStatus job;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(result.stdout_text, &job, options).ok()) {
    return std::nullopt;
  }
  return job;
}

// `benchctl agents --format json`, parsed.
std::optional<v1::ListAgentsResponse> AgentsOf(LoopbackCluster& cluster) {
  CommandResult result = cluster.Benchctl({"agents", "--format", "json"}, 30);
  if (result.exit_code != 0) return std::nullopt;
  v1::ListAgentsResponse agents;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(
           absl::StrCat("{\"agents\":", result.stdout_text, "}"), &agents, options)
           .ok()) {
    return std::nullopt;
  }
  return agents;
}

std::optional<v1::AgentStatus> AgentNamed(LoopbackCluster& cluster, const std::string& name) {
  std::optional<v1::ListAgentsResponse> agents = AgentsOf(cluster);
  if (!agents) return std::nullopt;
  for (const v1::AgentStatus& agent : agents->agents()) {
    if (agent.inventory().name() == name) return agent;
  }
  return std::nullopt;
}

bool IsTerminal(v1::JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

std::string HistoryText(const v1::JobStatus& job) {
  std::string text;
  for (const v1::StateTransition& t : job.history()) {
    absl::StrAppend(&text, "  ", t.time_unix_ms(), " ", StateName(t.state()), ": ", t.reason(),
                    "\n");
  }
  return text;
}

// A tiny CPU job: resnet18 at 32 px, batch 2 (at 32 px its last feature map is 1x1, and
// batch norm in training needs more than one value per channel: batch 1 cannot train).
std::vector<std::string> TinyJob(int ranks, int iterations) {
  return {"submit",  "--gpus", absl::StrCat(ranks), "--model", "resnet18", "--bs", "2",
          "--iters", absl::StrCat(iterations), "--warmup", "1", "--image-size", "32"};
}

class FaultTest : public ::testing::Test {
 protected:
  // Every agent keeps its state (the sample spool) in a directory of its own under the
  // cluster's temp dir (LoopbackCluster's default).
  void SetUp() override { cluster_ = std::make_unique<LoopbackCluster>(); }

  // benchd's log and every agent's, for failure messages.
  std::string Logs() {
    std::string text = absl::StrCat("\n--- benchd.log:\n", cluster_->Log("benchd.log"));
    for (const std::string& name : agent_names_) {
      absl::StrAppend(&text, "\n--- agent-", name, ".log:\n",
                      cluster_->Log(absl::StrCat("agent-", name, ".log")));
    }
    return text;
  }

  absl::Status StartAgent(const std::string& name, int slots,
                          const std::vector<std::pair<std::string, std::string>>& env = {},
                          const std::vector<std::string>& extra_args = {}) {
    agent_names_.push_back(name);
    return cluster_->StartAgent(name, slots, extra_args, env);
  }

  // Submits (benchctl, no --wait); the job id, or "" with the output in `output`.
  std::string Submit(const std::vector<std::string>& args, std::string* output = nullptr) {
    CommandResult result = cluster_->Benchctl(args, 60);
    if (output != nullptr) *output = result.output;
    std::string id = result.exit_code == 0 ? FirstLine(result.stdout_text) : "";
    return absl::StartsWith(id, "job-") ? id : "";
  }

  // Polls the job until `done` holds for it; the last status seen (if any) in `last`.
  bool WaitForJob(const std::string& job_id, absl::Duration timeout,
                  const std::function<bool(const v1::JobStatus&)>& done, v1::JobStatus* last,
                  absl::Duration period = absl::Milliseconds(100)) {
    return WaitUntil(
        timeout,
        [&] {
          std::optional<v1::JobStatus> job = JobOf(*cluster_, job_id);
          if (!job) return false;
          *last = *job;
          return done(*job);
        },
        period);
  }

  // Starts benchd with `benchd_flags` and two agents, node-a and node-b, of `ranks` CPU
  // slots whose ranks sleep `step_sleep_ms` in every step (so that a job is surely mid-way
  // when the test strikes); submits a `ranks`-rank job of `iterations` and waits until it
  // runs with at least `min_done` iterations done. Returns its id and leaves its status
  // in `job`; "" after a failure it has reported.
  std::string StartJobOnTwoSlowAgents(const std::vector<std::string>& benchd_flags, int ranks,
                                      int iterations, int step_sleep_ms, int min_done,
                                      v1::JobStatus* job) {
    if (!cluster_->StartBenchd(benchd_flags).ok()) {
      ADD_FAILURE() << "benchd did not start" << Logs();
      return "";
    }
    const std::vector<std::pair<std::string, std::string>> slow = {
        {"BENCH_TRAIN_TEST_STEP_SLEEP_MS", std::to_string(step_sleep_ms)}};
    for (const char* name : {"node-a", "node-b"}) {
      if (absl::Status started = StartAgent(name, ranks, slow); !started.ok()) {
        ADD_FAILURE() << name << ": " << started << Logs();
        return "";
      }
    }
    if (!cluster_->WaitForAgents(2).ok()) {
      ADD_FAILURE() << "the agents did not register" << Logs();
      return "";
    }
    std::string output;
    std::string job_id = Submit(TinyJob(ranks, iterations), &output);
    if (job_id.empty()) {
      ADD_FAILURE() << "submit failed: " << output;
      return "";
    }
    if (!WaitForJob(job_id, absl::Seconds(120),
                    [min_done](const v1::JobStatus& j) {
                      return j.state() == v1::JOB_STATE_RUNNING && j.iterations_done() >= min_done;
                    },
                    job)) {
      ADD_FAILURE() << "the job never ran " << min_done << " iterations:\n"
                    << job->DebugString() << Logs();
      return "";
    }
    return job_id;
  }

  // Rows of `samples` for (job, attempt), optionally of one rank.
  int64_t Samples(const std::string& job_id, int attempt, int rank = -1) {
    return QueryInt(cluster_->db_path(),
                    absl::StrCat("SELECT count(*) FROM samples WHERE job_id='", job_id,
                                 "' AND attempt=", attempt,
                                 rank < 0 ? "" : absl::StrCat(" AND rank=", rank)));
  }

  // Every (rank, iteration) 1..iterations of the attempt is stored exactly once.
  void ExpectEveryIterationOnce(const std::string& job_id, int attempt, int ranks,
                                int iterations) {
    const std::string& db = cluster_->db_path();
    std::string where = absl::StrCat(" FROM samples WHERE job_id='", job_id, "' AND attempt=",
                                     attempt);
    EXPECT_EQ(QueryInt(db, "SELECT count(*)" + where), ranks * iterations);
    EXPECT_EQ(QueryInt(db, "SELECT count(DISTINCT rank)" + where), ranks);
    for (int rank = 0; rank < ranks; ++rank) {
      std::string of_rank = absl::StrCat(where, " AND rank=", rank);
      EXPECT_EQ(QueryInt(db, "SELECT count(*)" + of_rank), iterations) << "rank " << rank;
      EXPECT_EQ(QueryInt(db, "SELECT count(DISTINCT iteration)" + of_rank), iterations)
          << "rank " << rank;
      EXPECT_EQ(QueryInt(db, "SELECT min(iteration)" + of_rank), 1) << "rank " << rank;
      EXPECT_EQ(QueryInt(db, "SELECT max(iteration)" + of_rank), iterations) << "rank " << rank;
    }
  }

  std::unique_ptr<LoopbackCluster> cluster_;
  std::vector<std::string> agent_names_;
};

// The time of the job's first transition to `state` whose reason starts with `prefix`;
// 0 if none.
int64_t TransitionTime(const v1::JobStatus& job, v1::JobState state,
                       const std::string& prefix = "") {
  for (const v1::StateTransition& t : job.history()) {
    if (t.state() == state && absl::StartsWith(t.reason(), prefix)) return t.time_unix_ms();
  }
  return 0;
}

int CountTransitions(const v1::JobStatus& job, v1::JobState state, const std::string& prefix) {
  int n = 0;
  for (const v1::StateTransition& t : job.history()) {
    if (t.state() == state && absl::StartsWith(t.reason(), prefix)) ++n;
  }
  return n;
}

// --- 1. kill -9 an agent mid-job --------------------------------------------------------

TEST_F(FaultTest, AgentKilledMidJobIsRequeuedOnceAndSucceedsOnTheOtherAgent) {
  constexpr int kRanks = 2, kIters = 20;
  v1::JobStatus job;
  const std::string job_id = StartJobOnTwoSlowAgents(kShortLease, kRanks, kIters,
                                                     /*step_sleep_ms=*/200, /*min_done=*/2, &job);
  ASSERT_FALSE(job_id.empty());
  ASSERT_EQ(job.attempt(), 1);
  ASSERT_EQ(job.placements_size(), 1) << "a 2-rank job fits one 2-slot agent";
  const std::string victim = job.placements(0).agent();
  const std::string survivor = victim == "node-a" ? "node-b" : "node-a";

  int64_t killed_ms = NowMs();
  EXPECT_EQ(cluster_->KillAgent(victim), -SIGKILL);

  // Requeued (QUEUED "node lost ...") within the lease, then placed again as attempt 2.
  ASSERT_TRUE(WaitForJob(job_id, absl::Seconds(30),
                         [](const v1::JobStatus& j) {
                           return j.attempt() >= 2 || IsTerminal(j.state());
                         },
                         &job))
      << "the job never left attempt 1 after its agent was killed:\n"
      << job.DebugString() << Logs();
  int64_t requeued_ms = TransitionTime(job, v1::JOB_STATE_QUEUED, "node lost");
  ASSERT_GT(requeued_ms, 0) << "no QUEUED \"node lost\" transition:\n"
                            << HistoryText(job) << Logs();
  EXPECT_LE(requeued_ms - killed_ms, absl::ToInt64Milliseconds(kLease + kLeaseSlack))
      << HistoryText(job);

  ASSERT_TRUE(WaitForJob(job_id, absl::Seconds(180),
                         [](const v1::JobStatus& j) { return IsTerminal(j.state()); }, &job))
      << job.DebugString() << Logs();
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << HistoryText(job) << Logs();
  EXPECT_EQ(job.attempt(), 2);
  EXPECT_EQ(job.requeues(), 1);
  EXPECT_EQ(CountTransitions(job, v1::JOB_STATE_QUEUED, "node lost"), 1) << HistoryText(job);
  EXPECT_EQ(CountTransitions(job, v1::JOB_STATE_FAILED, ""), 0) << HistoryText(job);
  ASSERT_EQ(job.placements_size(), 1);
  EXPECT_EQ(job.placements(0).agent(), survivor);

  const std::string& db = cluster_->db_path();
  ExpectEveryIterationOnce(job_id, 2, kRanks, kIters);
  EXPECT_EQ(QueryInt(db, absl::StrCat("SELECT attempt FROM jobs WHERE id='", job_id, "'")), 2);
  EXPECT_EQ(QueryInt(db, absl::StrCat("SELECT count(*) FROM job_ranks WHERE job_id='", job_id,
                                      "' AND attempt=2 AND agent='", survivor, "'")),
            kRanks);
  EXPECT_EQ(QueryInt(db, absl::StrCat("SELECT count(*) FROM jobs WHERE id='", job_id,
                                      "' AND state='SUCCEEDED'")),
            1);
}

// scancel, systemctl stop, a deleted pod: SIGTERM. The agent stops its ranks, reports them
// and deregisters, so its job is requeued at once, not when a (long) lease runs out.
TEST_F(FaultTest, AgentStoppedWithSigtermMidJobLeavesAtOnceAndTheJobIsRequeued) {
  constexpr int kRanks = 2, kIters = 20;
  const std::vector<std::string> long_lease = {"--agent_lease=60s", "--heartbeat_interval=500ms"};
  v1::JobStatus job;
  const std::string job_id = StartJobOnTwoSlowAgents(long_lease, kRanks, kIters,
                                                     /*step_sleep_ms=*/200, /*min_done=*/2, &job);
  ASSERT_FALSE(job_id.empty());
  ASSERT_EQ(job.placements_size(), 1) << "a 2-rank job fits one 2-slot agent";
  const std::string victim = job.placements(0).agent();
  const std::string survivor = victim == "node-a" ? "node-b" : "node-a";

  int64_t stopped_ms = NowMs();
  cluster_->SignalAgent(victim, SIGTERM);
  ASSERT_TRUE(WaitForJob(job_id, absl::Seconds(30),
                         [](const v1::JobStatus& j) {
                           return j.attempt() >= 2 || IsTerminal(j.state());
                         },
                         &job))
      << job.DebugString() << Logs();
  int64_t requeued_ms = TransitionTime(job, v1::JOB_STATE_QUEUED, "node left");
  ASSERT_GT(requeued_ms, 0) << HistoryText(job) << Logs();
  EXPECT_LE(requeued_ms - stopped_ms, 10000) << "the lease is 60 s: " << HistoryText(job);
  EXPECT_EQ(cluster_->KillAgent(victim), 0) << "bench-agent exits 0 after SIGTERM";
  CommandResult agents = cluster_->Benchctl({"agents"});
  EXPECT_THAT(agents.stdout_text, ::testing::Not(HasSubstr(victim))) << agents.output;

  ASSERT_TRUE(WaitForJob(job_id, absl::Seconds(180),
                         [](const v1::JobStatus& j) { return IsTerminal(j.state()); }, &job))
      << job.DebugString() << Logs();
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << HistoryText(job) << Logs();
  ASSERT_EQ(job.placements_size(), 1);
  EXPECT_EQ(job.placements(0).agent(), survivor);
  ExpectEveryIterationOnce(job_id, 2, kRanks, kIters);
}

// --- 2. kill -9 benchd ten times mid-job -------------------------------------------------

// A second benchd given the first one's database (on other ports) would recover and
// schedule the same jobs: it is refused, naming the first, which serves on; once the
// first is killed with -9, a benchd on that database starts.
TEST_F(FaultTest, ASecondBenchdOnTheSameDatabaseIsRefusedAndTheFirstServesOn) {
  ASSERT_TRUE(cluster_->StartBenchd().ok()) << Logs();
  absl::StatusOr<CommandOutput> refused = cluster_->RunSecondBenchd();
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_NE(refused->exit_code, 0);
  EXPECT_THAT(refused->stderr_text,
              HasSubstr(absl::StrCat("--db ", cluster_->db_path(), ": another benchd (pid ",
                                     cluster_->benchd_pid(), ") has this database open")));
  EXPECT_EQ(cluster_->Benchctl({"list"}, 60).exit_code, 0) << Logs();
  EXPECT_TRUE(cluster_->BenchdAlive());

  EXPECT_EQ(cluster_->KillBenchd(), -SIGKILL);
  ASSERT_TRUE(cluster_->StartBenchd().ok()) << Logs();
}

TEST_F(FaultTest, BenchdKilledTenTimesMidJobStillEndsWithEveryIterationOnce) {
  constexpr int kRanks = 2, kIters = 200, kKills = 10;
  // ~0.25 s a step: 200 steps outlast ten kill-and-restart rounds.
  v1::JobStatus job;
  const std::string job_id = StartJobOnTwoSlowAgents(kShortLease, kRanks, kIters,
                                                     /*step_sleep_ms=*/250, /*min_done=*/1, &job);
  ASSERT_FALSE(job_id.empty());

  for (int kill = 1; kill <= kKills; ++kill) {
    EXPECT_EQ(cluster_->KillBenchd(), -SIGKILL) << "kill " << kill;
    ASSERT_TRUE(cluster_->StartBenchd().ok()) << "restart " << kill << Logs();
    // The restarted benchd still calls the job RUNNING (reconciled with the agents'
    // heartbeats); both agents come back and the ranks keep streaming: samples beyond
    // those the restarted benchd found stored arrive before the next kill.
    std::optional<v1::JobStatus> recovered = JobOf(*cluster_, job_id);
    ASSERT_TRUE(recovered.has_value()) << Logs();
    ASSERT_EQ(recovered->state(), v1::JOB_STATE_RUNNING) << HistoryText(*recovered) << Logs();
    ASSERT_TRUE(cluster_->WaitForAgents(2, 30).ok()) << "after kill " << kill << Logs();
    ASSERT_TRUE(WaitForJob(job_id, absl::Seconds(30),
                           [&](const v1::JobStatus& j) {
                             return IsTerminal(j.state()) || j.attempt() != 1 ||
                                    j.samples_stored() > recovered->samples_stored();
                           },
                           &job))
        << "after kill " << kill << ": " << job.DebugString() << Logs();
    ASSERT_EQ(job.attempt(), 1) << "a benchd restart must not requeue the job:\n"
                                << HistoryText(job) << Logs();
    ASSERT_EQ(job.state(), v1::JOB_STATE_RUNNING)
        << "the job ended before the " << kill << "th kill (make it longer?):\n"
        << HistoryText(job) << Logs();
  }

  ASSERT_TRUE(WaitForJob(job_id, absl::Seconds(240),
                         [](const v1::JobStatus& j) { return IsTerminal(j.state()); }, &job))
      << job.DebugString() << Logs();
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << HistoryText(job) << Logs();
  EXPECT_EQ(job.attempt(), 1);
  EXPECT_EQ(job.requeues(), 0);
  EXPECT_EQ(job.samples_stored(), kRanks * kIters);
  ExpectEveryIterationOnce(job_id, job.attempt(), kRanks, kIters);
  EXPECT_EQ(QueryInt(cluster_->db_path(),
                     absl::StrCat("SELECT count(*) FROM samples WHERE job_id='", job_id, "'")),
            kRanks * kIters)
      << "rows of other attempts";
}

// --- 3. SIGSTOP an agent past its lease, then SIGCONT ------------------------------------

// RunUntilLeaseExpires runs a 2-rank job on one of two agents, stops that agent
// (SIGSTOP; its ranks keep training into the pipe) until benchd gives it up, then
// continues it (SIGCONT) and waits until it is back and its stale ranks are gone. It
// leaves the stopped agent's name in stopped_, the attempt-1 rows stored when benchd
// gave the agent up in rows_at_expiry_, and the job as benchd reacted in job_.
class FaultStoppedAgentTest : public FaultTest {
 protected:
  static constexpr int kRanks = 2, kIters = 30;

  void RunUntilLeaseExpires(const std::vector<std::string>& benchd_flags,
                            v1::JobState expected_after_expiry) {
    job_id_ = StartJobOnTwoSlowAgents(benchd_flags, kRanks, kIters, /*step_sleep_ms=*/250,
                                      /*min_done=*/2, &job_);
    ASSERT_FALSE(job_id_.empty());
    ASSERT_EQ(job_.placements_size(), 1);
    stopped_ = job_.placements(0).agent();
    other_ = stopped_ == "node-a" ? "node-b" : "node-a";

    int64_t stopped_ms = NowMs();
    cluster_->SignalAgent(stopped_, SIGSTOP);
    ASSERT_TRUE(WaitForJob(job_id_, absl::Seconds(30),
                           [&](const v1::JobStatus& j) {
                             return j.attempt() >= 2 || IsTerminal(j.state());
                           },
                           &job_))
        << "benchd did not give up the stopped agent:\n"
        << job_.DebugString() << Logs();
    // While the agent is stopped nothing of its can arrive: these are the rows stored
    // before its lease expired.
    rows_at_expiry_ = Samples(job_id_, 1);
    int64_t gave_up_ms = TransitionTime(job_, expected_after_expiry, "node lost");
    ASSERT_GT(gave_up_ms, 0) << "no " << StateName(expected_after_expiry)
                             << " \"node lost\" transition:\n"
                             << HistoryText(job_) << Logs();
    EXPECT_LE(gave_up_ms - stopped_ms, absl::ToInt64Milliseconds(kLease + kLeaseSlack))
        << HistoryText(job_);
    EXPECT_GT(rows_at_expiry_, 0);

    cluster_->SignalAgent(stopped_, SIGCONT);
    // The continued agent finds benchd again and its stale ranks go away (cancelled, or
    // they ran out): by then it has read their whole output and tried to deliver it.
    ASSERT_TRUE(WaitUntil(absl::Seconds(60), [&] {
      std::optional<v1::AgentStatus> agent = AgentNamed(*cluster_, stopped_);
      return agent && agent->connected() && cluster_->AgentChildren(stopped_).empty();
    })) << "the continued agent did not reconnect and drop its stale ranks"
        << Logs();
  }

  // The stale attempt's rows must not grow after SIGCONT: watched over four heartbeats
  // after the agent's ranks are gone (a negative can only be watched for a while).
  void ExpectNoStaleRows() {
    absl::Time until = absl::Now() + absl::Seconds(2);
    while (absl::Now() < until) {
      ASSERT_EQ(Samples(job_id_, 1), rows_at_expiry_)
          << "samples of the stale attempt were stored after the agent came back" << Logs();
      absl::SleepFor(absl::Milliseconds(200));
    }
    EXPECT_EQ(QueryInt(cluster_->db_path(),
                       absl::StrCat("SELECT count(*) FROM samples WHERE job_id='", job_id_,
                                    "' AND attempt=1")),
              rows_at_expiry_);
  }

  std::string job_id_;
  v1::JobStatus job_;
  std::string stopped_, other_;
  int64_t rows_at_expiry_ = -1;
};

TEST_F(FaultStoppedAgentTest, AgentStoppedPastItsLeaseIsRequeuedAndItsStaleSamplesFencedOff) {
  RunUntilLeaseExpires(kShortLease, v1::JOB_STATE_QUEUED);
  if (HasFatalFailure()) return;
  ASSERT_TRUE(WaitForJob(job_id_, absl::Seconds(180),
                         [](const v1::JobStatus& j) { return IsTerminal(j.state()); }, &job_))
      << job_.DebugString() << Logs();
  EXPECT_EQ(job_.state(), v1::JOB_STATE_SUCCEEDED) << HistoryText(job_) << Logs();
  EXPECT_EQ(job_.attempt(), 2);
  EXPECT_EQ(job_.requeues(), 1);
  ASSERT_EQ(job_.placements_size(), 1);
  EXPECT_EQ(job_.placements(0).agent(), other_);
  ExpectEveryIterationOnce(job_id_, 2, kRanks, kIters);
  ExpectNoStaleRows();
}

TEST_F(FaultStoppedAgentTest, AgentStoppedPastItsLeaseFailsTheJobWithoutRequeueAndIsFencedOff) {
  std::vector<std::string> flags = kShortLease;
  flags.push_back("--requeue_on_node_lost=0");
  RunUntilLeaseExpires(flags, v1::JOB_STATE_FAILED);
  if (HasFatalFailure()) return;
  EXPECT_EQ(job_.state(), v1::JOB_STATE_FAILED) << HistoryText(job_);
  EXPECT_THAT(job_.reason(), StartsWith("node lost"));
  EXPECT_EQ(job_.attempt(), 1);
  EXPECT_EQ(job_.requeues(), 0);
  ExpectNoStaleRows();
  // It stays failed: the late ranks' reports do not revive it.
  std::optional<v1::JobStatus> after = JobOf(*cluster_, job_id_);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->state(), v1::JOB_STATE_FAILED) << HistoryText(*after);
  EXPECT_EQ(after->samples_stored(), rows_at_expiry_);
}

// --- 4. a crashing rank ------------------------------------------------------------------

TEST_F(FaultTest, CrashingRankFailsItsJobWithinASecondWithExitStatusAndStderrAndFreesDevices) {
  // A trainer wrapper: for the job with --iters 13, rank 1 writes a recognizable line to
  // stderr, records when it exits and exits 3; everything else is the real trainer.
  const std::string crash_file = cluster_->dir() + "/crash-exit-ms";
  const std::string wrapper = cluster_->dir() + "/crashing-trainer.sh";
  {
    std::ofstream script(wrapper);
    script << "#!/bin/sh\n"
           << "case \" $* \" in\n"
           << "  *\" --iters 13 \"*)\n"
           << "    if [ \"$RANK\" = 1 ]; then\n"
           << "      sleep 1\n"
           << "      echo \"fault-test: rank $RANK gives up on purpose\" >&2\n"
           << "      date +%s%3N > '" << crash_file << "'\n"
           << "      exit 3\n"
           << "    fi ;;\n"
           << "esac\n"
           << "exec '" << BENCH_TRAIN_PATH << "' \"$@\"\n";
  }
  ASSERT_EQ(chmod(wrapper.c_str(), 0755), 0);
  ASSERT_TRUE(cluster_->StartBenchd().ok()) << Logs();
  ASSERT_TRUE(StartAgent("node-a", 2, {}, {"--bench-train", wrapper}).ok());
  ASSERT_TRUE(cluster_->WaitForAgents(1).ok()) << Logs();

  std::string output;
  std::string job_id = Submit(TinyJob(2, 13), &output);
  ASSERT_FALSE(job_id.empty()) << output;
  v1::JobStatus job;
  ASSERT_TRUE(WaitForJob(job_id, absl::Seconds(60),
                         [](const v1::JobStatus& j) { return IsTerminal(j.state()); }, &job))
      << job.DebugString() << Logs();
  ASSERT_EQ(job.state(), v1::JOB_STATE_FAILED) << HistoryText(job) << Logs();
  EXPECT_THAT(job.reason(), HasSubstr("rank 1"));
  EXPECT_THAT(job.reason(), HasSubstr("exit code 3"));
  EXPECT_THAT(job.reason(), HasSubstr("fault-test: rank 1 gives up on purpose"));

  std::ifstream in(crash_file);
  int64_t exit_ms = 0;
  in >> exit_ms;
  ASSERT_GT(exit_ms, 0) << "the wrapper did not record its exit";
  int64_t failed_ms = TransitionTime(job, v1::JOB_STATE_FAILED);
  RecordProperty("rank_exit_to_failed_ms", static_cast<int>(failed_ms - exit_ms));
  EXPECT_GE(failed_ms, exit_ms) << HistoryText(job);
  EXPECT_LT(failed_ms - exit_ms, 1000) << "from the rank's exit to FAILED:\n" << HistoryText(job);

  // The devices come back, and the next job is placed on them and runs.
  std::optional<v1::AgentStatus> agent;
  EXPECT_TRUE(WaitUntil(absl::Seconds(30), [&] {
    agent = AgentNamed(*cluster_, "node-a");
    return agent && agent->devices_busy() == 0;
  })) << (agent ? agent->DebugString() : "no agent listing");
  std::string next_id = Submit(TinyJob(2, 3), &output);
  ASSERT_FALSE(next_id.empty()) << output;
  v1::JobStatus next;
  ASSERT_TRUE(WaitForJob(next_id, absl::Seconds(120),
                         [](const v1::JobStatus& j) { return IsTerminal(j.state()); }, &next))
      << next.DebugString() << Logs();
  EXPECT_EQ(next.state(), v1::JOB_STATE_SUCCEEDED) << HistoryText(next) << Logs();
  ASSERT_EQ(next.placements_size(), 1);
  EXPECT_EQ(next.placements(0).agent(), "node-a");
  EXPECT_THAT(std::vector<int>(next.placements(0).device_indices().begin(),
                               next.placements(0).device_indices().end()),
              ::testing::UnorderedElementsAre(0, 1));
}

// --- 5. a full or read-only disk under the database --------------------------------------

// Registers an agent through the agent API without running it: the fleet is big enough
// for submits to be accepted, and nothing is ever placed (it holds no stream).
absl::Status RegisterIdleAgent(const std::string& server, const std::string& name, int slots) {
  auto stub = v1::AgentService::NewStub(
      grpc::CreateChannel(server, grpc::InsecureChannelCredentials()));
  v1::RegisterRequest request;
  request.mutable_inventory()->set_name(name);
  request.mutable_inventory()->set_hostname(name);
  request.mutable_inventory()->set_address("127.0.0.1");
  request.mutable_inventory()->set_cpu_slots(slots);
  v1::RegisterResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status status = stub->Register(&context, request, &response);
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrCat("Register: ", status.error_message()));
  }
  return absl::OkStatus();
}

v1::JobSpec TinySpec(const std::string& request_id = "") {
  v1::JobSpec spec;
  spec.set_model("resnet18");
  spec.set_devices(1);
  spec.set_precision(v1::PRECISION_FP32);
  spec.set_batch_size(2);
  spec.set_iterations(3);
  spec.set_warmup_iterations(1);
  spec.set_image_size(32);
  spec.set_request_id(request_id);
  return spec;
}

// A tmpfs of its own, unmounted (lazily, in case something still holds it) on destruction.
class Tmpfs {
 public:
  explicit Tmpfs(size_t bytes) {
    char pattern[] = "/tmp/benchfleet_fault_disk_XXXXXX";
    path_ = mkdtemp(pattern);
    options_ = absl::StrCat("size=", bytes);
    if (mount("tmpfs", path_.c_str(), "tmpfs", 0, options_.c_str()) != 0) {
      error_ = absl::StrCat("mount -t tmpfs -o ", options_, " ", path_, ": ", strerror(errno),
                            " (this test needs root, or CAP_SYS_ADMIN, to mount a small disk)");
    } else {
      mounted_ = true;
    }
  }
  ~Tmpfs() {
    if (mounted_) umount2(path_.c_str(), MNT_DETACH);
    rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }  // empty once mounted
  // mount -o remount,ro / remount,rw; "" or the errno text.
  std::string Remount(bool read_only) {
    unsigned long flags = MS_REMOUNT | (read_only ? MS_RDONLY : 0);
    if (mount("tmpfs", path_.c_str(), "tmpfs", flags, options_.c_str()) == 0) return "";
    return strerror(errno);
  }
  // Writes a file until the disk is full; the bytes written.
  int64_t Fill(const std::string& name) {
    int fd = open((path_ + "/" + name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    std::string chunk(1 << 16, 'x');
    int64_t written = 0;
    for (size_t size : {size_t{1} << 16, size_t{4096}, size_t{512}, size_t{1}}) {
      while (true) {
        ssize_t n = write(fd, chunk.data(), size);
        if (n <= 0) break;
        written += n;
      }
    }
    close(fd);
    return written;
  }

 private:
  std::string path_;
  std::string options_;
  std::string error_;
  bool mounted_ = false;
};

class FaultDiskTest : public FaultTest {
 protected:
  void SetUp() override {
    disk_ = std::make_unique<Tmpfs>(16 << 20);
    FaultTest::SetUp();
  }
  void TearDown() override {
    cluster_.reset();  // benchd first: it holds the database open
    disk_.reset();
  }

  // Starts benchd on the tmpfs (a long lease: the idle agent never heartbeats) with one
  // idle agent registered, and stores one job.
  void StartOnDisk() {
    ASSERT_TRUE(disk_->error().empty()) << disk_->error();
    cluster_->set_db_path(disk_->path() + "/bench.db");
    ASSERT_TRUE(cluster_->StartBenchd({"--agent_lease=600s"}).ok()) << Logs();
    ASSERT_TRUE(RegisterIdleAgent(cluster_->server(), "idle", 8).ok());
    stub_ = v1::Controller::NewStub(
        grpc::CreateChannel(cluster_->server(), grpc::InsecureChannelCredentials()));
    std::string output;
    earlier_ = Submit(TinyJob(1, 3), &output);
    ASSERT_FALSE(earlier_.empty()) << output << Logs();
  }

  grpc::Status SubmitRpc(const v1::JobSpec& spec, v1::SubmitJobResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::SubmitJobRequest request;
    *request.mutable_spec() = spec;
    return stub_->SubmitJob(&context, request, response);
  }

  // benchd is alive and still serves the job stored before the fault.
  void ExpectServesEarlierJob() {
    EXPECT_TRUE(cluster_->BenchdAlive()) << "benchd exited" << Logs();
    std::optional<v1::JobStatus> job = JobOf(*cluster_, earlier_);
    ASSERT_TRUE(job.has_value()) << "benchd no longer serves " << earlier_ << Logs();
    EXPECT_EQ(job->state(), v1::JOB_STATE_QUEUED);
    CommandResult list = cluster_->Benchctl({"list"}, 30);
    EXPECT_EQ(list.exit_code, 0) << list.output;
    EXPECT_THAT(list.stdout_text, HasSubstr(earlier_));
  }

  // Submits work again (within a few seconds of the disk coming back) and everything
  // stored before is still there: `accepted` are the ids benchd acknowledged earlier.
  void ExpectRecovered(const std::set<std::string>& accepted) {
    v1::SubmitJobResponse response;
    grpc::Status status;
    bool ok = WaitUntil(absl::Seconds(10), [&] {
      status = SubmitRpc(TinySpec(), &response);
      return status.ok();
    }, absl::Milliseconds(500));
    ASSERT_TRUE(ok) << "submits still fail after the disk came back: " << status.error_code()
                    << " " << status.error_message() << Logs();
    std::string output;
    std::string again = Submit(TinyJob(1, 3), &output);
    EXPECT_FALSE(again.empty()) << output;
    for (const std::string& id : accepted) {
      EXPECT_EQ(QueryInt(cluster_->db_path(),
                         absl::StrCat("SELECT count(*) FROM jobs WHERE id='", id, "'")),
                1)
          << id << " was acknowledged but is gone";
      std::optional<v1::JobStatus> job = JobOf(*cluster_, id);
      EXPECT_TRUE(job.has_value()) << id;
    }
    EXPECT_TRUE(cluster_->BenchdAlive()) << Logs();
  }

  std::unique_ptr<Tmpfs> disk_;
  std::unique_ptr<v1::Controller::Stub> stub_;
  std::string earlier_;
};

TEST_F(FaultDiskTest, FullDiskRefusesSubmitsWithUnavailableAndRecoversOnceSpaceIsFreed) {
  StartOnDisk();
  if (HasFatalFailure()) return;
  std::set<std::string> accepted = {earlier_};
  ASSERT_GT(disk_->Fill("filler"), 0);

  // The first write that needs a new page fails; one that still fits in pages SQLite
  // already holds may pass, so a few submits are allowed to get through first.
  grpc::Status refused;
  for (int i = 0; i < 20 && refused.ok(); ++i) {
    v1::SubmitJobResponse response;
    refused = SubmitRpc(TinySpec(), &response);
    if (refused.ok()) accepted.insert(response.job_id());
  }
  ASSERT_FALSE(refused.ok()) << "20 submits stored on a full disk?";
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE)
      << refused.error_code() << " " << refused.error_message();
  CommandResult cli = cluster_->Benchctl(TinyJob(1, 3), 60);
  EXPECT_EQ(cli.exit_code, 1) << cli.output;
  EXPECT_THAT(cli.output, HasSubstr("could not store the job")) << cli.output;
  ExpectServesEarlierJob();

  ASSERT_EQ(unlink((disk_->path() + "/filler").c_str()), 0);
  ExpectRecovered(accepted);
}

TEST_F(FaultDiskTest, ReadOnlyDiskRefusesSubmitsWithUnavailableAndRecoversWhenWritable) {
  StartOnDisk();
  if (HasFatalFailure()) return;
  // Linux refuses to remount a file system read-only while a file on it is open for
  // writing (EBUSY), and benchd holds its database so. Then the disk goes read-only
  // under a crashed benchd (kill -9, as a host whose disk failed), and benchd comes back
  // on it.
  std::string error = disk_->Remount(/*read_only=*/true);
  if (!error.empty()) {
    EXPECT_EQ(cluster_->KillBenchd(), -SIGKILL);
    error = disk_->Remount(/*read_only=*/true);
    ASSERT_EQ(error, "") << "mount -o remount,ro " << disk_->path();
    ASSERT_TRUE(cluster_->StartBenchd().ok())
        << "benchd does not start on a read-only database" << Logs();
    // The new benchd has not met the idle agent (it is no real process to come back).
    ASSERT_TRUE(RegisterIdleAgent(cluster_->server(), "idle", 8).ok());
  }
  v1::SubmitJobResponse response;
  grpc::Status refused = SubmitRpc(TinySpec(), &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE)
      << refused.error_code() << " " << refused.error_message() << " job " << response.job_id();
  CommandResult cli = cluster_->Benchctl(TinyJob(1, 3), 60);
  EXPECT_EQ(cli.exit_code, 1) << cli.output;
  ExpectServesEarlierJob();

  ASSERT_EQ(disk_->Remount(/*read_only=*/false), "");
  ExpectRecovered({earlier_});
}

// On a read-only disk benchd locks the database's existing lock file read-only, so a
// second benchd is still refused (naming no pid: the file keeps a dead holder's); with no
// lock file there, benchd starts unlocked and says so.
TEST_F(FaultDiskTest, OnAReadOnlyDiskTheDatabaseStaysLockedOrBenchdSaysItIsNot) {
  StartOnDisk();
  if (HasFatalFailure()) return;
  EXPECT_EQ(cluster_->KillBenchd(), -SIGKILL);
  ASSERT_EQ(disk_->Remount(/*read_only=*/true), "");
  ASSERT_TRUE(cluster_->StartBenchd().ok()) << Logs();
  absl::StatusOr<CommandOutput> second = cluster_->RunSecondBenchd();
  ASSERT_TRUE(second.ok()) << second.status();
  // The holder could not write its pid; the one in the file is the killed benchd's, gone.
  EXPECT_THAT(second->stderr_text,
              HasSubstr(absl::StrCat("--db ", cluster_->db_path(),
                                     ": another benchd has this database open")));

  EXPECT_EQ(cluster_->KillBenchd(), -SIGKILL);
  ASSERT_EQ(disk_->Remount(/*read_only=*/false), "");
  ASSERT_EQ(unlink((cluster_->db_path() + ".lock").c_str()), 0);
  ASSERT_EQ(disk_->Remount(/*read_only=*/true), "");
  ASSERT_TRUE(cluster_->StartBenchd().ok()) << Logs();
  EXPECT_THAT(cluster_->Log("benchd.log"), HasSubstr("not locked against a second benchd"));
  ExpectServesEarlierJob();
  ASSERT_EQ(disk_->Remount(/*read_only=*/false), "");
}

// --- 6. 1,000 concurrent submits, 10% repeated request ids -------------------------------

TEST_F(FaultTest, ThousandConcurrentSubmitsWithRepeatedRequestIdsMakeExactly900Jobs) {
  constexpr int kDistinct = 900, kRepeats = 100;
  ASSERT_TRUE(cluster_->StartBenchd({"--agent_lease=600s"}).ok()) << Logs();
  // benchd refuses a job the registered fleet cannot hold; this agent never runs any.
  ASSERT_TRUE(RegisterIdleAgent(cluster_->server(), "idle", 8).ok()) << Logs();
  auto stub = v1::Controller::NewStub(
      grpc::CreateChannel(cluster_->server(), grpc::InsecureChannelCredentials()));

  struct Call {
    std::string request_id;
    grpc::ClientContext context;
    v1::SubmitJobResponse response;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<v1::SubmitJobResponse>> reader;
  };
  std::vector<std::string> ids;
  for (int i = 0; i < kDistinct; ++i) ids.push_back(absl::StrCat("storm-", i));
  for (int i = 0; i < kRepeats; ++i) ids.push_back(absl::StrCat("storm-", i * 9));
  std::shuffle(ids.begin(), ids.end(), std::mt19937(20261121));

  grpc::CompletionQueue queue;
  std::vector<std::unique_ptr<Call>> calls;
  for (const std::string& id : ids) {
    auto call = std::make_unique<Call>();
    call->request_id = id;
    call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(180));
    v1::SubmitJobRequest request;
    *request.mutable_spec() = TinySpec(id);
    call->reader = stub->AsyncSubmitJob(&call->context, request, &queue);
    call->reader->Finish(&call->response, &call->status, call.get());
    calls.push_back(std::move(call));
  }
  for (size_t i = 0; i < calls.size(); ++i) {
    void* tag = nullptr;
    bool ok = false;
    ASSERT_TRUE(queue.Next(&tag, &ok));
  }

  std::map<std::string, std::vector<const Call*>> by_id;
  std::set<std::string> job_ids;
  int failed = 0;
  for (const auto& call : calls) {
    if (!call->status.ok()) {
      if (++failed <= 5) {
        ADD_FAILURE() << call->request_id << ": " << call->status.error_code() << " "
                      << call->status.error_message();
      }
      continue;
    }
    by_id[call->request_id].push_back(call.get());
    job_ids.insert(call->response.job_id());
  }
  ASSERT_EQ(failed, 0) << Logs();
  EXPECT_EQ(job_ids.size(), static_cast<size_t>(kDistinct));
  ASSERT_EQ(by_id.size(), static_cast<size_t>(kDistinct));
  int repeated = 0;
  for (const auto& [id, answers] : by_id) {
    int existing = 0;
    for (const Call* answer : answers) existing += answer->response.existing() ? 1 : 0;
    EXPECT_EQ(existing, static_cast<int>(answers.size()) - 1) << id << ": one original";
    if (answers.size() == 2) {
      ++repeated;
      EXPECT_EQ(answers[0]->response.job_id(), answers[1]->response.job_id()) << id;
    }
  }
  EXPECT_EQ(repeated, kRepeats);

  const std::string& db = cluster_->db_path();
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM jobs"), kDistinct);
  EXPECT_EQ(QueryInt(db, "SELECT count(DISTINCT request_id) FROM jobs"), kDistinct);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM jobs WHERE request_id LIKE 'storm-%'"), kDistinct);

  // The same request id with another spec is refused, and stores nothing.
  v1::SubmitJobRequest changed;
  *changed.mutable_spec() = TinySpec("storm-9");
  changed.mutable_spec()->set_batch_size(4);
  v1::SubmitJobResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status status = stub->SubmitJob(&context, changed, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("request_id"));
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM jobs"), kDistinct);
  EXPECT_TRUE(cluster_->BenchdAlive()) << Logs();
}

// --- 7. scale shape: 32 ranks over 4 agents ----------------------------------------------

TEST_F(FaultTest, ThirtyTwoRankJobOverFourAgentsOfEightSlotsCompletes) {
  constexpr int kAgents = 4, kSlots = 8, kRanks = kAgents * kSlots, kIters = 3;
  ASSERT_TRUE(cluster_->StartBenchd().ok()) << Logs();
  for (int i = 0; i < kAgents; ++i) ASSERT_TRUE(StartAgent(absl::StrCat("wide-", i), kSlots).ok());
  ASSERT_TRUE(cluster_->WaitForAgents(kAgents).ok()) << Logs();

  std::string output;
  std::string job_id = Submit(TinyJob(kRanks, kIters), &output);
  ASSERT_FALSE(job_id.empty()) << output;
  v1::JobStatus job;
  ASSERT_TRUE(WaitForJob(job_id, absl::Seconds(600),
                         [](const v1::JobStatus& j) { return IsTerminal(j.state()); }, &job,
                         /*period=*/absl::Milliseconds(500)))
      << job.DebugString() << Logs();
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << HistoryText(job) << Logs();
  EXPECT_EQ(job.placements_size(), kAgents);

  const std::string& db = cluster_->db_path();
  std::string where = absl::StrCat(" WHERE job_id='", job_id, "'");
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM job_ranks" + where), kRanks);
  EXPECT_EQ(QueryInt(db, "SELECT count(DISTINCT agent) FROM job_ranks" + where), kAgents);
  for (int i = 0; i < kAgents; ++i) {
    EXPECT_EQ(QueryInt(db, absl::StrCat("SELECT count(*) FROM job_ranks", where, " AND agent='wide-",
                                        i, "'")),
              kSlots)
        << "wide-" << i;
  }
  EXPECT_EQ(QueryInt(db, "SELECT count(DISTINCT rank) FROM samples" + where), kRanks);
  ExpectEveryIterationOnce(job_id, job.attempt(), kRanks, kIters);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM rank_summaries" + where), kRanks);
}

}  // namespace
}  // namespace bench::testing
