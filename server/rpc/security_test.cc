// benchd in-process on 127.0.0.1:0 with real TLS, client certificates and bearer tokens,
// driven over real gRPC: who may do what (server/auth/auth.h), and what the TLS layer refuses.
// The PKI and the tokens are made at test time by deploy/pki's scripts, the ones operators
// use (BENCH_SOURCE_DIR is the source tree).
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <gtest/gtest.h>

#include "benchfleet/v1/agent.grpc.pb.h"
#include "benchfleet/v1/controller.grpc.pb.h"
#include "server/benchd.h"
#include "server/test_pki.h"
#include "server/test_secure_benchd.h"

namespace bench {
namespace {

namespace v1 = benchfleet::v1;
using test_pki::ReadFile;
using ::testing::HasSubstr;

// grpc.health.v1.Health's messages written by hand, as a client without the .proto would:
// a HealthCheckRequest is field 1, the service name; a HealthCheckResponse field 1, the
// status (1 SERVING, 2 NOT_SERVING).
constexpr char kServing[] = "\x08\x01";
constexpr char kNotServing[] = "\x08\x02";

// Every name a probe may ask for: "" (the server) and our two services.
std::vector<std::string> ServedNames() {
  return {"", v1::Controller::service_full_name(), v1::AgentService::service_full_name()};
}

grpc::ByteBuffer HealthRequest(const std::string& service) {
  std::string bytes;
  if (!service.empty()) {
    bytes.push_back('\x0a');  // field 1, length-delimited; names here are < 128 bytes
    bytes.push_back(static_cast<char>(service.size()));
    bytes += service;
  }
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

std::string Bytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return "<unreadable>";
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return bytes;
}

// grpc.health.v1.Health/Check for `service`; `response` gets the answer's bytes.
grpc::Status Check(const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
                   std::string* response) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::ByteBuffer request = HealthRequest(service), answer;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &answer,
                 [&done](grpc::Status status) { done.set_value(std::move(status)); });
  grpc::Status status = done.get_future().get();
  *response = status.ok() ? Bytes(answer) : "";
  return status;
}

// One grpc.health.v1.Health/Watch stream (server streaming), on its own completion queue.
class Watch {
 public:
  Watch(const std::shared_ptr<grpc::Channel>& channel, const std::string& service)
      : stub_(channel) {
    call_ = stub_.PrepareCall(&context_, "/grpc.health.v1.Health/Watch", &queue_);
    call_->StartCall(Tag(1));
    if (!Wait(1)) return;
    call_->Write(HealthRequest(service), Tag(2));
    if (!Wait(2)) return;
    call_->WritesDone(Tag(3));
    started_ = Wait(3);
  }
  ~Watch() {
    context_.TryCancel();
    grpc::Status status;
    call_->Finish(&status, Tag(5));
    queue_.Shutdown();
    void* tag;
    bool ok;
    while (queue_.Next(&tag, &ok)) {
    }
  }
  bool started() const { return started_; }
  // The next status the stream sends, as bytes; "" if none came within 30 s.
  std::string Next() {
    grpc::ByteBuffer message;
    call_->Read(&message, Tag(4));
    return Wait(4) ? Bytes(message) : "";
  }

 private:
  static void* Tag(intptr_t n) { return reinterpret_cast<void*>(n); }
  // Whether operation `n` completed successfully within 30 s.
  bool Wait(intptr_t n) {
    void* tag = nullptr;
    bool ok = false;
    auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(30);
    if (queue_.AsyncNext(&tag, &ok, deadline) != grpc::CompletionQueue::GOT_EVENT) return false;
    return tag == Tag(n) && ok;
  }

  grpc::GenericStub stub_;
  grpc::ClientContext context_;
  grpc::CompletionQueue queue_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call_;
  bool started_ = false;
};

class SecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_security_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    test_pki::Script("make-ca.sh", dir_);
    test_pki::Script("make-server-cert.sh", dir_ + " server DNS:localhost,IP:127.0.0.1");
    test_pki::Script("make-client-cert.sh", dir_ + " agent node-a");
    test_pki::Script("make-client-cert.sh", dir_ + " admin ops");
    // The same identity as ops, signed by another CA: foreign/ops.pem.
    test_pki::Script("make-ca.sh", dir_ + "/foreign");
    test_pki::Script("make-client-cert.sh", dir_ + "/foreign admin ops");
    const std::string tokens = dir_ + "/tokens";
    view_token_ = test_pki::Script("new-token.sh", "view grafana " + tokens);
    alice_token_ = test_pki::Script("new-token.sh", "submit alice " + tokens);
    bob_token_ = test_pki::Script("new-token.sh", "submit bob " + tokens);
    admin_token_ = test_pki::Script("new-token.sh", "admin root " + tokens);
    ASSERT_FALSE(HasFailure()) << "the PKI could not be made in " << dir_;
    BenchdOptions options = test_pki::SecureBenchdOptions(dir_);
    options.cert_refresh = absl::Seconds(1);
    auto benchd = Benchd::Start(options);
    ASSERT_TRUE(benchd.ok()) << benchd.status();
    benchd_ = std::move(*benchd);
  }
  void TearDown() override {
    benchd_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A channel trusting `ca`, with the client cert `cert` when not empty.
  std::shared_ptr<grpc::Channel> Channel(const std::string& cert = "",
                                         const std::string& ca = "ca") {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadFile(dir_ + "/" + ca + ".pem");
    if (!cert.empty()) {
      ssl.pem_cert_chain = ReadFile(dir_ + "/" + cert + ".pem");
      ssl.pem_private_key = ReadFile(dir_ + "/" + cert + ".key");
    }
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    return grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(benchd_->grpc_port()),
                                     grpc::SslCredentials(ssl), args);
  }
  static void Bearer(grpc::ClientContext* context, const std::string& token) {
    context->AddMetadata("authorization", "Bearer " + token);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  }
  grpc::Status RegisterAs(const std::string& cert, const std::string& node) {
    auto agents = v1::AgentService::NewStub(Channel(cert));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::RegisterRequest request;
    request.mutable_inventory()->set_name(node);
    request.mutable_inventory()->set_address("127.0.0.1");
    request.mutable_inventory()->set_cpu_slots(4);
    v1::RegisterResponse response;
    return agents->Register(&context, request, &response);
  }
  grpc::Status SubmitAs(const std::string& token, std::string* job_id) {
    auto controller = v1::Controller::NewStub(Channel());
    grpc::ClientContext context;
    Bearer(&context, token);
    v1::SubmitJobRequest request;
    v1::JobSpec* spec = request.mutable_spec();
    spec->set_model("resnet50");
    spec->set_devices(1);
    spec->set_precision(v1::PRECISION_FP32);
    spec->set_batch_size(2);
    spec->set_iterations(5);
    spec->set_warmup_iterations(1);
    spec->set_image_size(64);
    v1::SubmitJobResponse response;
    grpc::Status status = controller->SubmitJob(&context, request, &response);
    *job_id = response.job_id();
    return status;
  }
  grpc::Status CancelAs(const std::string& token, const std::string& job_id) {
    auto controller = v1::Controller::NewStub(Channel());
    grpc::ClientContext context;
    Bearer(&context, token);
    v1::CancelJobRequest request;
    request.set_job_id(job_id);
    v1::JobStatus response;
    return controller->CancelJob(&context, request, &response);
  }

  std::string dir_;
  std::string view_token_, alice_token_, bob_token_, admin_token_;
  std::unique_ptr<Benchd> benchd_;
};

