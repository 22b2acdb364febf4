#include "common/openssl_exit.h"

#include <openssl/crypto.h>

namespace bench {

void InitOpenSslWithoutExitCleanup() {
  // libssl's initialisation (gRPC's, later) hangs its cleanup on OpenSSL's, which then
  // no longer runs at exit. 0 on failure, which leaves OpenSSL to initialise itself
  // later, as before.
  OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr);
}

}  // namespace bench
