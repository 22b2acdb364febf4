// For bench-train's tests: a TCP port that was free a moment ago on 127.0.0.1 (the
// trainer builds without Abseil, so it cannot use common/free_port.h). Header-only.
#ifndef BENCHFLEET_WORKER_TRAIN_TEST_PORTS_H_
#define BENCHFLEET_WORKER_TRAIN_TEST_PORTS_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace bench_train {

// Returns -1 if no port could be had (the caller's connect will then fail loudly).
inline int PickFreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  return ok ? ntohs(addr.sin_port) : -1;
}

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_TEST_PORTS_H_
