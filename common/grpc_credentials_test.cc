#include "common/grpc_credentials.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "benchfleet/v1/agent.grpc.pb.h"
#include "gtest/gtest.h"

namespace bench {
namespace {

namespace v1 = benchfleet::v1;

// Answers Heartbeat with the `authorization` metadata it received in the error message.
class EchoAuthorization : public v1::AgentService::Service {
 public:
  grpc::Status Heartbeat(grpc::ServerContext* context, const v1::HeartbeatRequest*,
                         v1::HeartbeatResponse*) override {
    auto found = context->client_metadata().find("authorization");
    std::string value = found == context->client_metadata().end()
                            ? "<none>"
                            : std::string(found->second.data(), found->second.size());
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, value);
  }
};

struct Served {
  Served() {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    address = "127.0.0.1:" + std::to_string(port);
  }
  ~Served() { server->Shutdown(); }
  EchoAuthorization service;
  std::unique_ptr<grpc::Server> server;
  std::string address;
};

std::string Call(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = v1::AgentService::NewStub(channel);
  grpc::ClientContext context;
  v1::HeartbeatRequest request;
  v1::HeartbeatResponse response;
  grpc::Status status = stub->Heartbeat(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << status.error_message();
  return status.error_message();
}

std::string TempFile(const std::string& name, const std::string& content) {
  std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path) << content;
  return path;
}

TEST(GrpcCredentialsTest, TokenIsSentAsBearerOverPlaintext) {
  Served served;
  ClientCredentialOptions options;
  options.token = "s3cret-token";
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      DialChannel(served.address, options, grpc::ChannelArguments());
  ASSERT_TRUE(channel.ok()) << channel.status();
  EXPECT_EQ(Call(*channel), "Bearer s3cret-token");
  // Every call carries it, not only the first.
  EXPECT_EQ(Call(*channel), "Bearer s3cret-token");
}

TEST(GrpcCredentialsTest, ATokenGoesInTheClearOnlyToLoopbackOrWhenAskedTo) {
  ClientCredentialOptions options;
  options.token = "s3cret-token";
  for (const char* target :
       {"10.0.0.1:7600", "127.example.com:7600", "0.0.0.0:7600", "dns:///10.0.0.1:7600",
        // gRPC may connect to any address of a list, not only the first.
        "ipv4:127.0.0.1:7600,10.0.0.1:7600"}) {
    absl::Status status = DialChannel(target, options, grpc::ChannelArguments()).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << target;
    EXPECT_NE(status.message().find(
                  absl::StrCat("refusing to send the bearer token in the clear to \"", target)),
              std::string::npos)
        << status;
    EXPECT_NE(status.message().find("give --tls-ca CA.pem, or --insecure to send it anyway"),
              std::string::npos)
        << status;
  }
  // Loopback by name: the call goes through and carries the token.
  Served served;
  const std::string port = served.address.substr(served.address.rfind(':'));
  absl::StatusOr<std::shared_ptr<grpc::Channel>> local =
      DialChannel("localhost" + port, options, grpc::ChannelArguments());
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(Call(*local), "Bearer s3cret-token");
  EXPECT_TRUE(DialChannel("[::1]:7600", options, grpc::ChannelArguments()).ok());
  EXPECT_TRUE(DialChannel("unix:/run/benchd.sock", options, grpc::ChannelArguments()).ok());
  // Asked for, or no token: the channel is made.
  options.insecure = true;
  EXPECT_TRUE(DialChannel("10.0.0.1:7600", options, grpc::ChannelArguments()).ok());
  EXPECT_TRUE(
      DialChannel("10.0.0.1:7600", ClientCredentialOptions(), grpc::ChannelArguments()).ok());
}

TEST(GrpcCredentialsTest, NoTokenSendsNoAuthorization) {
  Served served;
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      DialChannel(served.address, ClientCredentialOptions(), grpc::ChannelArguments());
  ASSERT_TRUE(channel.ok()) << channel.status();
  EXPECT_EQ(Call(*channel), "<none>");
}

TEST(GrpcCredentialsTest, MissingCaFileNamesTheFlagAndFile) {
  ClientCredentialOptions options;
  options.tls_ca = testing::TempDir() + "/no-such-ca.pem";
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      DialChannel("127.0.0.1:1", options, grpc::ChannelArguments());
  ASSERT_FALSE(channel.ok());
  EXPECT_EQ(channel.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(channel.status().message().find("--tls-ca"), std::string::npos);
  EXPECT_NE(channel.status().message().find("no-such-ca"), std::string::npos);
}

TEST(GrpcCredentialsTest, MissingKeyFileNamesTheFlag) {
  ClientCredentialOptions options;
  options.tls_ca = TempFile("ca.pem", "not really a CA, but present");
  options.tls_cert = TempFile("client.pem", "a cert");
  options.tls_key = testing::TempDir() + "/absent.key";
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      DialChannel("127.0.0.1:1", options, grpc::ChannelArguments());
  ASSERT_FALSE(channel.ok());
  EXPECT_NE(channel.status().message().find("--tls-key"), std::string::npos) << channel.status();
  EXPECT_NE(channel.status().message().find("absent.key"), std::string::npos);
}

TEST(GrpcCredentialsTest, CertWithoutKeyOrWithoutCaIsRefused) {
  ClientCredentialOptions options;
  options.tls_ca = TempFile("ca2.pem", "x");
  options.tls_cert = TempFile("only.pem", "x");
  EXPECT_EQ(DialChannel("127.0.0.1:1", options, grpc::ChannelArguments()).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.tls_ca.clear();
  options.tls_key = TempFile("only.key", "x");
  absl::Status status = DialChannel("127.0.0.1:1", options, grpc::ChannelArguments()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("--tls-ca"), std::string::npos) << status;
}

TEST(GrpcCredentialsTest, TokenFileFirstLineTrimmed) {
  std::string path = TempFile("token", "  abc123 \nsha256:ignored view x\n");
  absl::StatusOr<std::string> token = ReadTokenFile(path, "--token-file");
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "abc123");

  absl::StatusOr<std::string> missing =
      ReadTokenFile(testing::TempDir() + "/nope-token", "BENCH_TOKEN_FILE");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("BENCH_TOKEN_FILE"), std::string::npos);
  EXPECT_NE(missing.status().message().find("nope-token"), std::string::npos);

  EXPECT_FALSE(ReadTokenFile(TempFile("blank", "\n\n"), "--token-file").ok());
}

}  // namespace
}  // namespace bench
