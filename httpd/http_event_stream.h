// Server-sent events on the web port: EventStream, one client's open stream as a
// stream handler sees it, and ServeEventStream, how HttpServer (httpd/http_server.h)
// serves a stream route on a civetweb connection — capped in number (past the cap 503,
// so that the plain routes always have workers left), the handler's error before its
// first event answered as JSON, the connection closed after a stream. A stream handler
// runs on its own worker thread for as long as it streams.
#pragma once

#include <atomic>
#include <functional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "httpd/http_message.h"

struct mg_connection;  // civetweb's

namespace bench {

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

// Streams until it returns. A non-OK status returned before the first Send is answered
// as JsonErrorResponse (e.g. NOT_FOUND for an unknown job) instead of a stream; after
// it, it ends the stream.
using HttpStreamHandler = std::function<absl::Status(const HttpRequest&, EventStream&)>;

// What the streams of one HttpServer share: the cap and the count of open streams, and
// how they learn that the server stops (the flag, and an eventfd readable once set).
struct EventStreamSlots {
  int max_streams = 32;
  std::atomic<int> open{0};
  const std::atomic<bool>* stopping = nullptr;
  int stop_fd = -1;
};

// Serves `request` (GET or HEAD) on `conn` as `handler`'s event stream if a slot is free,
// else answers 503 RESOURCE_EXHAUSTED (JSON, Retry-After). HEAD gets the stream's head
// only. `keep_alive`: whether an error answer may keep the connection; a stream closes it.
void ServeEventStream(mg_connection* conn, const HttpRequest& request, bool keep_alive,
                      const HttpStreamHandler& handler, EventStreamSlots& slots);

}  // namespace bench
