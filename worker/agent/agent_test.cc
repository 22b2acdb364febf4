// The Agent against an in-process fake controller (AgentService on 127.0.0.1:0) and a
// fake trainer script: registration, assignments, cancel, re-registration, shutdown.
#include "worker/agent/agent.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <fstream>
#include <iterator>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "benchfleet/v1/agent.grpc.pb.h"
#include "common/free_port.h"
#include "common/subprocess.h"
#include "worker/agent/rank_registry.h"
#include "worker/agent/spool.h"
#include "worker/agent/state_dir.h"
#include "worker/agent/temp_dir.h"

namespace bench::agent {
namespace {

using benchfleet::v1::AssignmentEvent;
using benchfleet::v1::RankReport;

class FakeController final : public benchfleet::v1::AgentService::Service {
 public:
  grpc::Status Register(grpc::ServerContext*, const benchfleet::v1::RegisterRequest* request,
                        benchfleet::v1::RegisterResponse* response) override {
    absl::MutexLock lock(&mu_);
    if (register_down_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "register down");
    ++registrations_;
    inventory_ = request->inventory();
    response->set_agent("agent-x");
    response->set_heartbeat_interval_ms(50);
    response->set_controller_id(controller_id_);
    return grpc::Status::OK;
  }
  grpc::Status Heartbeat(grpc::ServerContext*, const benchfleet::v1::HeartbeatRequest* request,
                         benchfleet::v1::HeartbeatResponse*) override {
    absl::MutexLock lock(&mu_);
    ++heartbeats_;
    last_heartbeat_ = *request;
    return grpc::Status::OK;
  }
  grpc::Status StreamAssignments(grpc::ServerContext* context,
                                 const benchfleet::v1::StreamAssignmentsRequest* request,
                                 grpc::ServerWriter<AssignmentEvent>* writer) override {
    absl::MutexLock lock(&mu_);
    ++streams_;
    stream_agent_ = request->agent();
    while (!stopping_ && !context->IsCancelled()) {
      if (end_stream_) {
        end_stream_ = false;
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream ended by the test");
      }
      while (!events_.empty()) {
        AssignmentEvent event = events_.front();
        events_.pop_front();
        mu_.Unlock();
        writer->Write(event);
        mu_.Lock();
      }
      cv_.WaitWithTimeout(&mu_, absl::Milliseconds(20));
    }
    return grpc::Status::OK;
  }
  grpc::Status ReportStatus(grpc::ServerContext*,
                            const benchfleet::v1::ReportStatusRequest* request,
                            benchfleet::v1::ReportStatusResponse*) override {
    absl::MutexLock lock(&mu_);
    if (registrations_ == 0) ++sent_before_register_;
    reports_.push_back(*request);
    for (const auto& rank : request->ranks()) {
      if (rank.state() != benchfleet::v1::RANK_STATE_STARTED) {
        samples_at_final_[{request->job_id(), rank.rank()}] =
            samples_per_rank_[{request->job_id(), rank.rank()}];
        gpu_samples_at_final_[{request->job_id(), rank.rank()}] =
            gpu_samples_per_rank_[{request->job_id(), rank.rank()}];
      }
    }
    return grpc::Status::OK;
  }
  grpc::Status UploadSamples(grpc::ServerContext*,
                             const benchfleet::v1::UploadSamplesRequest* request,
                             benchfleet::v1::UploadSamplesResponse* response) override {
    absl::MutexLock lock(&mu_);
    if (registrations_ == 0) ++sent_before_register_;
    ++upload_calls_;
    if (uploads_down_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "uploads down");
    for (const auto& sample : request->samples()) {
      ++samples_per_rank_[{sample.job_id(), sample.rank()}];
    }
    for (const auto& sample : request->gpu_samples()) {
      ++gpu_samples_per_rank_[{sample.job_id(), sample.rank()}];
      gpu_samples_.push_back(sample);
    }
    response->set_batch_id(request->batch_id());
    response->set_stored(request->samples_size());
    response->set_gpu_stored(request->gpu_samples_size());
    return grpc::Status::OK;
  }
  grpc::Status Deregister(grpc::ServerContext*, const benchfleet::v1::DeregisterRequest* request,
                          benchfleet::v1::DeregisterResponse*) override {
    absl::MutexLock lock(&mu_);
    deregistrations_.push_back(*request);
    reports_before_deregister_ = static_cast<int>(reports_.size());
    return grpc::Status::OK;
  }

