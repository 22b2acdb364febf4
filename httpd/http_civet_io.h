// One HTTP exchange on a civetweb connection, for HttpServer (httpd/http_server.h) and
// its event streams (httpd/http_event_stream.h): the request civetweb parsed as an
// HttpRequest, an HttpResponse written as HTTP/1.1, and whether the client asked to keep
// the connection. Not for handlers: they see only HttpRequest and HttpResponse.
#pragma once

#include "httpd/http_message.h"

struct mg_connection;  // civetweb's

namespace bench {

// The request civetweb read on `conn`: method, percent-decoded path and query, headers
// with lower-cased names (a repeated header's values joined by ", "), peer and port.
HttpRequest ReadHttpRequest(mg_connection* conn);

// Whether the client asked to keep the connection after this answer (civetweb's
// should_keep_alive: a "Connection: keep-alive" header, or HTTP/1.1 without one).
bool WantsKeepAlive(mg_connection* conn);

// Writes `response` (without its body for HEAD) with Content-Length, Cache-Control:
// no-store unless it sets its own, and Connection: keep-alive or close; with close,
// civetweb closes the connection after it.
void WriteHttpResponse(mg_connection* conn, const HttpResponse& response, bool head,
                       bool keep_alive);

}  // namespace bench
