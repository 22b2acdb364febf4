// benchd in-process on 127.0.0.1:0 with a real SQLite file, driven over real gRPC: with
// the generated stubs, and with raw bytes as a client without the .proto sends them.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "benchfleet/v1/agent.grpc.pb.h"
#include "benchfleet/v1/controller.grpc.pb.h"
#include "server/auth/auth.h"
#include "server/benchd.h"

namespace bench {
namespace {

namespace v1 = benchfleet::v1;
using ::testing::HasSubstr;
using ::testing::Not;

// Calls `method` ("/package.Service/Method") with `bytes` as its request, as a client
// without the .proto would (grpc::GenericStub), with `token` as a bearer token if given.
// Fine for a server-streaming method that answers no message, as all these do.
grpc::Status CallRaw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                     const std::string& bytes, const std::string& token = "") {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status status) { done.set_value(std::move(status)); });
  return done.get_future().get();
}

// Every rpc of both services as "/package.Service/Method", from the .proto's descriptors,
// so that an rpc added later is covered too.
std::vector<std::string> EveryMethod() {
  std::vector<std::string> paths;
  for (const char* service :
       {v1::Controller::service_full_name(), v1::AgentService::service_full_name()}) {
    const google::protobuf::ServiceDescriptor* descriptor =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service);
    EXPECT_NE(descriptor, nullptr) << service;
    if (descriptor == nullptr) continue;
    for (int i = 0; i < descriptor->method_count(); ++i) {
      paths.push_back(absl::StrCat("/", service, "/", descriptor->method(i)->name()));
    }
  }
  return paths;
}

// Not a protobuf: a varint that never ends.
constexpr char kUnparsable[] = "\xff\xff\xff";

class ControllerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_service_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    BenchdOptions options;
    options.listen = "127.0.0.1:0";
    options.http = "127.0.0.1:0";
    options.db = dir_ + "/bench.db";
    auto benchd = Benchd::Start(options);
    ASSERT_TRUE(benchd.ok()) << benchd.status();
    benchd_ = std::move(*benchd);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(benchd_->grpc_port()),
                                   grpc::InsecureChannelCredentials());
    controller_ = v1::Controller::NewStub(channel_);
    agents_ = v1::AgentService::NewStub(channel_);
  }
  void TearDown() override {
    benchd_.reset();
    std::filesystem::remove_all(dir_);
  }
  void RegisterCpuAgent(const std::string& name, int slots) {
    grpc::ClientContext context;
    v1::RegisterRequest request;
    request.mutable_inventory()->set_name(name);
    request.mutable_inventory()->set_address("127.0.0.1");
    request.mutable_inventory()->set_cpu_slots(slots);
    v1::RegisterResponse response;
    ASSERT_TRUE(agents_->Register(&context, request, &response).ok());
  }
  static v1::JobSpec Spec() {
    v1::JobSpec spec;
    spec.set_model("resnet50");
    spec.set_devices(1);
    spec.set_precision(v1::PRECISION_FP32);
    spec.set_batch_size(2);
    spec.set_iterations(5);
    spec.set_warmup_iterations(1);
    spec.set_image_size(64);
    return spec;
  }
  grpc::Status Submit(const v1::JobSpec& spec, v1::SubmitJobResponse* response) {
    grpc::ClientContext context;
    v1::SubmitJobRequest request;
    *request.mutable_spec() = spec;
    return controller_->SubmitJob(&context, request, response);
  }

  std::string dir_;
  std::unique_ptr<Benchd> benchd_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Controller::Stub> controller_;
  std::unique_ptr<v1::AgentService::Stub> agents_;
};

