// `benchctl screen`: its flags, which agents and GPUs it screens (one job per GPU, request
// ids that make a retry submit nothing twice), and the run against a fake Controller: the
// screening id, --wait's verdicts and exit code 3, --show and --list.
#include "ctl/screen_command.h"

#include <map>
#include <set>

#include "absl/synchronization/mutex.h"
#include "ctl/test_command_server.h"
#include "gtest/gtest.h"
#include "report/screen_view.h"

namespace bench::ctl {
namespace {

namespace v1 = benchfleet::v1;

v1::AgentStatus Agent(const std::string& name, int gpus, int cpu_slots, bool connected = true,
                      std::map<std::string, std::string> labels = {}) {
  v1::AgentStatus agent;
  agent.set_connected(connected);
  agent.mutable_inventory()->set_name(name);
  for (int i = 0; i < gpus; ++i) agent.mutable_inventory()->add_gpus()->set_index(i);
  agent.mutable_inventory()->set_cpu_slots(cpu_slots);
  for (const auto& [k, v] : labels) (*agent.mutable_inventory()->mutable_labels())[k] = v;
  return agent;
}

TEST(ScreenArgsTest, DefaultsAndChecks) {
  absl::StatusOr<CliOptions> options = ParseArgs({"screen", "--node", "n1", "--wait"}, "");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->command, Command::kScreen);
  EXPECT_EQ(options->screen.base.model(), "resnet50");
  EXPECT_EQ(options->screen.base.iterations(), 500);
  EXPECT_EQ(options->screen.base.batch_size(), 64);
  EXPECT_EQ(options->screen.base.precision(), v1::PRECISION_FP32);
  EXPECT_EQ(options->screen.base.warmup_iterations(), 10);
  EXPECT_EQ(options->screen.base.image_size(), 224);
  EXPECT_EQ(options->screen.nodes, std::vector<std::string>{"n1"});
  EXPECT_TRUE(options->screen.wait);
  options = ParseArgs({"screen", "--warmup", "0", "--iters", "50"}, "");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->screen.base.warmup_iterations(), 0);
  EXPECT_EQ(options->screen.base.iterations(), 50);

  options = ParseArgs({"screen", "--show", "s1", "--format", "json"}, "");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->screen.show, "s1");
  EXPECT_EQ(options->format, OutputFormat::kJson);

  absl::StatusOr<CliOptions> bad = ParseArgs({"screen", "--show", "s1", "--node", "n1"}, "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "screen --show: only --format goes with it (it starts no jobs)");
  bad = ParseArgs({"screen", "--show", "s1", "--list"}, "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "screen: --show and --list go alone, not together");
  bad = ParseArgs({"screen", "--node-label", "rack"}, "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--node-label: expected key=value"), std::string::npos);
}

TEST(ScreenPlanTest, OneJobPerGpuOfTheMatchingConnectedAgents) {
  ScreenOptions options;
  options.base.set_model("resnet50");
  options.base.set_batch_size(64);
  options.node_labels["rack"] = "a";
  const std::vector<v1::AgentStatus> agents = {
      Agent("n2", 2, 0, true, {{"rack", "a"}}), Agent("n1", 1, 0, true, {{"rack", "a"}}),
      Agent("n3", 8, 0, true, {{"rack", "b"}}), Agent("n4", 8, 0, false, {{"rack", "a"}})};
  absl::StatusOr<std::vector<ScreenJob>> jobs = PlanScreenJobs(options, "s1", agents);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ((*jobs)[0].node, "n1");
  EXPECT_EQ((*jobs)[1].node, "n2");
  EXPECT_EQ((*jobs)[2].node, "n2");
  EXPECT_EQ((*jobs)[2].index, 1);
  const v1::JobSpec& spec = (*jobs)[2].spec;
  EXPECT_EQ(spec.devices(), 1);
  EXPECT_EQ(spec.batch_size(), 64);
  ASSERT_EQ(spec.allowed_nodes_size(), 1);
  EXPECT_EQ(spec.allowed_nodes(0), "n2");
  EXPECT_EQ(spec.labels().at("screening"), "s1");
  EXPECT_EQ(spec.request_id(), "screen-s1-n2-1");
  std::set<std::string> ids;
  for (const ScreenJob& job : *jobs) ids.insert(job.spec.request_id());
  EXPECT_EQ(ids.size(), jobs->size());
}

TEST(ScreenPlanTest, RefusesCpuSlotsUnlessAllowedAndNamesMissingNodes) {
  ScreenOptions options;
  const std::vector<v1::AgentStatus> agents = {Agent("gpu1", 2, 0), Agent("cpu1", 0, 4),
                                               Agent("gone", 2, 0, false)};
  absl::StatusOr<std::vector<ScreenJob>> jobs = PlanScreenJobs(options, "s1", agents);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().message(),
            "screen: cpu1 has no GPU (CPU slots only); screening compares GPUs. Leave it out "
            "with --node or --node-label, or pass --allow-cpu to screen CPU slots (tests, "
            "demonstrations)");
  options.allow_cpu = true;
  jobs = PlanScreenJobs(options, "s1", agents);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ(jobs->size(), 6u);  // 4 slots + 2 GPUs; the disconnected agent left out

  options.nodes = {"gpu1", "gone"};
  jobs = PlanScreenJobs(options, "s1", agents);
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.status().message(), "screen: no connected agent named gone (see benchctl agents)");
  options.nodes = {};
  options.node_labels["zone"] = "x";
  jobs = PlanScreenJobs(options, "s1", agents);
  ASSERT_FALSE(jobs.ok());
  EXPECT_NE(jobs.status().message().find("no connected agent matches"), std::string::npos);
}

