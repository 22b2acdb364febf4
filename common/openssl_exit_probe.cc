// A program for openssl_exit_test.cc: initialises OpenSSL as the programs do
// (InitOpenSslWithoutExitCleanup), or with OpenSSL's defaults given "default", then
// returns from main and says on stdout whether OpenSSL's exit-time cleanup ran.
#include <openssl/crypto.h>
#include <openssl/ssl.h>

#include <cstdio>
#include <cstring>

#include "common/openssl_exit.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "default") != 0) bench::InitOpenSslWithoutExitCleanup();
  OPENSSL_init_ssl(0, nullptr);  // as gRPC's TLS does when it first makes a channel
  // Handlers given to OPENSSL_atexit run in OPENSSL_cleanup.
  OPENSSL_atexit([] { std::fputs("openssl cleanup ran\n", stdout); });
  return 0;
}