TEST_F(ControllerServiceTest, BadSpecsAreInvalidArgumentNamingTheField) {
  RegisterCpuAgent("a", 2);
  struct Case {
    std::function<void(v1::JobSpec&)> mutate;
    std::string field;
  };
  std::vector<Case> cases = {
      {[](v1::JobSpec& s) { s.set_batch_size(0); }, "batch_size"},
      {[](v1::JobSpec& s) { s.set_devices(0); }, "devices"},
      {[](v1::JobSpec& s) { s.set_model("alexnet"); }, "model"},
      {[](v1::JobSpec& s) { s.set_precision(v1::PRECISION_UNSPECIFIED); }, "precision"},
      {[](v1::JobSpec& s) { s.set_iterations(-1); }, "iterations"},
      {[](v1::JobSpec& s) { s.set_warmup_iterations(5); }, "warmup_iterations"},
  };
  for (const Case& c : cases) {
    v1::JobSpec spec = Spec();
    c.mutate(spec);
    v1::SubmitJobResponse response;
    grpc::Status status = Submit(spec, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.field;
    EXPECT_THAT(status.error_message(), HasSubstr(c.field));
  }
  grpc::ClientContext context;
  v1::ListJobsResponse list;
  ASSERT_TRUE(controller_->ListJobs(&context, v1::ListJobsRequest(), &list).ok());
  EXPECT_EQ(list.jobs_size(), 0);
}

TEST_F(ControllerServiceTest, MoreDevicesThanTheFleetIsFailedPrecondition) {
  RegisterCpuAgent("a", 2);
  v1::JobSpec spec = Spec();
  spec.set_devices(3);
  v1::SubmitJobResponse response;
  grpc::Status status = Submit(spec, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("devices"));
}

TEST_F(ControllerServiceTest, SubmitGetWatchAndCancel) {
  RegisterCpuAgent("a", 1);  // registered but no assignment stream: the job stays queued
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(Submit(Spec(), &submitted).ok());
  EXPECT_EQ(submitted.job_id(), "job-000001");

  grpc::ClientContext watch_context;
  v1::WatchJobRequest watch_request;
  watch_request.set_job_id(submitted.job_id());
  auto reader = controller_->WatchJob(&watch_context, watch_request);
  v1::JobStatus first;
  ASSERT_TRUE(reader->Read(&first));
  EXPECT_EQ(first.state(), v1::JOB_STATE_QUEUED);

  grpc::ClientContext cancel_context;
  v1::CancelJobRequest cancel;
  cancel.set_job_id(submitted.job_id());
  v1::JobStatus cancelled;
  ASSERT_TRUE(controller_->CancelJob(&cancel_context, cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.state(), v1::JOB_STATE_CANCELLED);

  v1::JobStatus last;
  while (reader->Read(&last)) {
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(last.state(), v1::JOB_STATE_CANCELLED);
  ASSERT_GE(last.history_size(), 2);
}

TEST_F(ControllerServiceTest, TheQueueComesBackInOrderWithConstraintsAndReasons) {
  RegisterCpuAgent("a", 2);  // no assignment stream: nothing is placed on it
  v1::JobSpec constrained = Spec();
  constrained.add_allowed_nodes("a");
  (*constrained.mutable_node_labels())["rack"] = "r1";
  v1::SubmitJobResponse refused;
  grpc::Status status = Submit(constrained, &refused);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("labels rack=r1"));
  constrained.mutable_node_labels()->clear();
  constrained.set_wall_time_limit_s(600);
  v1::SubmitJobResponse first;
  v1::SubmitJobResponse second;
  ASSERT_TRUE(Submit(constrained, &first).ok());
  ASSERT_TRUE(Submit(Spec(), &second).ok());

  grpc::ClientContext context;
  v1::ListQueueResponse queue;
  ASSERT_TRUE(controller_->ListQueue(&context, v1::ListQueueRequest(), &queue).ok());
  ASSERT_EQ(queue.jobs_size(), 2);
  EXPECT_EQ(queue.jobs(0).id(), first.job_id());
  EXPECT_EQ(queue.jobs(0).queue_position(), 1);
  EXPECT_EQ(queue.jobs(0).spec().wall_time_limit_s(), 600);
  ASSERT_EQ(queue.jobs(0).spec().allowed_nodes_size(), 1);
  EXPECT_THAT(queue.jobs(0).reason(), HasSubstr("waiting for 1 free CPU slot (0 free now"));
  EXPECT_EQ(queue.jobs(1).id(), second.job_id());
  EXPECT_EQ(queue.jobs(1).queue_position(), 2);
}

TEST_F(ControllerServiceTest, UnknownJobIsNotFound) {
  grpc::ClientContext context;
  v1::GetJobRequest request;
  request.set_job_id("job-999999");
  v1::JobStatus status;
  EXPECT_EQ(controller_->GetJob(&context, request, &status).error_code(),
            grpc::StatusCode::NOT_FOUND);
  grpc::ClientContext watch_context;
  v1::WatchJobRequest watch;
  watch.set_job_id("job-999999");
  auto reader = controller_->WatchJob(&watch_context, watch);
  v1::JobStatus ignored;
  EXPECT_FALSE(reader->Read(&ignored));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

// ListAgents gives each agent's instance id (random per agent process, agent.proto), as
// the agent registered it: a replaced agent process is told apart from its successor.
TEST_F(ControllerServiceTest, ListAgentsGivesTheInstanceIdTheAgentRegistered) {
  grpc::ClientContext register_context;
  v1::RegisterRequest registration;
  registration.mutable_inventory()->set_name("node-i");
  registration.mutable_inventory()->set_address("127.0.0.1");
  registration.mutable_inventory()->set_cpu_slots(1);
  registration.mutable_inventory()->set_instance_id("3f2a9c0d5e7b4a61");
  v1::RegisterResponse registered;
  ASSERT_TRUE(agents_->Register(&register_context, registration, &registered).ok());
  grpc::ClientContext context;
  v1::ListAgentsResponse response;
  ASSERT_TRUE(controller_->ListAgents(&context, v1::ListAgentsRequest(), &response).ok());
  ASSERT_EQ(response.agents_size(), 1);
  EXPECT_EQ(response.agents(0).inventory().name(), "node-i");
  EXPECT_EQ(response.agents(0).inventory().instance_id(), "3f2a9c0d5e7b4a61");
}

// A GPU job run to success through the agent protocol, then the results, baseline,
// variability and samples RPCs on it.
TEST_F(ControllerServiceTest, BaselinesVariabilitySamplesAndEnvironmentOverGrpc) {
  {
    grpc::ClientContext context;
    v1::RegisterRequest request;
    v1::AgentInventory* inventory = request.mutable_inventory();
    inventory->set_name("dgx");
    inventory->set_hostname("dgx.example");
    inventory->set_address("127.0.0.1");
    v1::Gpu* gpu = inventory->add_gpus();
    gpu->set_index(0);
    gpu->set_name("NVIDIA H100 80GB HBM3");
    gpu->set_uuid("GPU-0000");
    (*inventory->mutable_versions())["driver"] = "550.54.15";
    v1::RegisterResponse response;
    ASSERT_TRUE(agents_->Register(&context, request, &response).ok());
  }
  grpc::ClientContext stream_context;
  v1::StreamAssignmentsRequest stream_request;
  stream_request.set_agent("dgx");
  auto stream = agents_->StreamAssignments(&stream_context, stream_request);
  v1::SubmitJobResponse submitted;
  v1::JobSpec spec = Spec();
  (*spec.mutable_labels())["sweep"] = "s1";
  ASSERT_TRUE(Submit(spec, &submitted).ok());
  const std::string id = submitted.job_id();
  v1::AssignmentEvent event;
  ASSERT_TRUE(stream->Read(&event));  // placed once the stream is attached
  ASSERT_EQ(event.assign().job_id(), id);
  {
    grpc::ClientContext context;
    v1::UploadSamplesRequest request;
    request.set_agent("dgx");
    for (int it = 1; it <= 5; ++it) {
      v1::IterationSample* s = request.add_samples();
      s->set_job_id(id);
      s->set_attempt(1);
      s->set_iteration(it);
      s->set_step_time_s(0.5);
      s->set_images(2);
      s->set_warmup(it == 1);
    }
    v1::UploadSamplesResponse response;
    ASSERT_TRUE(agents_->UploadSamples(&context, request, &response).ok());
    ASSERT_EQ(response.stored(), 5);
  }
  {
    grpc::ClientContext context;
    v1::ReportStatusRequest request;
    request.set_agent("dgx");
    request.set_job_id(id);
    request.set_attempt(1);
    request.set_master_port(29500);
    v1::RankReport* rank = request.add_ranks();
    rank->set_rank(0);
    rank->set_state(v1::RANK_STATE_SUCCEEDED);
    rank->mutable_summary()->set_measured_iterations(4);
    rank->mutable_summary()->set_measured_images(8);
    rank->mutable_summary()->set_window_s(2.0);
    rank->mutable_summary()->set_step_time_median_s(0.5);
    (*rank->mutable_versions())["torch"] = "2.3.0";
    v1::ReportStatusResponse response;
    ASSERT_TRUE(agents_->ReportStatus(&context, request, &response).ok());
  }

  v1::JobStatus job;
  {
    grpc::ClientContext context;
    v1::GetJobRequest request;
    request.set_job_id(id);
    ASSERT_TRUE(controller_->GetJob(&context, request, &job).ok());
  }
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job.environment().versions().at("driver"), "550.54.15");
  EXPECT_EQ(job.environment().versions().at("torch"), "2.3.0");
  ASSERT_EQ(job.environment().hostnames_size(), 1);
  EXPECT_EQ(job.environment().hostnames(0), "dgx.example");
  ASSERT_EQ(job.rank_devices_size(), 1);
  EXPECT_EQ(job.rank_devices(0).gpu_uuid(), "GPU-0000");
  EXPECT_EQ(job.rank_devices(0).gpu_name(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(job.baseline().verdict(), v1::BASELINE_VERDICT_UNSPECIFIED);

  auto set_baseline = [&](const std::string& job_id, double lower, double upper,
                          v1::Baseline* out) {
    grpc::ClientContext context;
    v1::SetBaselineRequest request;
    request.set_job_id(job_id);
    request.set_lower_tolerance_pct(lower);
    request.set_upper_tolerance_pct(upper);
    return controller_->SetBaseline(&context, request, out);
  };
  v1::Baseline baseline;
  grpc::Status status = set_baseline("job-999999", 0, 0, &baseline);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("job-999999"));
  status = set_baseline(id, 120, 0, &baseline);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("lower_tolerance_pct"));
  {
    grpc::ClientContext context;  // tolerances left unset: the default 5%
    v1::SetBaselineRequest request;
    request.set_job_id(id);
    ASSERT_TRUE(controller_->SetBaseline(&context, request, &baseline).ok());
  }
  EXPECT_EQ(baseline.job_id(), id);
  EXPECT_DOUBLE_EQ(baseline.images_per_second(), 4);
  EXPECT_EQ(baseline.gpu_model(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(baseline.device_kind(), "cuda");
  EXPECT_EQ(baseline.lower_tolerance_pct(), 5);
  {
    grpc::ClientContext context;
    v1::ListBaselinesResponse response;
    ASSERT_TRUE(controller_->ListBaselines(&context, v1::ListBaselinesRequest(), &response).ok());
    ASSERT_EQ(response.baselines_size(), 1);
    EXPECT_EQ(response.baselines(0).job_id(), id);
  }

  auto results = [&](const v1::ResultsRequest& request) {
    grpc::ClientContext context;
    v1::ResultsResponse response;
    EXPECT_TRUE(controller_->Results(&context, request, &response).ok());
    return response;
  };
  v1::ResultsRequest by_gpu;
  by_gpu.set_gpu_model("NVIDIA H100 80GB HBM3");
  (*by_gpu.mutable_labels())["sweep"] = "s1";
  v1::ResultsResponse cells = results(by_gpu);
  ASSERT_EQ(cells.cells_size(), 1);
  const v1::ResultCell& cell = cells.cells(0);
  EXPECT_EQ(cell.runs(), 1);
  EXPECT_EQ(cell.gpu_model(), "NVIDIA H100 80GB HBM3");
  EXPECT_DOUBLE_EQ(cell.median_images_per_second(), 4);
  EXPECT_FALSE(cell.has_cv());
  EXPECT_FALSE(cell.has_ci95_low_images_per_second());
  EXPECT_EQ(cell.baseline().verdict(), v1::BASELINE_VERDICT_WITHIN);
  EXPECT_DOUBLE_EQ(cell.baseline().ratio(), 1);
  EXPECT_FALSE(cell.simulated());
  v1::ResultsRequest other_node;
  other_node.set_node("elsewhere");
  EXPECT_EQ(results(other_node).cells_size(), 0);
  // The same filter over simulated jobs (issue 26): this real job is not one of them.
  v1::ResultsRequest simulated_only = by_gpu;
  simulated_only.set_simulated(true);
  EXPECT_EQ(results(simulated_only).cells_size(), 0);

  {
    grpc::ClientContext context;
    v1::GpuVariabilityRequest request;
    v1::GpuVariabilityResponse response;
    ASSERT_TRUE(controller_->GpuVariability(&context, request, &response).ok());
    EXPECT_EQ(response.threshold_pct(), 5);
    ASSERT_EQ(response.gpus_size(), 1);
    EXPECT_EQ(response.gpus(0).gpu_uuid(), "GPU-0000");
    EXPECT_DOUBLE_EQ(response.gpus(0).normalized_step_time(), 1);
    EXPECT_EQ(response.gpus(0).iterations(), 4);
    EXPECT_FALSE(response.gpus(0).outlier());
  }
  {
    grpc::ClientContext context;
    v1::GpuVariabilityRequest request;
    request.set_threshold_pct(-2);
    v1::GpuVariabilityResponse response;
    grpc::Status bad = controller_->GpuVariability(&context, request, &response);
    EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(bad.error_message(), HasSubstr("threshold_pct"));
  }
  {
    grpc::ClientContext context;
    v1::GetSamplesRequest request;
    request.set_job_id(id);
    request.set_from_iteration(4);
    v1::GetSamplesResponse response;
    ASSERT_TRUE(controller_->GetSamples(&context, request, &response).ok());
    EXPECT_EQ(response.job().id(), id);
    ASSERT_EQ(response.samples_size(), 2);
    EXPECT_EQ(response.samples(0).iteration(), 4);
    EXPECT_DOUBLE_EQ(response.samples(1).step_time_s(), 0.5);
  }
  {
    grpc::ClientContext context;
    v1::GetSamplesRequest request;
    request.set_job_id("job-999999");
    v1::GetSamplesResponse response;
    EXPECT_EQ(controller_->GetSamples(&context, request, &response).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  {  // The diagnosis computed again from the stored data (benchctl diagnose).
    grpc::ClientContext context;
    v1::DiagnoseJobRequest request;
    request.set_job_id(id);
    v1::DiagnoseJobResponse response;
    ASSERT_TRUE(controller_->DiagnoseJob(&context, request, &response).ok());
    EXPECT_EQ(response.job_id(), id);
    EXPECT_TRUE(response.diagnosis().available()) << response.diagnosis().note();
    EXPECT_GT(response.diagnosis().checks_size(), 0);
  }
  {
    grpc::ClientContext context;
    v1::DiagnoseJobRequest request;
    request.set_job_id("job-999999");
    v1::DiagnoseJobResponse response;
    EXPECT_EQ(controller_->DiagnoseJob(&context, request, &response).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  stream_context.TryCancel();
  while (stream->Read(&event)) {
  }
  stream->Finish().IgnoreError();
}

// gRPC's typed callback methods answered these UNIMPLEMENTED with no message (issue 15).
TEST_F(ControllerServiceTest, EveryMethodAnswersUnparsableBytesWithInvalidArgument) {
  std::vector<std::string> methods = EveryMethod();
  EXPECT_THAT(methods, ::testing::Contains("/benchfleet.v1.Controller/SubmitJob"));
  EXPECT_THAT(methods, ::testing::Contains("/benchfleet.v1.Controller/WatchJob"));  // a stream
  EXPECT_THAT(methods, ::testing::Contains("/benchfleet.v1.AgentService/UploadSamples"));
  EXPECT_THAT(methods, ::testing::Contains("/benchfleet.v1.AgentService/RequestCertificate"));
  EXPECT_THAT(methods, ::testing::Contains("/benchfleet.v1.Controller/CreateJoinToken"));
  for (const std::string& method : methods) {
    grpc::Status status = CallRaw(channel_, method, kUnparsable);
    if (method == "/benchfleet.v1.AgentService/RequestCertificate") {
      // Refused over plaintext before anything else (agent_service_test.cc sends it
      // unparsable bytes over TLS).
      EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << method;
      EXPECT_THAT(status.error_message(), HasSubstr("without TLS"));
      continue;
    }
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method;
    EXPECT_THAT(status.error_message(),
                HasSubstr(method + ": the request did not parse as benchfleet.v1."));
    EXPECT_THAT(status.error_message(), HasSubstr("(3 bytes)"));
  }
  // Nothing was half-done: benchd still answers, and has no job.
  grpc::ClientContext context;
  v1::ListJobsResponse list;
  ASSERT_TRUE(controller_->ListJobs(&context, v1::ListJobsRequest(), &list).ok());
  EXPECT_EQ(list.jobs_size(), 0);
}

TEST_F(ControllerServiceTest, RawBytesOfAWellFormedRequestAreServedAsBefore) {
  v1::GetJobRequest request;
  request.set_job_id("job-999999");
  grpc::Status status =
      CallRaw(channel_, "/benchfleet.v1.Controller/GetJob", request.SerializeAsString());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("job-999999"));
  // Zero bytes are the empty request: every field unset.
  EXPECT_TRUE(CallRaw(channel_, "/benchfleet.v1.Controller/ListJobs", "").ok());
}

// A client that half-closes without sending the request message at all.
TEST_F(ControllerServiceTest, ACallWithoutARequestMessageIsInvalidArgument) {
  grpc::GenericStub stub(channel_);
  grpc::CompletionQueue queue;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
      stub.PrepareCall(&context, "/benchfleet.v1.Controller/GetJob", &queue);
  grpc::Status status;
  // One operation at a time, each waited for: start, half-close at once, the status.
  auto wait = [&queue] {
    void* tag = nullptr;
    bool ok = false;
    ASSERT_TRUE(queue.Next(&tag, &ok));
  };
  call->StartCall(nullptr);
  wait();
  call->WritesDone(nullptr);
  wait();
  call->Finish(&status, nullptr);
  wait();
  queue.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) {
  }
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("/benchfleet.v1.Controller/GetJob"));
}

// Security on (bearer tokens on loopback): who calls is decided before the request is
// parsed, so a caller learns nothing about parsing before it is let in.
class SecuredServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_secured_service_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    std::ofstream tokens(dir_ + "/tokens");
    tokens << TokenTable::Hash("view-token") << " view grafana\n"
           << TokenTable::Hash("node-a-token") << " agent node-a\n";
    tokens.close();
    BenchdOptions options;
    options.listen = "127.0.0.1:0";
    options.http = "";
    options.db = dir_ + "/bench.db";
    options.tokens = dir_ + "/tokens";
    auto benchd = Benchd::Start(options);
    ASSERT_TRUE(benchd.ok()) << benchd.status();
    benchd_ = std::move(*benchd);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(benchd_->grpc_port()),
                                   grpc::InsecureChannelCredentials());
  }
  void TearDown() override {
    benchd_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string dir_;
  std::unique_ptr<Benchd> benchd_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(SecuredServiceTest, WithoutCredentialsEveryMethodIsUnauthenticatedWhateverItSends) {
  v1::ListJobsRequest well_formed;
  for (const std::string& method : EveryMethod()) {
    for (const std::string& bytes : {std::string(kUnparsable), well_formed.SerializeAsString()}) {
      grpc::Status status = CallRaw(channel_, method, bytes);
      EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << method;
      EXPECT_THAT(status.error_message(), HasSubstr("no credentials"));
      EXPECT_THAT(status.error_message(), Not(HasSubstr("parse")));
    }
  }
}

TEST_F(SecuredServiceTest, ARoleThatMayNotTakeTheActionIsDeniedBeforeParsing) {
  grpc::Status status =
      CallRaw(channel_, "/benchfleet.v1.Controller/SubmitJob", kUnparsable, "view-token");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  status = CallRaw(channel_, "/benchfleet.v1.AgentService/Heartbeat", kUnparsable, "view-token");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  status = CallRaw(channel_, "/benchfleet.v1.Controller/GetJob", kUnparsable, "node-a-token");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // Allowed to read: now the request's bytes matter.
  status = CallRaw(channel_, "/benchfleet.v1.Controller/GetJob", kUnparsable, "view-token");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(SecuredServiceTest, AnAgentsNodeIsCheckedOnceItsRequestParses) {
  grpc::Status status =
      CallRaw(channel_, "/benchfleet.v1.AgentService/Heartbeat", kUnparsable, "node-a-token");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::HeartbeatRequest other_node;
  other_node.set_agent("node-b");
  status = CallRaw(channel_, "/benchfleet.v1.AgentService/Heartbeat",
                   other_node.SerializeAsString(), "node-a-token");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("node-b"));
}

}  // namespace
}  // namespace bench

namespace bench {
namespace {

// Join tokens through the Controller (security off: the caller is an anonymous admin):
// made, listed without their secret, revoked; bad bounds and unknown ids named.
TEST_F(ControllerServiceTest, JoinTokensAreCreatedListedAndRevoked) {
  v1::CreateJoinTokenRequest create;
  create.set_uses(3);
  create.set_ttl_seconds(3600);
  create.set_description("rack 7");
  v1::CreateJoinTokenResponse created;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(controller_->CreateJoinToken(&context, create, &created).ok());
  }
  EXPECT_THAT(created.token(), ::testing::StartsWith("bj1." + created.info().id() + "."));
  EXPECT_EQ(created.info().uses(), 3);
  EXPECT_EQ(created.info().used(), 0);
  EXPECT_EQ(created.info().expires_unix_seconds() - created.info().created_unix_seconds(), 3600);
  EXPECT_EQ(created.info().description(), "rack 7");
  v1::ListJoinTokensResponse listed;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(controller_->ListJoinTokens(&context, v1::ListJoinTokensRequest(), &listed).ok());
  }
  ASSERT_EQ(listed.tokens_size(), 1);
  EXPECT_EQ(listed.tokens(0).id(), created.info().id());
  const std::string secret = created.token().substr(created.token().rfind('.') + 1);
  EXPECT_EQ(listed.DebugString().find(secret), std::string::npos);
  {
    grpc::ClientContext context;
    v1::RevokeJoinTokenRequest revoke;
    revoke.set_id(created.info().id());
    v1::RevokeJoinTokenResponse revoked;
    ASSERT_TRUE(controller_->RevokeJoinToken(&context, revoke, &revoked).ok());
  }
  {
    grpc::ClientContext context;
    ASSERT_TRUE(controller_->ListJoinTokens(&context, v1::ListJoinTokensRequest(), &listed).ok());
    ASSERT_EQ(listed.tokens_size(), 1);
    EXPECT_TRUE(listed.tokens(0).revoked());
  }
  {
    grpc::ClientContext context;
    v1::RevokeJoinTokenRequest revoke;
    revoke.set_id("nope");
    v1::RevokeJoinTokenResponse revoked;
    grpc::Status status = controller_->RevokeJoinToken(&context, revoke, &revoked);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_THAT(status.error_message(), HasSubstr("nope"));
  }
  {
    grpc::ClientContext context;
    create.set_uses(0);
    grpc::Status status = controller_->CreateJoinToken(&context, create, &created);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("uses"));
  }
}

}  // namespace
}  // namespace bench