TEST(ScreenPlanTest, NewIdsCarryTheTime) {
  const std::string id = NewScreeningId(absl::FromUnixSeconds(1800000000));
  EXPECT_EQ(id.substr(0, 20), "scr-20270115-080000-");
  EXPECT_EQ(id.size(), 24u);
}

// ListAgents, SubmitJob (idempotent by request id), ListScreenings (pending until polled
// twice) and GetScreening (one GPU flagged).
class FakeScreening final : public v1::Controller::Service {
 public:
  grpc::Status ListAgents(grpc::ServerContext*, const v1::ListAgentsRequest*,
                          v1::ListAgentsResponse* response) override {
    *response->add_agents() = Agent("n1", 2, 0);
    *response->add_agents() = Agent("n2", 1, 0);
    return grpc::Status::OK;
  }
  grpc::Status SubmitJob(grpc::ServerContext*, const v1::SubmitJobRequest* request,
                         v1::SubmitJobResponse* response) override {
    absl::MutexLock lock(&mu_);
    auto [it, added] = by_request_.emplace(request->spec().request_id(),
                                           "job-" + std::to_string(by_request_.size() + 1));
    if (added) specs_.push_back(request->spec());
    response->set_job_id(it->second);
    response->set_existing(!added);
    return grpc::Status::OK;
  }
  grpc::Status ListScreenings(grpc::ServerContext*, const v1::ListScreeningsRequest*,
                              v1::ListScreeningsResponse* response) override {
    absl::MutexLock lock(&mu_);
    v1::ScreeningSummary* s = response->add_screenings();
    s->set_screening_id("s1");
    s->set_jobs(3);
    s->set_pending(++polls_ < 2 ? 3 : 0);
    s->set_succeeded(3 - s->pending());
    return grpc::Status::OK;
  }
  grpc::Status GetScreening(grpc::ServerContext*, const v1::ScreeningRequest* request,
                            v1::ScreeningReport* response) override {
    if (request->screening_id() != "s1") {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          "no screening \"" + request->screening_id() + "\"");
    }
    response->set_screening_id("s1");
    response->set_jobs(3);
    response->set_any_flagged(true);
    v1::ScreeningGpuVerdict* gpu = response->add_gpus();
    gpu->set_node("n1");
    gpu->set_gpu_index(1);
    gpu->set_verdict("fault");
    gpu->set_flagged(true);
    gpu->set_fault(true);
    gpu->add_cause_descriptions("PCIe link below its maximum");
    gpu->set_evidence("PCIe gen 3 of 5");
    return grpc::Status::OK;
  }
  std::vector<v1::JobSpec> specs() {
    absl::MutexLock lock(&mu_);
    return specs_;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, std::string> by_request_;
  std::vector<v1::JobSpec> specs_;
  int polls_ = 0;
};

class ScreenCommandTest : public CommandServerTest<FakeScreening> {};

TEST_F(ScreenCommandTest, WaitPrintsTheVerdictsAndExits3WhenFlagged) {
  EXPECT_EQ(Run({"screen", "--id", "s1", "--iters", "20", "--wait"}),
            report::kScreenFlaggedExitCode)
      << err_.str();
  const std::string out = out_.str();
  EXPECT_EQ(out.substr(0, 3), "s1\n");
  EXPECT_NE(out.find("fault     "), std::string::npos) << out;
  EXPECT_NE(out.find("PCIe gen 3 of 5"), std::string::npos) << out;
  EXPECT_NE(err_.str().find("screen: 3/3 done (3 succeeded, 0 failed)"), std::string::npos)
      << err_.str();
  ASSERT_EQ(service_.specs().size(), 3u);
  EXPECT_EQ(service_.specs()[0].iterations(), 20);

  // The same screen again: every job is the existing one.
  EXPECT_EQ(Run({"screen", "--id", "s1"}), 0) << err_.str();
  EXPECT_EQ(service_.specs().size(), 3u);
  EXPECT_NE(err_.str().find("job-1  n1 #0  existing"), std::string::npos) << err_.str();
}

TEST_F(ScreenCommandTest, ShowTwiceIsIdenticalAndListAndUnknownIds) {
  EXPECT_EQ(Run({"screen", "--show", "s1"}), report::kScreenFlaggedExitCode);
  const std::string first = out_.str();
  EXPECT_EQ(Run({"screen", "--show", "s1"}), report::kScreenFlaggedExitCode);
  EXPECT_EQ(out_.str(), first);
  EXPECT_EQ(Run({"screen", "--show", "nope"}), 1);
  EXPECT_NE(err_.str().find("no screening \"nope\""), std::string::npos) << err_.str();
  EXPECT_EQ(Run({"screen", "--list"}), 0);
  EXPECT_NE(out_.str().find("s1 "), std::string::npos) << out_.str();
}

}  // namespace
}  // namespace bench::ctl
