// Issue 24's bootstrap over real gRPC and TLS: benchd in-process on 127.0.0.1:0 with a PKI
// made by deploy/pki's scripts (the fleet's CA, make-signing-ca.sh's sub-CA as
// --agent-signing-cert), an admin making join tokens through the Controller, a join token
// obtaining a certificate that benchd then accepts as the agent's, renewals, the names held
// by live agents, and everything a join token may not do. Also the agent RPCs' counters on
// /metrics after real calls (plaintext benchd with a web port).
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "benchfleet/v1/agent.grpc.pb.h"
#include "benchfleet/v1/controller.grpc.pb.h"
#include "common/x509.h"
#include "server/benchd.h"
#include "server/metrics/agent_rpc_counters.h"
#include "server/test_pki.h"
#include "server/test_secure_benchd.h"
#include "tests/e2e/http_get.h"

namespace bench {
namespace {

namespace v1 = benchfleet::v1;
using test_pki::ReadFile;
using ::testing::HasSubstr;
using ::testing::Not;

std::chrono::system_clock::time_point Deadline() {
  return std::chrono::system_clock::now() + std::chrono::seconds(20);
}

// A key and the certificate chain benchd issued for it.
struct Identity {
  std::string key;
  std::string chain;
};

class BootstrapServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_agent_service_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    test_pki::Run("./make-ca.sh " + dir_);
    test_pki::Run("./make-server-cert.sh " + dir_ + " server DNS:localhost,IP:127.0.0.1");
    test_pki::Run("./make-signing-ca.sh " + dir_);
    test_pki::Run("./make-client-cert.sh " + dir_ + " admin ops");
    submit_token_ = Token("submit alice");
    admin_token_ = Token("admin root");
    ASSERT_FALSE(HasFailure()) << "the PKI could not be made in " << dir_;
    BenchdOptions options = test_pki::SecureBenchdOptions(dir_);
    options.agent_signing_cert = dir_ + "/agent-signer.pem";
    options.agent_signing_key = dir_ + "/agent-signer.key";
    options.agent_cert_ttl = absl::Hours(2);
    auto benchd = Benchd::Start(options);
    ASSERT_TRUE(benchd.ok()) << benchd.status();
    benchd_ = std::move(*benchd);
  }
  void TearDown() override {
    benchd_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string Token(const std::string& role_and_name) {
    return test_pki::Script("new-token.sh", role_and_name + " '" + dir_ + "/tokens'");
  }

  // A TLS channel trusting the fleet's CA, presenting `id` when given.
  std::shared_ptr<grpc::Channel> Channel(const Identity* id = nullptr) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadFile(dir_ + "/ca.pem");
    if (id != nullptr) {
      ssl.pem_cert_chain = id->chain;
      ssl.pem_private_key = id->key;
    }
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    return grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(benchd_->grpc_port()),
                                     grpc::SslCredentials(ssl), args);
  }

  grpc::Status CreateJoinToken(const std::string& bearer, int uses, bool allow_replace,
                               v1::CreateJoinTokenResponse* created) {
    auto controller = v1::Controller::NewStub(Channel());
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    context.AddMetadata("authorization", "Bearer " + bearer);
    v1::CreateJoinTokenRequest request;
    request.set_uses(uses);
    request.set_ttl_seconds(3600);
    request.set_allow_replace(allow_replace);
    request.set_description("test");
    return controller->CreateJoinToken(&context, request, created);
  }
  std::string MustCreateJoinToken(int uses, bool allow_replace = false) {
    v1::CreateJoinTokenResponse created;
    grpc::Status status = CreateJoinToken(admin_token_, uses, allow_replace, &created);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return created.token();
  }
  v1::JoinToken OnlyToken() {
    auto controller = v1::Controller::NewStub(Channel());
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    context.AddMetadata("authorization", "Bearer " + admin_token_);
    v1::ListJoinTokensResponse listed;
    EXPECT_TRUE(controller->ListJoinTokens(&context, v1::ListJoinTokensRequest(), &listed).ok());
    EXPECT_EQ(listed.tokens_size(), 1);
    return listed.tokens_size() > 0 ? listed.tokens(0) : v1::JoinToken();
  }

  // RequestCertificate for `node`, with a join token (bearer) or as `as` (an identity);
  // a fresh key unless `key` is given. On success `out` holds the key and the chain.
  grpc::Status Request(const std::string& node, const std::string& bearer,
                       const Identity* as = nullptr, Identity* out = nullptr) {
    auto agents = v1::AgentService::NewStub(Channel(as));
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    if (!bearer.empty()) context.AddMetadata("authorization", "Bearer " + bearer);
    Identity id;
    id.key = *x509::MakeKey();
    v1::RequestCertificateRequest request;
    request.set_node(node);
    request.set_csr_pem(*x509::MakeCsr(id.key, node));
    v1::RequestCertificateResponse response;
    grpc::Status status = agents->RequestCertificate(&context, request, &response);
    if (status.ok()) {
      id.chain = response.certificate_chain_pem();
      EXPECT_LT(response.not_before_unix_seconds(), response.not_after_unix_seconds());
      EXPECT_NEAR(static_cast<double>(response.not_after_unix_seconds() -
                                      response.not_before_unix_seconds()),
                  2 * 3600 + 300, 5);
      if (out != nullptr) *out = id;
    }
    return status;
  }
  grpc::Status Register(const Identity& id, const std::string& node) {
    auto agents = v1::AgentService::NewStub(Channel(&id));
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    v1::RegisterRequest request;
    request.mutable_inventory()->set_name(node);
    request.mutable_inventory()->set_address("127.0.0.1");
    request.mutable_inventory()->set_cpu_slots(2);
    v1::RegisterResponse response;
    return agents->Register(&context, request, &response);
  }

  std::string dir_;
  std::string submit_token_, admin_token_;
  std::unique_ptr<Benchd> benchd_;
};