  void Push(AssignmentEvent event) {
    absl::MutexLock lock(&mu_);
    events_.push_back(std::move(event));
    cv_.SignalAll();
  }
  void EndStream() {
    absl::MutexLock lock(&mu_);
    end_stream_ = true;
    cv_.SignalAll();
  }
  void Stop() {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  // Waits until `predicate` (called under the lock) holds.
  bool WaitFor(const std::function<bool()>& predicate,
               absl::Duration timeout = absl::Seconds(15)) {
    absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      {
        absl::MutexLock lock(&mu_);
        if (predicate()) return true;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }
  // The latest state of (job, rank), UNSPECIFIED if never reported. Call under WaitFor
  // or with the lock not held.
  RankReport LatestLocked(const std::string& job, int rank) {
    RankReport latest;
    for (const auto& report : reports_) {
      if (report.job_id() != job) continue;
      for (const auto& r : report.ranks()) {
        if (r.rank() == rank) latest = r;
      }
    }
    return latest;
  }
  RankReport Latest(const std::string& job, int rank) {
    absl::MutexLock lock(&mu_);
    return LatestLocked(job, rank);
  }

  absl::Mutex mu_;
  absl::CondVar cv_;
  int registrations_ = 0, heartbeats_ = 0, streams_ = 0;
  bool stopping_ = false, end_stream_ = false;
  bool uploads_down_ = false;  // UploadSamples fails (UNAVAILABLE) while set
  int upload_calls_ = 0;
  bool register_down_ = false;  // Register fails (UNAVAILABLE) while set
  std::string controller_id_;   // RegisterResponse.controller_id ("" an older benchd)
  int sent_before_register_ = 0;  // ReportStatus and UploadSamples calls before that
  benchfleet::v1::AgentInventory inventory_;
  benchfleet::v1::HeartbeatRequest last_heartbeat_;
  std::string stream_agent_;
  std::deque<AssignmentEvent> events_;
  std::vector<benchfleet::v1::ReportStatusRequest> reports_;
  std::map<std::pair<std::string, int>, int> samples_per_rank_;
  std::map<std::pair<std::string, int>, int> samples_at_final_;
  std::map<std::pair<std::string, int>, int> gpu_samples_per_rank_;
  std::map<std::pair<std::string, int>, int> gpu_samples_at_final_;
  std::vector<benchfleet::v1::GpuSample> gpu_samples_;
  std::vector<benchfleet::v1::DeregisterRequest> deregistrations_;
  int reports_before_deregister_ = -1;  // reports_.size() when the agent deregistered
};

// --model picks the behaviour: "ok" (5 iterations and a summary), "hang".
constexpr char kFakeTrainer[] = R"SH(#!/bin/sh
DIR="$(dirname "$0")"
MODE="$2"
echo $$ > "$DIR/pid.$RANK"
printf '{"event":"start","rank":%s,"model":"%s","parameters":99}\n' "$RANK" "$MODE"
iter() {
  printf '{"event":"iter","rank":%s,"iteration":%d,"step_time_s":0.01,"images":2,"loss":1.5,"data_time_s":0,"elapsed_s":0.05,"warmup":false}\n' "$RANK" "$1"
}
for i in 1 2 3 4 5; do iter $i; done
if [ "$MODE" = hang ]; then
  touch "$DIR/started.$RANK"
  sleep 30
fi
printf '{"event":"summary","rank":%s,"measured_iterations":4,"measured_images":8,"window_s":0.04,"images_per_second":200,"step_time_median_s":0.01}\n' "$RANK"
)SH";

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(temp_.ok());
    dir_ = temp_.path();
    std::ofstream out(dir_ + "/bench-train");
    out << kFakeTrainer;
    out.close();
    chmod((dir_ + "/bench-train").c_str(), 0755);
  }
  void TearDown() override {
    agent_.reset();
    StopServer();
  }

  void StartServer(int port = 0) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", port), grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&controller_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void StopServer() {
    if (server_ == nullptr) return;
    controller_.Stop();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
    server_.reset();
  }

  void StartAgent(const std::function<void(AgentOptions*)>& adjust = nullptr) {
    AgentOptions options;
    options.controller = absl::StrCat("127.0.0.1:", port_);
    options.name = "node-1";
    options.cpu_slots = 2;
    options.bench_train = dir_ + "/bench-train";
    options.kill_grace = absl::Milliseconds(500);
    options.shutdown_flush_timeout = absl::Seconds(2);
    // As in production (main.cc always gives one): samples and reports go through the
    // spools of a state directory.
    options.state_dir = dir_ + "/state";
    if (adjust) adjust(&options);
    agent_ = std::make_unique<Agent>(options);
    ASSERT_TRUE(agent_->Start().ok());
  }

  static AssignmentEvent Assign(const std::string& job, const std::string& mode) {
    AssignmentEvent event;
    auto* a = event.mutable_assign();
    a->set_job_id(job);
    a->set_attempt(1);
    a->mutable_spec()->set_model(mode);
    a->mutable_spec()->set_batch_size(2);
    a->mutable_spec()->set_iterations(5);
    a->mutable_spec()->set_warmup_iterations(1);
    a->mutable_spec()->set_image_size(64);
    a->add_ranks(0);
    a->add_ranks(1);
    a->add_device_indices(0);
    a->add_device_indices(1);
    a->set_device_kind("cpu");
    a->set_world_size(2);
    a->set_master_addr("127.0.0.1");
    return event;
  }

