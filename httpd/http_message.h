// The web port's request and response, as HttpServer (httpd/http_server.h) hands them to
// its handlers and writes them back: plain data, no I/O.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bench {

struct HttpRequest {
  std::string method;  // "GET" or "HEAD" (others are refused before any handler)
  std::string path;    // percent-decoded, without the query
  std::multimap<std::string, std::string> query;  // decoded query parameters
  std::map<std::string, std::string> headers;     // names lower-cased
  std::string remote_addr;  // the peer's address and port (for a TLS front: its relay's)
  int remote_port = 0;
  int local_port = 0;  // the port it came in on (this server's side of the connection)

  // The first value of query parameter `name`, if present.
  std::optional<std::string> Query(const std::string& name) const {
    auto it = query.find(name);
    if (it == query.end()) return std::nullopt;
    return it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers = {};  // extra, e.g. Cache-Control
};

}  // namespace bench
