// benchd's web port: an HTTP/1.1 server on civetweb (Debian's libcivetweb-dev, the
// library prometheus-cpp's own exposer is built on, so no new dependency). civetweb
// gives a pool of worker threads, keep-alive, a bounded request head (431 past it) and
// per-request timeouts; this class adds routing, GET/HEAD only, and server-sent events.
//
// Routes are registered before Start(): exact paths, patterns whose '*' segments match
// any one segment ("/api/v1/jobs/*/events"), and prefixes. An exact path wins over a
// pattern, a pattern over a prefix, and the longest matching prefix over shorter ones. A handler runs on a worker thread and may run concurrently with
// itself. An event-stream handler keeps its worker for as long as it streams; their
// number is capped (`max_event_streams`), past it a new stream gets 503, so the plain
// routes (/metrics, /healthz) always have workers left. Thread-safe Stop().
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace bench {

struct HttpRequest {
  std::string method;  // "GET" or "HEAD" (others are refused before any handler)
  std::string path;    // percent-decoded, without the query
  std::multimap<std::string, std::string> query;    // decoded query parameters
  std::map<std::string, std::string> headers;       // names lower-cased
  std::string remote_addr;  // the peer's address and port (for a TLS front: its relay's)
  int remote_port = 0;
  int local_port = 0;  // the port it came in on (this server's side of the connection)

  // The first value of query parameter `name`, if present.
  std::optional<std::string> Query(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers = {};  // extra, e.g. Cache-Control
};

// An error as the JSON API answers it: {"error":{"code":"NOT_FOUND","message":"..."}}
// with the HTTP status of the code (INVALID_ARGUMENT 400, UNAUTHENTICATED 401 with
// WWW-Authenticate: Bearer, PERMISSION_DENIED 403, NOT_FOUND 404, RESOURCE_EXHAUSTED 503
// with Retry-After, UNAVAILABLE 503, anything else 500).
HttpResponse JsonErrorResponse(const absl::Status& status);

// One client's open event stream (text/event-stream). Send blocks until the event is
// written to the socket (bounded by the server's write timeout), so a slow client
// holds no more than one event in this process.
class EventStream {
 public:
  virtual ~EventStream() = default;
  // One event: "event: <event>\n" (omitted when empty), one "data: " line per line of
  // `data`, then a blank line. False once the client has gone or the server stops;
  // the handler should then return.
  virtual bool Send(absl::string_view event, absl::string_view data) = 0;
  // A comment line (": keep-alive"), to notice a departed client while idle.
  virtual bool Ping() = 0;
  // True once Stop() has begun.
  virtual bool Stopping() const = 0;
  // Waits up to `timeout` between events. False, at once, when the server stops or the
  // client has closed its side; the handler should then return. (The default sleeps
  // and answers !Stopping(), for fakes in tests.)
  virtual bool Wait(absl::Duration timeout);
};

struct HttpServerOptions {
  int worker_threads = 48;          // civetweb's pool: concurrent requests + streams
  int max_event_streams = 32;       // open event streams; more get 503
  int request_timeout_ms = 10'000;  // to read a request and write its answer
  int keep_alive_timeout_ms = 5'000;
  int max_request_head_bytes = 16 * 1024;  // request line + headers; past it 431
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // Streams until it returns. A non-OK status returned before the first Send is
  // answered as JsonErrorResponse (e.g. NOT_FOUND for an unknown job) instead of a
  // stream; after it, it ends the stream.
  using StreamHandler = std::function<absl::Status(const HttpRequest&, EventStream&)>;

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
