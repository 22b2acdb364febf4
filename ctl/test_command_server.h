// For benchctl's command tests: the test's own fake Controller (`Service`) served on
// 127.0.0.1:0 with plain gRPC, and argv parsed and run against it as benchctl would
// (ParseArgs, a Client, RunCommand), stdout and stderr captured in out_ and err_, the
// clock at kCommandTestNow and polls every millisecond. Test-only; header-only.
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "ctl/args.h"
#include "ctl/client.h"
#include "ctl/commands.h"

namespace bench::ctl {

inline constexpr absl::Time kCommandTestNow = absl::FromUnixSeconds(1800000000);

template <typename Service>
class CommandServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    address_ = "127.0.0.1:" + std::to_string(port);
    stub_ = benchfleet::v1::Controller::NewStub(
        grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  // benchctl ARGS against the fake (its --server), stderr a terminal when `terminal`; the
  // exit code, or -1 (and a failed EXPECT) when ARGS do not parse.
  int Run(const std::vector<std::string>& args, bool terminal = false) {
    out_.str("");
    err_.str("");
    auto options = ParseArgs(args, address_);
    EXPECT_TRUE(options.ok()) << options.status();
    if (!options.ok()) return -1;
    Client client(stub_.get(), options->server);
    CommandContext context;
    context.client = &client;
    context.out = &out_;
    context.err = &err_;
    context.err_is_terminal = terminal;
    context.poll_interval = absl::Milliseconds(1);
    context.now = kCommandTestNow;
    return RunCommand(*options, context);
  }

  Service service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::unique_ptr<benchfleet::v1::Controller::Stub> stub_;
  std::ostringstream out_;
  std::ostringstream err_;
};

}  // namespace bench::ctl