TEST_F(BootstrapServiceTest, AJoinTokenBootstrapsAnAgentBenchdThenAccepts) {
  const std::string token = MustCreateJoinToken(1);
  Identity node_b;
  grpc::Status status = Request("node-b", token, nullptr, &node_b);
  ASSERT_TRUE(status.ok()) << status.error_message();
  absl::StatusOr<std::vector<x509::CertificateInfo>> chain = x509::ReadCertificates(node_b.chain);
  ASSERT_TRUE(chain.ok());
  EXPECT_EQ((*chain)[0].uris, std::vector<std::string>{"spiffe://benchfleet/agent/node-b"});
  // benchd takes it as node-b's certificate, for node-b only.
  EXPECT_TRUE(Register(node_b, "node-b").ok());
  EXPECT_EQ(Register(node_b, "node-c").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(OnlyToken().used(), 1);
  // Used up: refused as an unknown token is, with one message.
  grpc::Status used_up = Request("node-c", token);
  EXPECT_EQ(used_up.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::Status unknown = Request("node-c", "bj1.0123456789abcdef." + std::string(64, 'a'));
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(used_up.error_message(), unknown.error_message());
  EXPECT_THAT(used_up.error_message(), HasSubstr("join token refused"));
}

// RFC 6750: the scheme in any letter case, for a join token as for a --tokens one.
TEST_F(BootstrapServiceTest, AJoinTokenWorksWithTheSchemeInAnyCase) {
  const std::string token = MustCreateJoinToken(1);
  auto agents = v1::AgentService::NewStub(Channel());
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  context.AddMetadata("authorization", "bEARER " + token);
  const std::string key = *x509::MakeKey();
  v1::RequestCertificateRequest request;
  request.set_node("node-b");
  request.set_csr_pem(*x509::MakeCsr(key, "node-b"));
  v1::RequestCertificateResponse response;
  grpc::Status status = agents->RequestCertificate(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(OnlyToken().used(), 1);
}

TEST_F(BootstrapServiceTest, AJoinTokenCanCallNothingElse) {
  const std::string token = MustCreateJoinToken(5);
  auto controller = v1::Controller::NewStub(Channel());
  auto agents = v1::AgentService::NewStub(Channel());
  auto expect_denied = [&](const char* what, auto call) {
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    context.AddMetadata("authorization", "Bearer " + token);
    grpc::Status status = call(&context);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << what;
    EXPECT_THAT(status.error_message(), HasSubstr("join")) << what;
  };
  expect_denied("ListJobs", [&](grpc::ClientContext* c) {
    v1::ListJobsResponse r;
    return controller->ListJobs(c, v1::ListJobsRequest(), &r);
  });
  expect_denied("SubmitJob", [&](grpc::ClientContext* c) {
    v1::SubmitJobResponse r;
    return controller->SubmitJob(c, v1::SubmitJobRequest(), &r);
  });
  expect_denied("CreateJoinToken", [&](grpc::ClientContext* c) {
    v1::CreateJoinTokenRequest q;
    q.set_uses(1);
    q.set_ttl_seconds(60);
    v1::CreateJoinTokenResponse r;
    return controller->CreateJoinToken(c, q, &r);
  });
  expect_denied("ListJoinTokens", [&](grpc::ClientContext* c) {
    v1::ListJoinTokensResponse r;
    return controller->ListJoinTokens(c, v1::ListJoinTokensRequest(), &r);
  });
  expect_denied("Register", [&](grpc::ClientContext* c) {
    v1::RegisterRequest q;
    q.mutable_inventory()->set_name("node-b");
    q.mutable_inventory()->set_cpu_slots(1);
    v1::RegisterResponse r;
    return agents->Register(c, q, &r);
  });
  expect_denied("Heartbeat", [&](grpc::ClientContext* c) {
    v1::HeartbeatRequest q;
    q.set_agent("node-b");
    v1::HeartbeatResponse r;
    return agents->Heartbeat(c, q, &r);
  });
  EXPECT_EQ(OnlyToken().used(), 0);
  // Unparsable bytes from a join token: INVALID_ARGUMENT naming the method, nothing spent.
  grpc::GenericStub stub(Channel());
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  context.AddMetadata("authorization", "Bearer " + token);
  grpc::Slice slice(std::string("\xff\xff\xff"));
  grpc::ByteBuffer request(&slice, 1), response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/benchfleet.v1.AgentService/RequestCertificate", grpc::StubOptions(),
                 &request, &response, [&done](grpc::Status s) { done.set_value(s); });
  grpc::Status status = done.get_future().get();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("RequestCertificate"));
  EXPECT_EQ(OnlyToken().used(), 0);
}

TEST_F(BootstrapServiceTest, LiveNamesRenewalsAndReplacing) {
  const std::string token = MustCreateJoinToken(3);
  Identity node_b;
  ASSERT_TRUE(Request("node-b", token, nullptr, &node_b).ok());
  ASSERT_TRUE(Register(node_b, "node-b").ok());
  // node-b is live: a join token cannot take it.
  grpc::Status taken = Request("node-b", token);
  EXPECT_EQ(taken.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_THAT(taken.error_message(), HasSubstr("node-b"));
  // Its own certificate renews it (no token needed, none spent), for node-b only.
  Identity renewed;
  grpc::Status renew = Request("node-b", "", &node_b, &renewed);
  ASSERT_TRUE(renew.ok()) << renew.error_message();
  EXPECT_TRUE(Register(renewed, "node-b").ok());
  grpc::Status other = Request("node-c", "", &node_b);
  EXPECT_EQ(other.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(other.error_message(), HasSubstr("node-c"));
  EXPECT_EQ(OnlyToken().used(), 1);
  // An admin's certificate gets none.
  Identity ops{ReadFile(dir_ + "/ops.key"), ReadFile(dir_ + "/ops.pem")};
  EXPECT_EQ(Request("ops", "", &ops).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // A token made to replace may take the live name.
  const std::string replacing = MustCreateJoinToken(1, /*allow_replace=*/true);
  EXPECT_TRUE(Request("node-b", replacing).ok());
}

TEST_F(BootstrapServiceTest, OnlyAdminsManageJoinTokensAndARevokedOneIsRefused) {
  v1::CreateJoinTokenResponse created;
  EXPECT_EQ(CreateJoinToken(submit_token_, 1, false, &created).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // An admin certificate may.
  {
    Identity ops{ReadFile(dir_ + "/ops.key"), ReadFile(dir_ + "/ops.pem")};
    auto controller = v1::Controller::NewStub(Channel(&ops));
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    v1::CreateJoinTokenRequest request;
    request.set_uses(2);
    request.set_ttl_seconds(600);
    ASSERT_TRUE(controller->CreateJoinToken(&context, request, &created).ok());
  }
  auto controller = v1::Controller::NewStub(Channel());
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  context.AddMetadata("authorization", "Bearer " + admin_token_);
  v1::RevokeJoinTokenRequest revoke;
  revoke.set_id(created.info().id());
  v1::RevokeJoinTokenResponse revoked;
  ASSERT_TRUE(controller->RevokeJoinToken(&context, revoke, &revoked).ok());
  grpc::Status refused = Request("node-b", created.token());
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(refused.error_message(), HasSubstr("join token refused"));
  EXPECT_TRUE(OnlyToken().revoked());
  EXPECT_EQ(OnlyToken().used(), 0);
}

TEST(BootstrapPlaintextTest, RequestCertificateNeedsTls) {
  char pattern[] = "/tmp/bench_bootstrap_plain_XXXXXX";
  const std::string dir = mkdtemp(pattern);
  BenchdOptions options;
  options.listen = "127.0.0.1:0";
  options.http = "";
  options.db = dir + "/bench.db";
  auto benchd = Benchd::Start(options);
  ASSERT_TRUE(benchd.ok()) << benchd.status();
  auto agents = v1::AgentService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string((*benchd)->grpc_port()), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  v1::RequestCertificateRequest request;
  request.set_node("node-b");
  v1::RequestCertificateResponse response;
  grpc::Status status = agents->RequestCertificate(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("without TLS"));
  benchd->reset();
  std::filesystem::remove_all(dir);
}

// /metrics (bench_agent_rpcs_total, bench_upload_batch_samples) after real agent calls
// over gRPC to benchd in-process: each method's calls by the code they were answered, and
// each upload's batch sizes, iteration samples and GPU readings apart.
TEST(AgentRpcMetricsTest, EachCallIsCountedByMethodAndCodeWithItsBatchSizes) {
  char pattern[] = "/tmp/bench_agent_rpc_metrics_XXXXXX";
  const std::string dir = mkdtemp(pattern);
  BenchdOptions options;
  options.listen = "127.0.0.1:0";
  options.http = "127.0.0.1:0";
  options.db = dir + "/bench.db";
  auto benchd = Benchd::Start(options);
  ASSERT_TRUE(benchd.ok()) << benchd.status();
  const int http_port = (*benchd)->http_port();
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string((*benchd)->grpc_port()),
                                     grpc::InsecureChannelCredentials());
  auto agents = v1::AgentService::NewStub(channel);
  auto metrics = [http_port] {
    absl::StatusOr<std::string> body = testing::HttpGet(http_port, "/metrics");
    EXPECT_TRUE(body.ok()) << body.status();
    return body.ok() ? *body : std::string();
  };
  // Before any call: every method's OK series at 0, no other code, empty histograms.
  std::string before = metrics();
  EXPECT_THAT(before, HasSubstr("# TYPE bench_agent_rpcs_total counter\n"));
  EXPECT_THAT(before, HasSubstr("bench_agent_rpcs_total{method=\"Heartbeat\",code=\"OK\"} 0\n"));
  EXPECT_THAT(before,
              HasSubstr("bench_agent_rpcs_total{method=\"RequestCertificate\",code=\"OK\"} 0\n"));
  EXPECT_THAT(before, Not(HasSubstr("code=\"UNAVAILABLE\"")));
  EXPECT_THAT(before, HasSubstr("# TYPE bench_upload_batch_samples histogram\n"));
  EXPECT_THAT(before, HasSubstr("bench_upload_batch_samples_count{kind=\"iteration\"} 0\n"));

  auto call = [](auto method) {
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    return method(&context);
  };
  ASSERT_TRUE(call([&](grpc::ClientContext* c) {
                v1::RegisterRequest q;
                q.mutable_inventory()->set_name("node-m");
                q.mutable_inventory()->set_address("127.0.0.1");
                q.mutable_inventory()->set_cpu_slots(2);
                v1::RegisterResponse r;
                return agents->Register(c, q, &r);
              }).ok());
  grpc::ClientContext stream_context;
  v1::StreamAssignmentsRequest stream_request;
  stream_request.set_agent("node-m");
  auto stream = agents->StreamAssignments(&stream_context, stream_request);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(call([&](grpc::ClientContext* c) {
                  v1::HeartbeatRequest q;
                  q.set_agent("node-m");
                  v1::HeartbeatResponse r;
                  return agents->Heartbeat(c, q, &r);
                }).ok());
  }
  // Two uploads: 5 samples and 3 readings, then 40 samples alone (for a job benchd does
  // not know: refused sample by sample, the call itself answered OK).
  for (auto [samples, readings] : {std::pair{5, 3}, std::pair{40, 0}}) {
    grpc::Status uploaded =
        call([&, samples = samples, readings = readings](grpc::ClientContext* c) {
          v1::UploadSamplesRequest q;
          q.set_agent("node-m");
          for (int i = 1; i <= samples; ++i) {
            v1::IterationSample* s = q.add_samples();
            s->set_job_id("job-none");
            s->set_attempt(1);
            s->set_iteration(i);
            s->set_step_time_s(0.1);
            s->set_images(8);
          }
          for (int i = 1; i <= readings; ++i) {
            v1::GpuSample* g = q.add_gpu_samples();
            g->set_job_id("job-none");
            g->set_attempt(1);
            g->set_seq(i);
          }
          v1::UploadSamplesResponse r;
          return agents->UploadSamples(c, q, &r);
        });
    ASSERT_TRUE(uploaded.ok()) << uploaded.error_message();
  }
  // Refusals are counted by their code: a report for a job benchd does not know, unparsable
  // bytes, a certificate request without TLS.
  grpc::Status report = call([&](grpc::ClientContext* c) {
    v1::ReportStatusRequest q;
    q.set_agent("node-m");
    q.set_job_id("job-none");
    q.set_attempt(1);
    v1::ReportStatusResponse r;
    return agents->ReportStatus(c, q, &r);
  });
  ASSERT_FALSE(report.ok());
  grpc::GenericStub raw(channel);
  for (int i = 0; i < 2; ++i) {
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    grpc::Slice slice(std::string("\xff\xff\xff"));
    grpc::ByteBuffer request(&slice, 1), response;
    std::promise<grpc::Status> done;
    raw.UnaryCall(&context, "/benchfleet.v1.AgentService/Heartbeat", grpc::StubOptions(), &request,
                  &response, [&done](grpc::Status s) { done.set_value(s); });
    ASSERT_EQ(done.get_future().get().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  EXPECT_EQ(call([&](grpc::ClientContext* c) {
              v1::RequestCertificateRequest q;
              q.set_node("node-m");
              v1::RequestCertificateResponse r;
              return agents->RequestCertificate(c, q, &r);
            }).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // The stream is counted as it opens, which the client does not see: wait for it.
  const std::string stream_opened =
      "bench_agent_rpcs_total{method=\"StreamAssignments\",code=\"OK\"} 1\n";
  std::string text = metrics();
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       text.find(stream_opened) == std::string::npos && std::chrono::steady_clock::now() < deadline;
       text = metrics()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_THAT(text, HasSubstr(stream_opened));
  EXPECT_THAT(text, HasSubstr("bench_agent_rpcs_total{method=\"Register\",code=\"OK\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("bench_agent_rpcs_total{method=\"Heartbeat\",code=\"OK\"} 3\n"));
  EXPECT_THAT(
      text,
      HasSubstr("bench_agent_rpcs_total{method=\"Heartbeat\",code=\"INVALID_ARGUMENT\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("bench_agent_rpcs_total{method=\"UploadSamples\",code=\"OK\"} 2\n"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat(
                        "bench_agent_rpcs_total{method=\"ReportStatus\",code=\"",
                        std::string(AgentRpcCounters::CodeName(report.error_code())), "\"} 1\n")));
  EXPECT_THAT(text, HasSubstr("bench_agent_rpcs_total{method=\"ReportStatus\",code=\"OK\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("bench_agent_rpcs_total{method=\"RequestCertificate\",code="
                              "\"UNAVAILABLE\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("bench_agent_rpcs_total{method=\"Deregister\",code=\"OK\"} 0\n"));
  // Iteration batches of 5 and 40; one GPU batch of 3 (the second upload carried none).
  EXPECT_THAT(text, HasSubstr("bench_upload_batch_samples_count{kind=\"iteration\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("bench_upload_batch_samples_sum{kind=\"iteration\"} 45\n"));
  EXPECT_THAT(text,
              HasSubstr("bench_upload_batch_samples_bucket{kind=\"iteration\",le=\"5\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("bench_upload_batch_samples_bucket{kind=\"iteration\",le=\"20\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("bench_upload_batch_samples_bucket{kind=\"iteration\",le=\"50\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("bench_upload_batch_samples_count{kind=\"gpu\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("bench_upload_batch_samples_sum{kind=\"gpu\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("bench_upload_batch_samples_bucket{kind=\"gpu\",le=\"2\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("bench_upload_batch_samples_bucket{kind=\"gpu\",le=\"5\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("bench_upload_batch_samples_bucket{kind=\"gpu\",le=\"+Inf\"} 1\n"));

  ASSERT_TRUE(call([&](grpc::ClientContext* c) {
                v1::DeregisterRequest q;
                q.set_agent("node-m");
                q.set_reason("test");
                v1::DeregisterResponse r;
                return agents->Deregister(c, q, &r);
              }).ok());
  EXPECT_THAT(metrics(),
              HasSubstr("bench_agent_rpcs_total{method=\"Deregister\",code=\"OK\"} 1\n"));
  stream_context.TryCancel();
  stream->Finish();
  benchd->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace bench
