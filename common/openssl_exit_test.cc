// InitOpenSslWithoutExitCleanup keeps OpenSSL's cleanup from running at exit (where it
// races gRPC's TLS threads): openssl_exit_probe, a process of its own, reports whether
// it ran.
#include "common/openssl_exit.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "common/run_command.h"

namespace bench {
namespace {

std::string ProbeSays(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {BENCH_OPENSSL_EXIT_PROBE};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<CommandOutput> ran = RunCommand(argv, absl::Seconds(60));
  EXPECT_TRUE(ran.ok()) << ran.status();
  if (!ran.ok()) return "";
  EXPECT_EQ(ran->exit_code, 0) << ran->stderr_text;
  return ran->stdout_text;
}

TEST(OpenSslExit, OpenSslsDefaultsCleanUpAtExitAndOursDoNot) {
  EXPECT_EQ(ProbeSays({"default"}), "openssl cleanup ran\n");  // what the probe can see
  EXPECT_EQ(ProbeSays({}), "");
}

}  // namespace
}  // namespace bench
