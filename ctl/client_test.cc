// Client: RpcError's mapping, and that Call sets the deadline and Watch stops on request,
// against an in-process Controller on 127.0.0.1:0.
#include "ctl/client.h"

#include <fstream>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include <grpcpp/grpcpp.h>

namespace bench::ctl {
namespace {

namespace v1 = benchfleet::v1;
using ::testing::HasSubstr;

// GetJob answers after `delay`; WatchJob sends QUEUED, RUNNING, then SUCCEEDED.
class SlowController final : public v1::Controller::Service {
 public:
  explicit SlowController(absl::Duration delay) : delay_(delay) {}
  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest* request,
                      v1::JobStatus* response) override {
    absl::SleepFor(delay_);
    response->set_id(request->job_id());
    return grpc::Status::OK;
  }
  grpc::Status WatchJob(grpc::ServerContext*, const v1::WatchJobRequest*,
                        grpc::ServerWriter<v1::JobStatus>* writer) override {
    for (v1::JobState state :
         {v1::JOB_STATE_QUEUED, v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED}) {
      v1::JobStatus job;
      job.set_state(state);
      writer->Write(job);
    }
    return grpc::Status::OK;
  }

 private:
  absl::Duration delay_;
};

struct Served {
  explicit Served(absl::Duration delay) : service(delay) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    address = "127.0.0.1:" + std::to_string(port);
  }
  ~Served() { server->Shutdown(); }
  SlowController service;
  std::unique_ptr<grpc::Server> server;
  std::string address;
};

TEST(ClientTest, CallAnswersAndSetsTheDeadline) {
  Served served(absl::Milliseconds(300));
  std::unique_ptr<Client> client = Client::Dial(served.address);
  v1::GetJobRequest request;
  request.set_job_id("j-1");
  absl::StatusOr<v1::JobStatus> job = client->Call(&Client::Stub::GetJob, request);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->id(), "j-1");

  auto stub = v1::Controller::NewStub(
      grpc::CreateChannel(served.address, grpc::InsecureChannelCredentials()));
  Client hasty(stub.get(), served.address, absl::Milliseconds(50));
  job = hasty.Call(&Client::Stub::GetJob, request);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(job.status().message()),
              HasSubstr("cannot reach benchd at " + served.address + ": "));
}

TEST(ClientTest, WatchStopsWhenAskedOrAtTheEnd) {
  Served served(absl::ZeroDuration());
  std::unique_ptr<Client> client = Client::Dial(served.address);
  int seen = 0;
  EXPECT_TRUE(client->Watch("j-1", [&](const v1::JobStatus& job) {
                ++seen;
                return job.state() != v1::JOB_STATE_RUNNING;
              }).ok());
  EXPECT_EQ(seen, 2);
  seen = 0;
  EXPECT_TRUE(client->Watch("j-1", [&](const v1::JobStatus&) { return ++seen > 0; }).ok());
  EXPECT_EQ(seen, 3);
}

TEST(RpcErrorTest, Mapping) {
  EXPECT_TRUE(RpcError(grpc::Status::OK, "h:1").ok());
  absl::Status deadline =
      RpcError(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded"), "h:1");
  EXPECT_EQ(deadline.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(deadline.message(), "cannot reach benchd at h:1: Deadline Exceeded");
  absl::Status unreachable = RpcError(
      grpc::Status(grpc::StatusCode::UNAVAILABLE,
                   "failed to connect to all addresses; last error: Connection refused"),
      "h:1");
  EXPECT_THAT(std::string(unreachable.message()), HasSubstr("cannot reach benchd at h:1"));
  absl::Status answered = RpcError(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, "could not store the job: database or disk "
                                                  "is full"),
      "h:1");
  EXPECT_EQ(answered.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(answered.message(),
            "benchd at h:1 answered UNAVAILABLE: could not store the job: database or disk is full");
  absl::Status refused =
      RpcError(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "devices: too many"), "h:1");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.message(), "devices: too many");
}

TEST(RpcErrorTest, CredentialRefusalsSayWhatToDo) {
  absl::Status none =
      RpcError(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "no credentials: present a client certificate or a bearer token"),
               "h:1");
  EXPECT_EQ(none.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(none.message()),
              HasSubstr("benchd at h:1 wants credentials (UNAUTHENTICATED): no credentials"));
  EXPECT_THAT(std::string(none.message()), HasSubstr("--token-file"));
  absl::Status denied = RpcError(
      grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "view:grafana (view) may not cancel"),
      "h:1");
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(denied.message(),
            "benchd at h:1 refused (PERMISSION_DENIED): view:grafana (view) may not cancel");
}

