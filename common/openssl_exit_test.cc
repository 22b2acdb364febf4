// InitOpenSslWithoutExitCleanup keeps OpenSSL's cleanup from running at exit (where it
// races gRPC's TLS threads): openssl_exit_probe, a process of its own, reports whether
// it ran; and this test binary, like every one, was started by common/test_main.cc.
#include "common/openssl_exit.h"

#include <openssl/crypto.h>
#include <openssl/ssl.h>

#include <cstdio>
#include <cstdlib>
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

TEST(OpenSslExit, TestBinariesInitialiseOpenSslWithoutTheExitCleanup) {
  // As gRPC's TLS does when it first makes a channel; the first initialisation decides.
  ASSERT_EQ(OPENSSL_init_ssl(0, nullptr), 1);
  // Handlers given to OPENSSL_atexit run in OPENSSL_cleanup: were it to run when this
  // process exits, the exit code would be 1 and ctest would fail this test.
  ASSERT_EQ(OPENSSL_atexit([] {
              std::fputs("OpenSSL's exit cleanup ran in a test binary: its main() is not "
                         "common/test_main.cc's\n", stderr);
              std::_Exit(1);
            }),
            1);
}

}  // namespace
}  // namespace bench
