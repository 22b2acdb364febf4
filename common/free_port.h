// Picks a free TCP port: the c10d rendezvous port (MASTER_PORT), and ports for tests.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace bench {

// Binds a TCP socket to port 0 on `address` (an IPv4/IPv6 literal or a host name; empty
// means all interfaces), reads the port the kernel chose, and closes the socket. The
// port is free at return; like any such choice it can be taken before it is used.
// Thread-safe.
absl::StatusOr<int> PickFreePort(const std::string& address);

}  // namespace bench
