// OpenSSL without its exit-time cleanup, for the programs that speak gRPC over TLS.
//
// OpenSSL registers an atexit handler (OPENSSL_cleanup) when it is first initialised.
// gRPC's TLS uses OpenSSL from its own threads, which may still be winding down when
// main returns; the handler then frees what those threads free too, and the process
// aborts ("double free or corruption"): benchctl did so once in CI after printing a
// job's status. gRPC itself initialises OpenSSL with OPENSSL_INIT_NO_ATEXIT in later
// releases (grpc/grpc#42608); Debian 12's gRPC 1.51 does not.
#pragma once

namespace bench {

// Initialises OpenSSL without the atexit cleanup; the first initialisation decides, so
// call it first thing in main, before anything (gRPC included) uses OpenSSL. What
// OpenSSL holds is left for the process's exit to reclaim.
void InitOpenSslWithoutExitCleanup();

}  // namespace bench