  bool FinalState(const std::string& job, int rank, benchfleet::v1::RankState state) {
    return controller_.WaitFor([&] { return controller_.LatestLocked(job, rank).state() == state; });
  }

  // Leaves in `state` what an agent stopped with its controller away leaves: three
  // spooled samples and a SUCCEEDED report of job-000001, and `recorded_id` (if not
  // empty) as the id of the database they were meant for.
  void SpoolLeftovers(const std::string& state, const std::string& recorded_id) {
    ASSERT_TRUE(MakeWritableDirectory(state).ok());
    if (!recorded_id.empty()) {
      ASSERT_TRUE(WriteControllerId(state, recorded_id).ok());
    }
    auto samples = Spool::Open(state + "/spool/samples");
    ASSERT_TRUE(samples.ok());
    for (int i = 1; i <= 3; ++i) {
      benchfleet::v1::IterationSample sample;
      sample.set_job_id("job-000001");
      sample.set_attempt(1);
      sample.set_rank(0);
      sample.set_iteration(i);
      ASSERT_TRUE(
          (*samples)->Append(SpoolKind::kIterationSample, sample.SerializeAsString()).ok());
    }
    auto reports = Spool::Open(state + "/spool/reports");
    ASSERT_TRUE(reports.ok());
    benchfleet::v1::ReportStatusRequest report;
    report.set_job_id("job-000001");
    report.set_attempt(1);
    auto* rank = report.add_ranks();
    rank->set_rank(0);
    rank->set_state(benchfleet::v1::RANK_STATE_SUCCEEDED);
    ASSERT_TRUE((*reports)->Append(SpoolKind::kReport, report.SerializeAsString()).ok());
  }
  // Leaves in `state` a rank that a previous agent (killed with -9) left running: a
  // sleeping process in its own group, recorded in the rank registry as (job, attempt,
  // rank). Null after a failure it has reported.
  std::unique_ptr<Subprocess> LeftoverRank(const std::string& state, const std::string& job,
                                           int attempt, int rank) {
    SubprocessOptions options;
    options.argv = {"/bin/sleep", "60"};
    options.stdout_mode = SubprocessOptions::Output::kDiscard;
    options.stderr_mode = SubprocessOptions::Output::kDiscard;
    auto sleeper = Subprocess::Start(options);
    if (!sleeper.ok()) {
      ADD_FAILURE() << sleeper.status();
      return nullptr;
    }
    auto registry = RankRegistry::Open(state + "/ranks");
    if (!registry.ok()) {
      ADD_FAILURE() << registry.status();
      return nullptr;
    }
    if (absl::Status recorded = (*registry)->RecordProcess(job, attempt, rank, (*sleeper)->pid());
        !recorded.ok()) {
      ADD_FAILURE() << recorded;
      return nullptr;
    }
    return std::move(sleeper).value();
  }
  // Unacknowledged records in the spool `name` (samples, reports) of `state`.
  static uint64_t Pending(const std::string& state, const std::string& name) {
    auto spool = Spool::Open(state + "/spool/" + name);
    return spool.ok() ? (*spool)->pending_at_open() : 999999;
  }

  bool Exists(const std::string& name) { return access((dir_ + "/" + name).c_str(), F_OK) == 0; }
  bool WaitForFile(const std::string& name) {
    for (int i = 0; i < 1000 && !Exists(name); ++i) absl::SleepFor(absl::Milliseconds(10));
    return Exists(name);
  }
  pid_t Pid(int rank) {
    std::ifstream in(dir_ + "/pid." + std::to_string(rank));
    pid_t pid = 0;
    in >> pid;
    return pid;
  }

  TempDir temp_{"agent_test_"};  // declared first: removed after the agent and server
  std::string dir_;
  FakeController controller_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::unique_ptr<Agent> agent_;
};

TEST_F(AgentTest, RegistersRunsAnAssignmentAndHeartbeats) {
  StartServer();
  StartAgent();
  ASSERT_TRUE(controller_.WaitFor([&] { return controller_.streams_ > 0; }));
  {
    absl::MutexLock lock(&controller_.mu_);
    EXPECT_EQ(controller_.inventory_.name(), "node-1");
    EXPECT_EQ(controller_.inventory_.cpu_slots(), 2);
    EXPECT_EQ(controller_.inventory_.address(), "127.0.0.1");
    EXPECT_EQ(controller_.stream_agent_, "agent-x");
  }
  controller_.Push(Assign("job-1", "ok"));
  ASSERT_TRUE(FinalState("job-1", 0, benchfleet::v1::RANK_STATE_SUCCEEDED));
  ASSERT_TRUE(FinalState("job-1", 1, benchfleet::v1::RANK_STATE_SUCCEEDED));
  absl::MutexLock lock(&controller_.mu_);
  EXPECT_EQ(controller_.reports_.front().agent(), "agent-x");
  EXPECT_GT(controller_.reports_.front().master_port(), 0);
  EXPECT_EQ(controller_.LatestLocked("job-1", 0).summary().measured_images(), 8);
  EXPECT_EQ(controller_.LatestLocked("job-1", 0).parameters(), 99);
  EXPECT_EQ((controller_.samples_at_final_[{"job-1", 0}]), 5);
  EXPECT_EQ((controller_.samples_at_final_[{"job-1", 1}]), 5);
  EXPECT_GT(controller_.heartbeats_, 0);
  EXPECT_EQ(controller_.last_heartbeat_.agent(), "agent-x");
}

