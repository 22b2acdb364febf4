// benchctl: the command line for benchd. Reads argv and $BENCH_SERVER, dials the
// controller and hands everything else to bench_ctl_lib.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "benchfleet/v1/controller.grpc.pb.h"
#include "ctl/args.h"
#include "ctl/commands.h"
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const char* env_server = std::getenv("BENCH_SERVER");
  absl::StatusOr<bench::ctl::CliOptions> options =
      bench::ctl::ParseArgs(args, env_server ? env_server : "");
  if (!options.ok()) {
    std::cerr << "benchctl: " << options.status().message() << "\n\n"
              << bench::ctl::UsageText();
    return 2;
  }
  if (options->command == bench::ctl::Command::kHelp) {
    std::cout << bench::ctl::UsageText();
    return 0;
  }
  grpc::ChannelArguments channel_args;
  // A long job's whole log comes in one GetSamples answer (tens of bytes per iteration).
  channel_args.SetMaxReceiveMessageSize(512 << 20);
  auto channel = grpc::CreateCustomChannel(options->server, grpc::InsecureChannelCredentials(),
                                           channel_args);
  auto stub = benchfleet::v1::Controller::NewStub(channel);
  bench::ctl::CommandContext context;
  context.stub = stub.get();
  context.server = options->server;
  context.out = &std::cout;
  context.err = &std::cerr;
  context.err_is_terminal = isatty(STDERR_FILENO) != 0;
  return bench::ctl::RunCommand(*options, context);
}