TEST_F(SecurityTest, NoCredentialIsUnauthenticated) {
  auto controller = v1::Controller::NewStub(Channel());
  grpc::ClientContext context;
  v1::ListJobsResponse response;
  grpc::Status status = controller->ListJobs(&context, v1::ListJobsRequest(), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("no credentials"));
  grpc::ClientContext unknown;
  Bearer(&unknown, "not-a-token");
  EXPECT_EQ(controller->ListJobs(&unknown, v1::ListJobsRequest(), &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(SecurityTest, TheBearerSchemeIsCaseInsensitive) {
  auto controller = v1::Controller::NewStub(Channel());
  for (const char* scheme : {"Bearer ", "bearer ", "BEARER ", "bEaReR "}) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", scheme + view_token_);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ListJobsResponse response;
    grpc::Status status = controller->ListJobs(&context, v1::ListJobsRequest(), &response);
    EXPECT_TRUE(status.ok()) << "\"" << scheme << "\": " << status.error_message();
  }
  grpc::ClientContext other;
  other.AddMetadata("authorization", "Basic " + view_token_);
  v1::ListJobsResponse response;
  EXPECT_EQ(controller->ListJobs(&other, v1::ListJobsRequest(), &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(SecurityTest, RolesDecideWhoCancels) {
  ASSERT_TRUE(RegisterAs("node-a", "node-a").ok());
  std::string alice_job, bob_job, view_job;
  ASSERT_TRUE(SubmitAs(alice_token_, &alice_job).ok());
  ASSERT_TRUE(SubmitAs(bob_token_, &bob_job).ok());
  grpc::Status view_submit = SubmitAs(view_token_, &view_job);
  EXPECT_EQ(view_submit.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  grpc::Status view_cancel = CancelAs(view_token_, alice_job);
  EXPECT_EQ(view_cancel.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(view_cancel.error_message(), HasSubstr("grafana"));
  EXPECT_EQ(CancelAs(alice_token_, bob_job).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(CancelAs(alice_token_, alice_job).ok());
  EXPECT_TRUE(CancelAs(admin_token_, bob_job).ok());
  // Reads with a view token; the job records its submitter.
  auto controller = v1::Controller::NewStub(Channel());
  grpc::ClientContext context;
  Bearer(&context, view_token_);
  v1::GetJobRequest get;
  get.set_job_id(alice_job);
  v1::JobStatus job;
  ASSERT_TRUE(controller->GetJob(&context, get, &job).ok());
  EXPECT_EQ(job.submitted_by(), "alice");
}

TEST_F(SecurityTest, AgentCertActsOnlyForItsNode) {
  grpc::Status other = RegisterAs("node-a", "node-b");
  EXPECT_EQ(other.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(other.error_message(), HasSubstr("node-b"));
  EXPECT_TRUE(RegisterAs("node-a", "node-a").ok());
  // An admin certificate is not an agent's.
  EXPECT_EQ(RegisterAs("ops", "ops").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // A token cannot act as an agent either.
  auto agents = v1::AgentService::NewStub(Channel());
  grpc::ClientContext context;
  Bearer(&context, admin_token_);
  v1::HeartbeatRequest heartbeat;
  heartbeat.set_agent("node-a");
  v1::HeartbeatResponse response;
  EXPECT_EQ(agents->Heartbeat(&context, heartbeat, &response).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // The agent cannot submit.
  auto controller = v1::Controller::NewStub(Channel("node-a"));
  grpc::ClientContext submit;
  submit.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::SubmitJobRequest request;
  v1::SubmitJobResponse submitted;
  EXPECT_EQ(controller->SubmitJob(&submit, request, &submitted).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(SecurityTest, ForeignCaCertIsRefusedByTheHandshake) {
  // TLS refuses it before any RPC runs: the client sees UNAVAILABLE, not UNAUTHENTICATED.
  auto controller = v1::Controller::NewStub(Channel("foreign/ops"));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ListJobsResponse response;
  EXPECT_EQ(controller->ListJobs(&context, v1::ListJobsRequest(), &response).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

// Without a credential, for the empty name and for each of our services by its .proto
// name (grpc-health-probe and Kubernetes' gRPC probes ask by name); a name benchd does
// not serve is NOT_FOUND.
TEST_F(SecurityTest, HealthAnswersEveryServedNameWithoutCredentials) {
  for (const std::string& name : ServedNames()) {
    std::string response;
    grpc::Status status = Check(Channel(), name, &response);
    ASSERT_TRUE(status.ok()) << "\"" << name << "\": " << status.error_code() << " "
                             << status.error_message();
    EXPECT_EQ(response, std::string(kServing, 2)) << "\"" << name << "\"";
  }
  std::string response;
  EXPECT_EQ(Check(Channel(), "benchfleet.v1.NoSuchService", &response).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

// Every served name turns NOT_SERVING as soon as benchd starts shutting down.
TEST_F(SecurityTest, HealthTurnsNotServingForEveryNameWhenBenchdShutsDown) {
  std::vector<std::unique_ptr<Watch>> watches;
  for (const std::string& name : ServedNames()) {
    watches.push_back(std::make_unique<Watch>(Channel(), name));
    ASSERT_TRUE(watches.back()->started()) << "\"" << name << "\"";
    EXPECT_EQ(watches.back()->Next(), std::string(kServing, 2)) << "\"" << name << "\"";
  }
  std::thread stopper([this] { benchd_->Shutdown(); });
  for (size_t i = 0; i < watches.size(); ++i) {
    EXPECT_EQ(watches[i]->Next(), std::string(kNotServing, 2)) << "\"" << ServedNames()[i] << "\"";
  }
  watches.clear();  // cancels the streams, so that gRPC's shutdown need not wait for them
  stopper.join();
}

TEST_F(SecurityTest, RotatedServerCertIsServedWithoutRestart) {
  auto peer_cert = [this] {
    auto channel = Channel("", "ca");
    auto controller = v1::Controller::NewStub(channel);
    grpc::ClientContext context;
    Bearer(&context, view_token_);
    v1::ListJobsResponse response;
    EXPECT_TRUE(controller->ListJobs(&context, v1::ListJobsRequest(), &response).ok());
    auto auth = context.auth_context();
    auto pem = auth->FindPropertyValues("x509_pem_cert");
    return pem.empty() ? std::string() : std::string(pem[0].data(), pem[0].size());
  };
  std::string before = peer_cert();
  ASSERT_FALSE(before.empty());
  test_pki::Script("make-server-cert.sh", dir_ + " server2 DNS:localhost,IP:127.0.0.1");
  std::filesystem::copy_file(dir_ + "/server2.key", dir_ + "/server.key",
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(dir_ + "/server2.pem", dir_ + "/server.pem",
                             std::filesystem::copy_options::overwrite_existing);
  std::string after;
  for (int i = 0; i < 50 && (after.empty() || after == before); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    after = peer_cert();
  }
  EXPECT_NE(after, before);
  EXPECT_EQ(after, ReadFile(dir_ + "/server2.pem"));
}

}  // namespace
}  // namespace bench
