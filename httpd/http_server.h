// The web port: an HTTP/1.1 server on civetweb (Debian's libcivetweb-dev, the
// library prometheus-cpp's own exposer is built on, so no new dependency). civetweb
// gives a pool of worker threads, keep-alive, a bounded request head (431 past it) and
// per-request timeouts; this class adds routing (httpd/http_routes.h), gates, GET/HEAD
// only, and server-sent events (httpd/http_event_stream.h). Its requests and responses
// are httpd/http_message.h's; errors are answered as JsonErrorResponse
// (httpd/http_error.h). This header includes those four: a handler's whole API.
//
// Routes are registered before Start(): exact paths, patterns whose '*' segments match
// any one segment ("/api/v1/jobs/*/events"), and prefixes. An exact path wins over a
// pattern, a pattern over a prefix, and the longest matching prefix over shorter ones. A
// handler runs on a worker thread and may run concurrently with itself. An event-stream
// handler keeps its worker for as long as it streams; their number is capped
// (`max_event_streams`), past it a new stream gets 503, so the plain routes (/metrics,
// /healthz) always have workers left. Thread-safe Stop().
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "httpd/http_error.h"
#include "httpd/http_event_stream.h"
#include "httpd/http_message.h"
#include "httpd/http_routes.h"

namespace bench {

struct HttpServerOptions {
  int worker_threads = 48;          // civetweb's pool: concurrent requests + streams
  int max_event_streams = 32;       // open event streams; more get 503
  int request_timeout_ms = 10'000;  // to read a request and write its answer
  int keep_alive_timeout_ms = 5'000;
  int max_request_head_bytes = 16 * 1024;  // request line + headers; past it 431
};

class HttpServer {
 public:
  using Handler = HttpHandler;
  // Streams until it returns; see HttpStreamHandler (httpd/http_event_stream.h).
  using StreamHandler = HttpStreamHandler;

  explicit HttpServer(HttpServerOptions options = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // `path`: exact, or a pattern with '*' segments.
  void Handle(const std::string& path, Handler handler);
  // Every path starting with `prefix` (e.g. "/api/v1/jobs/") not matched exactly.
  void HandlePrefix(const std::string& prefix, Handler handler);
  // An event stream at `path` (exact or a pattern) or, with a trailing '/', every path
  // under it.
  void HandleEvents(const std::string& path, StreamHandler handler);

  // Before any request whose path starts with `prefix` is routed, `check` is asked; a
  // non-OK status is answered as JsonErrorResponse instead (benchd: 503 on /api/ while
  // it recovers; 401 or 403 without a credential allowed to read). Gates are asked in
  // the order they were set.
  void SetGate(const std::string& prefix, std::function<absl::Status()> check);
  void SetGate(const std::string& prefix, std::function<absl::Status(const HttpRequest&)> check);

  // Binds host:port (port 0 picks one) and starts serving. Returns the bound port;
  // INVALID_ARGUMENT or UNAVAILABLE naming the address when it cannot listen.
  absl::StatusOr<int> Start(const std::string& host, int port);
  // Ends open streams (their Send returns false), waits for the workers, closes.
  void Stop();

  int open_event_streams() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bench