TEST_F(AgentTest, CancelAssignment) {
  StartServer();
  StartAgent();
  controller_.Push(Assign("job-2", "hang"));
  ASSERT_TRUE(WaitForFile("started.0"));
  ASSERT_TRUE(WaitForFile("started.1"));
  ASSERT_TRUE(controller_.WaitFor([&] {
    return controller_.last_heartbeat_.running_jobs_size() == 1 &&
           controller_.last_heartbeat_.running_jobs(0) == "job-2";
  }));
  AssignmentEvent cancel;
  cancel.mutable_cancel()->set_job_id("job-2");
  cancel.mutable_cancel()->set_attempt(1);
  cancel.mutable_cancel()->set_reason("user request");
  controller_.Push(cancel);
  ASSERT_TRUE(FinalState("job-2", 0, benchfleet::v1::RANK_STATE_CANCELLED));
  ASSERT_TRUE(FinalState("job-2", 1, benchfleet::v1::RANK_STATE_CANCELLED));
  EXPECT_EQ(controller_.Latest("job-2", 0).message(), "cancelled by the controller: user request");
  EXPECT_NE(kill(Pid(0), 0), 0);
  EXPECT_NE(kill(Pid(1), 0), 0);
  ASSERT_TRUE(controller_.WaitFor([&] {
    return controller_.last_heartbeat_.running_jobs_size() == 0;
  }));
}

TEST_F(AgentTest, ReRegistersWhenTheStreamEnds) {
  StartServer();
  StartAgent();
  ASSERT_TRUE(controller_.WaitFor([&] { return controller_.streams_ == 1; }));
  controller_.EndStream();
  ASSERT_TRUE(controller_.WaitFor(
      [&] { return controller_.registrations_ == 2 && controller_.streams_ == 2; }));
  controller_.Push(Assign("job-3", "ok"));
  ASSERT_TRUE(FinalState("job-3", 1, benchfleet::v1::RANK_STATE_SUCCEEDED));
}

TEST_F(AgentTest, WaitsForAControllerThatStartsLater) {
  auto port = PickFreePort("127.0.0.1");
  ASSERT_TRUE(port.ok());
  port_ = *port;
  StartAgent();
  absl::SleepFor(absl::Milliseconds(500));
  StartServer(port_);
  ASSERT_TRUE(controller_.WaitFor([&] { return controller_.streams_ > 0; }));
}

TEST_F(AgentTest, ShutdownKillsRanksAndReportsThem) {
  StartServer();
  StartAgent();
  controller_.Push(Assign("job-4", "hang"));
  ASSERT_TRUE(WaitForFile("started.0"));
  ASSERT_TRUE(WaitForFile("started.1"));
  absl::Time start = absl::Now();
  agent_->Shutdown("SIGTERM");
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_NE(kill(Pid(0), 0), 0);
  EXPECT_NE(kill(Pid(1), 0), 0);
  RankReport report = controller_.Latest("job-4", 0);
  EXPECT_EQ(report.state(), benchfleet::v1::RANK_STATE_CANCELLED);
  EXPECT_EQ(report.message(), "agent shutting down");
  absl::MutexLock lock(&controller_.mu_);
  EXPECT_EQ((controller_.samples_at_final_[{"job-4", 0}]), 5);
  // Then, with every report delivered, it says goodbye once, naming why.
  ASSERT_EQ(controller_.deregistrations_.size(), 1u);
  EXPECT_EQ(controller_.deregistrations_[0].agent(), "agent-x");
  EXPECT_EQ(controller_.deregistrations_[0].reason(), "SIGTERM");
  EXPECT_EQ(controller_.reports_before_deregister_,
            static_cast<int>(controller_.reports_.size()));
}

