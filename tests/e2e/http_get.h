// A plain HTTP/1.0 GET on loopback for tests (benchd's /metrics, Prometheus's API).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace bench::testing {

// GET http://127.0.0.1:PORT/TARGET (target with its query, already URL-encoded). The
// body of a 200 answer; anything else is an error carrying the status line.
absl::StatusOr<std::string> HttpGet(int port, const std::string& target, int timeout_s = 10);

// Percent-encodes a query parameter value.
std::string UrlEncode(const std::string& text);

}  // namespace bench::testing
