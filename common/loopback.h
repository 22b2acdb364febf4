// Whether a host is loopback only: the one rule behind benchd's "a non-loopback port
// needs TLS and authentication" (server/benchd.cc `CheckSecurityOptions`) and the
// clients' "no bearer token in the clear off this machine" (common/grpc_credentials.h
// `DialChannel`).
//
// A host is loopback when it resolves (getaddrinfo, numeric addresses and names alike)
// and every address it resolves to is loopback: 127.0.0.0/8, ::1, or an IPv4-mapped
// ::ffff:127.x.y.z. "[::1]" is read as "::1". Not loopback: an empty host and the
// wildcards 0.0.0.0 and :: (they mean every address), a name that does not resolve,
// and a name any of whose addresses is another. No string test: "127.example.com" is
// whatever DNS says it is. Thread-safe; may block on the resolver.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace bench {

// OK when `host` is loopback; otherwise INVALID_ARGUMENT whose message says why, naming
// the host (e.g. "\"127.example.com\" does not resolve: Name or service not known",
// "0.0.0.0 is a wildcard address, which means every address", "\"example.org\" resolves
// to 93.184.216.34, which is not loopback").
absl::Status CheckLoopbackHost(const std::string& host);

inline bool IsLoopbackHost(const std::string& host) { return CheckLoopbackHost(host).ok(); }

// The hosts of a gRPC target as clients dial it: "HOST:PORT", "[V6]:PORT", a bare host, or
// with the "dns:///" scheme (one host), or "ipv4:"/"ipv6:" with a comma-separated list
// (every address of it: gRPC may connect to any). A "unix:" or "unix-abstract:" target is
// local by construction: `*local_socket` is set and `hosts` is empty. INVALID_ARGUMENT for
// another scheme or an empty host.
absl::Status TargetHosts(const std::string& target, std::vector<std::string>* hosts,
                         bool* local_socket);

}  // namespace bench
