// The main() of every benchfleet test binary (cmake/BenchTest.cmake): GoogleTest's own,
// after initialising OpenSSL the way benchd, bench-agent and benchctl do
// (common/openssl_exit.h). Tests run gRPC over TLS in-process; with OpenSSL's default
// atexit cleanup, a gRPC thread still winding down at exit lost its thread's error state
// once (LeakSanitizer: 904 bytes from CRYPTO_zalloc, an ERR_STATE, in
// agent.CertBootstrapTest under tests/sanitize.sh), the same race that made benchctl abort.
#include <gtest/gtest.h>

#include "common/openssl_exit.h"

int main(int argc, char** argv) {
  bench::InitOpenSslWithoutExitCleanup();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