std::string WriteFile(const std::string& name, const std::string& content) {
  std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path) << content;
  return path;
}

TEST(ResolveCredentialsTest, FlagsWinOverTheEnvironment) {
  CredentialEnv env{"env-token", "", "env-ca.pem", "env.pem", "env.key"};
  absl::StatusOr<ClientCredentialOptions> from_env = ResolveCredentials(ConnectionFlags(), env);
  ASSERT_TRUE(from_env.ok()) << from_env.status();
  EXPECT_EQ(from_env->token, "env-token");
  EXPECT_EQ(from_env->tls_ca, "env-ca.pem");
  EXPECT_EQ(from_env->ca_flag, "BENCH_TLS_CA");
  EXPECT_EQ(from_env->tls_cert, "env.pem");
  EXPECT_EQ(from_env->tls_key, "env.key");

  ConnectionFlags flags{"flag-ca.pem", "flag.pem", "flag.key",
                        WriteFile("flag-token", "from-flag-file\n")};
  absl::StatusOr<ClientCredentialOptions> from_flags = ResolveCredentials(flags, env);
  ASSERT_TRUE(from_flags.ok()) << from_flags.status();
  EXPECT_EQ(from_flags->token, "from-flag-file");
  EXPECT_EQ(from_flags->tls_ca, "flag-ca.pem");
  EXPECT_EQ(from_flags->ca_flag, "--tls-ca");
  EXPECT_EQ(from_flags->tls_cert, "flag.pem");
  EXPECT_EQ(from_flags->key_flag, "--tls-key");
}

TEST(ResolveCredentialsTest, TokenFromEnvironmentFileAndErrorsNameTheSource) {
  CredentialEnv env;
  env.token_file = WriteFile("env-token-file", "tok-from-file\n");
  EXPECT_EQ(ResolveCredentials(ConnectionFlags(), env)->token, "tok-from-file");
  env.token = "direct";  // BENCH_TOKEN wins over BENCH_TOKEN_FILE
  EXPECT_EQ(ResolveCredentials(ConnectionFlags(), env)->token, "direct");

  env = CredentialEnv();
  env.token_file = testing::TempDir() + "/missing-token";
  absl::Status missing = ResolveCredentials(ConnectionFlags(), env).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(missing.message()), HasSubstr("BENCH_TOKEN_FILE"));
  EXPECT_THAT(std::string(missing.message()), HasSubstr("missing-token"));
  ConnectionFlags flags;
  flags.token_file = testing::TempDir() + "/absent-flag-token";
  absl::Status flag_missing = ResolveCredentials(flags, CredentialEnv()).status();
  EXPECT_THAT(std::string(flag_missing.message()), HasSubstr("--token-file"));
  EXPECT_THAT(std::string(flag_missing.message()), HasSubstr("absent-flag-token"));
}

TEST(ClientDialTest, ATokenInTheClearToAnotherHostNeedsInsecure) {
  ConnectionFlags flags;
  CredentialEnv env;
  env.token = "s3cret";
  absl::StatusOr<ClientCredentialOptions> options = ResolveCredentials(flags, env);
  ASSERT_TRUE(options.ok()) << options.status();
  absl::StatusOr<std::unique_ptr<Client>> refused = Client::Dial("10.0.0.1:7600", *options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("refusing to send the bearer token in the clear to \"10.0.0.1:7600\""));
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("give --tls-ca CA.pem, or --insecure to send it anyway"));
  EXPECT_TRUE(Client::Dial("127.0.0.1:7600", *options).ok());
  flags.insecure = true;
  options = ResolveCredentials(flags, env);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->insecure);
  EXPECT_TRUE(Client::Dial("10.0.0.1:7600", *options).ok());
}

TEST(ClientDialTest, UnreadableCaNamesTheVariable) {
  ClientCredentialOptions options;
  options.tls_ca = testing::TempDir() + "/no-ca.pem";
  options.ca_flag = "BENCH_TLS_CA";
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Dial("127.0.0.1:1", options);
  ASSERT_FALSE(client.ok());
  EXPECT_THAT(std::string(client.status().message()), HasSubstr("BENCH_TLS_CA"));
  EXPECT_THAT(std::string(client.status().message()), HasSubstr("no-ca.pem"));
}

}  // namespace
}  // namespace bench::ctl
