// benchctl: the command line for benchd. Reads argv, $BENCH_SERVER and the credential
// variables (BENCH_TOKEN, BENCH_TOKEN_FILE, BENCH_TLS_CA/CERT/KEY), dials the
// controller and hands everything else to bench_ctl_lib.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/openssl_exit.h"
#include "ctl/args.h"
#include "ctl/client.h"
#include "ctl/commands.h"

int main(int argc, char** argv) {
  bench::InitOpenSslWithoutExitCleanup();  // before gRPC: common/openssl_exit.h
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
  if (options->command == bench::ctl::Command::kHelp ||
      options->command == bench::ctl::Command::kVersion) {  // answered without a server
    bench::ctl::CommandContext local;
    local.out = &std::cout;
    local.err = &std::cerr;
    return bench::ctl::RunCommand(*options, local);
  }
  auto env = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value ? value : "");
  };
  bench::ctl::CredentialEnv credential_env{env("BENCH_TOKEN"), env("BENCH_TOKEN_FILE"),
                                           env("BENCH_TLS_CA"), env("BENCH_TLS_CERT"),
                                           env("BENCH_TLS_KEY")};
  absl::StatusOr<bench::ClientCredentialOptions> credentials =
      bench::ctl::ResolveCredentials(options->connection, credential_env);
  absl::StatusOr<std::unique_ptr<bench::ctl::Client>> client =
      credentials.ok() ? bench::ctl::Client::Dial(options->server, *credentials)
                       : absl::StatusOr<std::unique_ptr<bench::ctl::Client>>(credentials.status());
  if (!client.ok()) {  // a credential file named but unreadable: a usage error
    std::cerr << "benchctl: " << client.status().message() << "\n";
    return 2;
  }
  bench::ctl::CommandContext context;
  context.client = client->get();
  context.out = &std::cout;
  context.err = &std::cerr;
  context.err_is_terminal = isatty(STDERR_FILENO) != 0;
  return bench::ctl::RunCommand(*options, context);
}