// The CI telemetry path: GPUs from the fake NVML, ranks on the CPU, GPUs sampled.
TEST_F(AgentTest, SamplesTheGpusOfItsRanksThroughNvml) {
  StartServer();
  StartAgent([](AgentOptions* options) {
    options->cpu_slots = 0;
    options->nvml_library = FAKE_NVML_LIBRARY;
    options->gpu_ranks_on_cpu = true;
    options->gpu_sample_hz = 50;
  });
  ASSERT_TRUE(controller_.WaitFor([&] { return controller_.streams_ > 0; }));
  {
    absl::MutexLock lock(&controller_.mu_);
    ASSERT_EQ(controller_.inventory_.gpus_size(), 2);
    EXPECT_EQ(controller_.inventory_.gpus(1).uuid(), "GPU-fake-1");
    EXPECT_EQ(controller_.inventory_.cpu_slots(), 0);
  }
  AssignmentEvent event = Assign("job-5", "hang");
  event.mutable_assign()->set_device_kind("cuda");
  controller_.Push(event);
  ASSERT_TRUE(WaitForFile("started.0"));
  ASSERT_TRUE(WaitForFile("started.1"));
  ASSERT_TRUE(controller_.WaitFor([&] {
    return controller_.gpu_samples_per_rank_[{"job-5", 0}] >= 3 &&
           controller_.gpu_samples_per_rank_[{"job-5", 1}] >= 3;
  }));
  AssignmentEvent cancel;
  cancel.mutable_cancel()->set_job_id("job-5");
  cancel.mutable_cancel()->set_attempt(1);
  controller_.Push(cancel);
  ASSERT_TRUE(FinalState("job-5", 0, benchfleet::v1::RANK_STATE_CANCELLED));
  ASSERT_TRUE(FinalState("job-5", 1, benchfleet::v1::RANK_STATE_CANCELLED));
  absl::MutexLock lock(&controller_.mu_);
  for (int rank : {0, 1}) {
    SCOPED_TRACE(rank);
    EXPECT_EQ(controller_.LatestLocked("job-5", rank).telemetry_note(), kGpuRanksOnCpuNote);
    EXPECT_EQ((controller_.gpu_samples_at_final_[{"job-5", rank}]),
              (controller_.gpu_samples_per_rank_[{"job-5", rank}]));
  }
  std::map<int, int64_t> last_seq;
  for (const auto& sample : controller_.gpu_samples_) {
    EXPECT_EQ(sample.job_id(), "job-5");
    EXPECT_EQ(sample.gpu_index(), sample.rank());
    EXPECT_EQ(sample.gpu_uuid(), absl::StrCat("GPU-fake-", sample.rank()));
    EXPECT_EQ(sample.power_w(), sample.rank() == 0 ? 300.0 : 250.0);
    EXPECT_EQ(sample.sm_clock_mhz(), sample.rank() == 0 ? 1980.0 : 1755.0);
    EXPECT_TRUE(sample.has_energy_j());
    EXPECT_EQ(sample.seq(), last_seq[sample.rank()] + 1) << "in order, none lost";
    last_seq[sample.rank()] = sample.seq();
  }
}

TEST_F(AgentTest, HeartbeatsNameTheJobAttemptAndLiveRanks) {
  StartServer();
  StartAgent();
  AssignmentEvent event = Assign("job-6", "hang");
  event.mutable_assign()->set_attempt(3);
  controller_.Push(event);
  ASSERT_TRUE(WaitForFile("started.0"));
  ASSERT_TRUE(WaitForFile("started.1"));
  ASSERT_TRUE(controller_.WaitFor([&] {
    const auto& hb = controller_.last_heartbeat_;
    return hb.running_size() == 1 && hb.running(0).ranks_size() == 2;
  }));
  {
    absl::MutexLock lock(&controller_.mu_);
    const auto& hb = controller_.last_heartbeat_;
    EXPECT_EQ(hb.running(0).job_id(), "job-6");
    EXPECT_EQ(hb.running(0).attempt(), 3);
    EXPECT_EQ(hb.running(0).ranks(0), 0);
    EXPECT_EQ(hb.running(0).ranks(1), 1);
    ASSERT_EQ(hb.running_jobs_size(), 1);  // still filled, for older controllers
    EXPECT_EQ(hb.running_jobs(0), "job-6");
  }
  // Rank 1 dies on its own: rank 0 is cancelled, and neither is listed any more.
  ASSERT_EQ(kill(Pid(1), SIGKILL), 0);
  ASSERT_TRUE(FinalState("job-6", 1, benchfleet::v1::RANK_STATE_FAILED));
  ASSERT_TRUE(FinalState("job-6", 0, benchfleet::v1::RANK_STATE_CANCELLED));
  ASSERT_TRUE(controller_.WaitFor([&] {
    return controller_.last_heartbeat_.running_size() == 0 &&
           controller_.last_heartbeat_.running_jobs_size() == 0;
  }));
}

TEST_F(AgentTest, LabelsAreInTheInventory) {
  StartServer();
  StartAgent([](AgentOptions* options) {
    options->labels = {{"zone", "eu-1"}, {"rack", "7"}};
  });
  ASSERT_TRUE(controller_.WaitFor([&] { return controller_.registrations_ > 0; }));
  absl::MutexLock lock(&controller_.mu_);
  EXPECT_EQ(controller_.inventory_.labels().size(), 2u);
  EXPECT_EQ(controller_.inventory_.labels().at("zone"), "eu-1");
  EXPECT_EQ(controller_.inventory_.labels().at("rack"), "7");
}

