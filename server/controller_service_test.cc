// benchd in-process on 127.0.0.1:0 with a real SQLite file, driven over real gRPC.
#include <unistd.h>

#include <filesystem>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "benchfleet/v1/agent.grpc.pb.h"
#include "benchfleet/v1/controller.grpc.pb.h"
#include "server/benchd.h"

namespace bench {
namespace {

namespace v1 = benchfleet::v1;
using ::testing::HasSubstr;

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
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(benchd_->grpc_port()),
                                       grpc::InsecureChannelCredentials());
    controller_ = v1::Controller::NewStub(channel);
    agents_ = v1::AgentService::NewStub(channel);
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

}  // namespace
}  // namespace bench
