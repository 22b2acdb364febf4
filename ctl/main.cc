// benchctl: the command line for benchd. Reads argv and $BENCH_SERVER, dials the
// controller and hands everything else to bench_ctl_lib.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/log.h"
#include "ctl/args.h"
#include "ctl/client.h"
#include "ctl/commands.h"

int main(int argc, char** argv) {
  // Only diagnostics go through the logger; what benchctl prints for its user (stdout,
  // and its error messages on stderr) is its API and is written by RunCommand.
  bench::SetLogComponent("benchctl");
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
  std::unique_ptr<bench::ctl::Client> client = bench::ctl::Client::Dial(options->server);
  bench::ctl::CommandContext context;
  context.client = client.get();
  context.out = &std::cout;
  context.err = &std::cerr;
  context.err_is_terminal = isatty(STDERR_FILENO) != 0;
  return bench::ctl::RunCommand(*options, context);
}
