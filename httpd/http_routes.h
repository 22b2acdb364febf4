// HttpServer's route table (httpd/http_server.h): exact paths, patterns whose '*'
// segments match any one non-empty segment ("/api/v1/jobs/*/events"), and prefixes. An
// exact path wins over a pattern, a pattern over a prefix, and the longest matching
// prefix over shorter ones; between equals, the one added first. Pure. Filled before the
// server starts; then only read (Find is const), by any number of threads.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "httpd/http_event_stream.h"
#include "httpd/http_message.h"

namespace bench {

// A plain route's handler: runs on a worker thread, possibly beside itself.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

class HttpRoutes {
 public:
  struct Route {
    std::string path;                  // exact path, pattern or prefix
    std::vector<std::string> pattern;  // its segments, when `path` has a '*' segment
    bool prefix = false;
    HttpHandler handler;       // a plain route
    HttpStreamHandler stream;  // or an event stream
  };

  // `path` is a prefix with `prefix`, else exact or (with a '*' segment) a pattern. One
  // of `handler` and `stream` is set.
  void Add(const std::string& path, bool prefix, HttpHandler handler, HttpStreamHandler stream);

  // The route serving `path` (percent-decoded, without the query), or null.
  const Route* Find(const std::string& path) const;

 private:
  std::vector<Route> routes_;
};

}  // namespace bench
