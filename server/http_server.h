// A minimal HTTP/1.1 server for benchd's web port: GET/HEAD only, one request per
// connection, handlers registered by exact path before Start(). One accept thread
// serves connections in turn; a request must arrive within 2 s, so a slow client cannot
// hold it for long. Thread-safe Stop().
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace bench {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse()>;

  HttpServer() = default;
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void Handle(const std::string& path, Handler handler);
  // Binds host:port (port 0 picks one) and starts serving. Returns the bound port.
  absl::StatusOr<int> Start(const std::string& host, int port);
  void Stop();

 private:
  void AcceptLoop();
  void Serve(int fd);

  std::map<std::string, Handler> handlers_;
  int listen_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace bench