TEST_F(AgentTest, AnUnreadableTlsFileStopsStartNamingTheFlag) {
  AgentOptions options;
  options.controller = "127.0.0.1:1";
  options.name = "node-1";
  options.cpu_slots = 1;
  options.credentials.tls_ca = dir_ + "/no-such-ca.pem";
  options.credentials.tls_cert = dir_ + "/node-1.pem";
  options.credentials.tls_key = dir_ + "/node-1.key";
  Agent agent(options);
  absl::Status started = agent.Start();
  EXPECT_EQ(started.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(started.message().find("--tls-ca"), std::string::npos) << started;
  EXPECT_NE(started.message().find("no-such-ca.pem"), std::string::npos) << started;
}

TEST_F(AgentTest, KillsAndReportsTheRanksAPreviousAgentLeftRunning) {
  const std::string state = dir_ + "/state";
  std::unique_ptr<Subprocess> sleeper = LeftoverRank(state, "job-old", 2, 1);
  ASSERT_NE(sleeper, nullptr);
  const pid_t pid = sleeper->pid();
  StartServer();
  StartAgent([&](AgentOptions* options) { options->state_dir = state; });
  // Start() returns after the leftover is gone.
  auto exit_code = sleeper->TryWait();
  ASSERT_TRUE(exit_code.has_value());
  EXPECT_EQ(*exit_code, -SIGKILL);
  ASSERT_TRUE(FinalState("job-old", 1, benchfleet::v1::RANK_STATE_FAILED));
  absl::MutexLock lock(&controller_.mu_);
  const auto& report = controller_.reports_.front();
  EXPECT_EQ(report.job_id(), "job-old");
  EXPECT_EQ(report.attempt(), 2);
  // Held until the agent has registered: sent under the name the controller gave.
  EXPECT_EQ(report.agent(), "agent-x");
  EXPECT_EQ(controller_.sent_before_register_, 0);
  EXPECT_EQ(controller_.LatestLocked("job-old", 1).message(),
            absl::StrCat("bench-agent restarted while this rank ran; it was killed (pid ", pid,
                         ")"));
}

TEST_F(AgentTest, RecordsItsRanksWhileTheyRunAndRefusesASecondAgentOnItsState) {
  const std::string state = dir_ + "/state";
  StartServer();
  StartAgent([&](AgentOptions* options) { options->state_dir = state; });
  controller_.Push(Assign("job-7", "hang"));
  ASSERT_TRUE(WaitForFile("started.0"));
  ASSERT_TRUE(WaitForFile("started.1"));
  for (int rank : {0, 1}) {
    // The record is written once the spawn returns, which may be after the rank's
    // first lines ran.
    std::string line;
    for (int i = 0; i < 500; ++i) {
      std::ifstream in(absl::StrCat(state, "/ranks/rank-", Pid(rank)));
      if (std::getline(in, line)) break;
      absl::SleepFor(absl::Milliseconds(10));
    }
    ASSERT_FALSE(line.empty()) << "rank " << rank << " not recorded";
    auto record = ParseRankRecord(line);
    ASSERT_TRUE(record.ok());
    EXPECT_EQ(record->job_id, "job-7");
    EXPECT_EQ(record->rank, rank);
    EXPECT_EQ(record->start_time, *ProcessStartTime(Pid(rank)));
  }
  AgentOptions second;
  second.controller = absl::StrCat("127.0.0.1:", port_);
  second.name = "node-2";
  second.cpu_slots = 1;
  second.state_dir = state;
  Agent other(second);
  absl::Status started = other.Start();
  EXPECT_TRUE(absl::IsFailedPrecondition(started)) << started;
  EXPECT_NE(started.message().find("in use by another bench-agent"), absl::string_view::npos);
  // The first agent's ranks were not touched.
  EXPECT_EQ(kill(Pid(0), 0), 0);
  EXPECT_EQ(kill(Pid(1), 0), 0);
  agent_->Shutdown();
  EXPECT_NE(access(absl::StrCat(state, "/ranks/rank-", Pid(0)).c_str(), F_OK), 0)
      << "a reaped rank is forgotten";
}

// The bench-agent executable killed with -9 while its ranks run and before its samples
// were acknowledged; a new one on the same state directory kills the ranks, reports them
// FAILED and replays the samples.
TEST_F(AgentTest, AnAgentKilledWithSignal9IsCleanedUpAfterByTheNextOne) {
  StartServer();
  {
    absl::MutexLock lock(&controller_.mu_);
    controller_.uploads_down_ = true;
  }
  const std::string state = dir_ + "/state";
  auto start_agent = [&] {
    SubprocessOptions options;
    options.argv = {BENCH_AGENT_PATH, "--controller", absl::StrCat("127.0.0.1:", port_),
                    "--name", "node-1", "--cpu-slots", "2", "--bench-train",
                    dir_ + "/bench-train", "--state-dir", state, "--label", "zone=test"};
    options.stdout_mode = SubprocessOptions::Output::kFile;
    options.stderr_mode = SubprocessOptions::Output::kFile;
    options.stdout_path = options.stderr_path = dir_ + "/agent.log";
    auto process = Subprocess::Start(options);
    EXPECT_TRUE(process.ok()) << process.status();
    return process.ok() ? std::move(*process) : nullptr;
  };
  auto log = [&] {
    std::ifstream in(dir_ + "/agent.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto first = start_agent();
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(controller_.WaitFor([&] { return controller_.streams_ > 0; })) << log();
  {
    absl::MutexLock lock(&controller_.mu_);
    EXPECT_EQ(controller_.inventory_.labels().at("zone"), "test");
  }
  controller_.Push(Assign("job-8", "hang"));
  ASSERT_TRUE(WaitForFile("started.0")) << log();
  ASSERT_TRUE(WaitForFile("started.1")) << log();
  ASSERT_TRUE(controller_.WaitFor([&] { return controller_.upload_calls_ > 0; })) << log();
  const pid_t rank0 = Pid(0), rank1 = Pid(1);
  ASSERT_EQ(kill(first->pid(), SIGKILL), 0);
  EXPECT_EQ(first->Wait(), -SIGKILL);
  EXPECT_EQ(kill(rank0, 0), 0) << "ranks outlive a kill -9'd agent";
  EXPECT_EQ(kill(rank1, 0), 0);
  {
    absl::MutexLock lock(&controller_.mu_);
    EXPECT_EQ((controller_.samples_per_rank_[{"job-8", 0}]), 0);
    controller_.uploads_down_ = false;
  }

  auto second = start_agent();
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(FinalState("job-8", 0, benchfleet::v1::RANK_STATE_FAILED)) << log();
  ASSERT_TRUE(FinalState("job-8", 1, benchfleet::v1::RANK_STATE_FAILED)) << log();
  EXPECT_EQ(controller_.Latest("job-8", 0).message(), LeftoverRankMessage(rank0));
  EXPECT_EQ(controller_.Latest("job-8", 1).message(), LeftoverRankMessage(rank1));
  EXPECT_FALSE(ProcessStartTime(rank0).ok()) << "rank 0 still runs";
  EXPECT_FALSE(ProcessStartTime(rank1).ok()) << "rank 1 still runs";
  // The five samples of each rank, spooled by the first agent, come from the second.
  EXPECT_TRUE(controller_.WaitFor([&] {
    return controller_.samples_per_rank_[{"job-8", 0}] == 5 &&
           controller_.samples_per_rank_[{"job-8", 1}] == 5;
  })) << log();
  ASSERT_EQ(kill(second->pid(), SIGTERM), 0);
  EXPECT_EQ(second->Wait(), 0) << log();
  std::string text = log();
  EXPECT_NE(text.find("left running by a previous bench-agent"), std::string::npos) << text;
  EXPECT_NE(text.find("replaying"), std::string::npos) << text;
}

TEST_F(AgentTest, AnUnusableStateDirectoryIsAStartError) {
  AgentOptions options;
  options.controller = "127.0.0.1:1";
  options.cpu_slots = 1;
  options.state_dir = "/proc/bench-agent-state";
  Agent agent(options);
  absl::Status started = agent.Start();
  EXPECT_FALSE(started.ok());
  EXPECT_NE(started.message().find("/proc/bench-agent-state"), absl::string_view::npos)
      << started;
}

TEST_F(AgentTest, SpooledRecordsAreReplayedOnlyAfterRegisteringWithTheSameDatabase) {
  const std::string state = dir_ + "/state";
  SpoolLeftovers(state, "db-1");
  {
    absl::MutexLock lock(&controller_.mu_);
    controller_.controller_id_ = "db-1";
    controller_.register_down_ = true;
  }
  StartServer();
  StartAgent([&](AgentOptions* options) { options->state_dir = state; });
  absl::SleepFor(absl::Milliseconds(500));
  {
    absl::MutexLock lock(&controller_.mu_);
    EXPECT_EQ(controller_.upload_calls_, 0) << "samples sent before registering";
    EXPECT_TRUE(controller_.reports_.empty()) << "reports sent before registering";
    controller_.register_down_ = false;
  }
  ASSERT_TRUE(FinalState("job-000001", 0, benchfleet::v1::RANK_STATE_SUCCEEDED));
  EXPECT_TRUE(controller_.WaitFor(
      [&] { return controller_.samples_per_rank_[{"job-000001", 0}] == 3; }));
  agent_->Shutdown();
  EXPECT_EQ(controller_.sent_before_register_, 0);
  EXPECT_EQ(*ReadControllerId(state), "db-1");
  EXPECT_EQ(Pending(state, "samples"), 0u);
  EXPECT_EQ(Pending(state, "reports"), 0u);
}

TEST_F(AgentTest, WithNoRecordedDatabaseTheSpoolIsReplayedAndTheIdRecorded) {
  const std::string state = dir_ + "/state";
  SpoolLeftovers(state, "");
  controller_.controller_id_ = "db-1";
  StartServer();
  StartAgent([&](AgentOptions* options) { options->state_dir = state; });
  ASSERT_TRUE(FinalState("job-000001", 0, benchfleet::v1::RANK_STATE_SUCCEEDED));
  EXPECT_TRUE(controller_.WaitFor(
      [&] { return controller_.samples_per_rank_[{"job-000001", 0}] == 3; }));
  agent_->Shutdown();
  EXPECT_EQ(*ReadControllerId(state), "db-1");
}

TEST_F(AgentTest, SpooledRecordsOfAnotherDatabaseAreDiscardedNeverSent) {
  const std::string state = dir_ + "/state";
  SpoolLeftovers(state, "db-old");
  // Also a rank the previous agent left running: it is still killed.
  std::unique_ptr<Subprocess> sleeper = LeftoverRank(state, "job-000001", 1, 1);
  ASSERT_NE(sleeper, nullptr);
  controller_.controller_id_ = "db-new";
  StartServer();
  StartAgent([&](AgentOptions* options) { options->state_dir = state; });
  auto exit_code = sleeper->TryWait();
  ASSERT_TRUE(exit_code.has_value()) << "the leftover rank is killed whatever the database";
  EXPECT_EQ(*exit_code, -SIGKILL);
  ASSERT_TRUE(controller_.WaitFor([&] { return controller_.heartbeats_ >= 5; }));
  agent_->Shutdown();
  absl::MutexLock lock(&controller_.mu_);
  EXPECT_EQ(controller_.registrations_, 1);
  EXPECT_EQ(controller_.upload_calls_, 0);
  EXPECT_TRUE(controller_.reports_.empty()) << controller_.reports_.front().DebugString();
  EXPECT_EQ(*ReadControllerId(state), "db-new");
  EXPECT_EQ(Pending(state, "samples"), 0u);
  EXPECT_EQ(Pending(state, "reports"), 0u);
}

TEST_F(AgentTest, ReRegisteringWithANewDatabaseDiscardsWhatIsSpooledThen) {
  const std::string state = dir_ + "/state";
  {
    absl::MutexLock lock(&controller_.mu_);
    controller_.controller_id_ = "db-1";
    controller_.uploads_down_ = true;
  }
  StartServer();
  StartAgent([&](AgentOptions* options) { options->state_dir = state; });
  controller_.Push(Assign("job-000001", "hang"));
  ASSERT_TRUE(WaitForFile("started.0"));
  ASSERT_TRUE(WaitForFile("started.1"));
  ASSERT_TRUE(FinalState("job-000001", 1, benchfleet::v1::RANK_STATE_STARTED));
  ASSERT_TRUE(controller_.WaitFor([&] { return controller_.upload_calls_ > 0; }));
  EXPECT_EQ(*ReadControllerId(state), "db-1");
  const pid_t old0 = Pid(0), old1 = Pid(1);
  {
    // benchd comes back on a new database.
    absl::MutexLock lock(&controller_.mu_);
    controller_.controller_id_ = "db-2";
    controller_.end_stream_ = true;
    controller_.cv_.SignalAll();
  }
  ASSERT_TRUE(controller_.WaitFor([&] { return controller_.registrations_ == 2; }));
  {
    absl::MutexLock lock(&controller_.mu_);
    controller_.uploads_down_ = false;
  }
  // The old database's assignment is cancelled: its ranks are killed and it leaves the
  // heartbeats.
  for (int i = 0; i < 500 && (kill(old0, 0) == 0 || kill(old1, 0) == 0); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_NE(kill(old0, 0), 0);
  EXPECT_NE(kill(old1, 0), 0);
  ASSERT_TRUE(controller_.WaitFor([&] {
    return controller_.heartbeats_ > 0 && controller_.last_heartbeat_.running().empty();
  }));
  // The new id is written after the old database's records are discarded (crash-safe
  // order), which may be just after the heartbeat above: wait for it.
  for (int i = 0; i < 500 && ReadControllerId(state).value_or("") != "db-2"; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(*ReadControllerId(state), "db-2");
  // The new database's job-000001 (same ids) runs; of its samples only its own arrive:
  // the old job's five per rank, spooled before them, were discarded.
  controller_.Push(Assign("job-000001", "ok"));
  ASSERT_TRUE(FinalState("job-000001", 0, benchfleet::v1::RANK_STATE_SUCCEEDED));
  ASSERT_TRUE(FinalState("job-000001", 1, benchfleet::v1::RANK_STATE_SUCCEEDED));
  absl::MutexLock lock(&controller_.mu_);
  EXPECT_EQ((controller_.samples_per_rank_[{"job-000001", 0}]), 5);
  EXPECT_EQ((controller_.samples_per_rank_[{"job-000001", 1}]), 5);
  for (const auto& report : controller_.reports_) {
    for (const auto& rank : report.ranks()) {
      EXPECT_NE(rank.state(), benchfleet::v1::RANK_STATE_CANCELLED)
          << "a report of the old database's job reached the new one";
    }
  }
}

}  // namespace
}  // namespace bench::agent
