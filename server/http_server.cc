#include "server/http_server.h"

#include <chrono>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace bench {
namespace {

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    default: return "Internal Server Error";
  }
}

void WriteAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, Handler handler) {
  handlers_[path] = std::move(handler);
}

absl::StatusOr<int> HttpServer::Start(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* result = nullptr;
  std::string port_text = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port_text.c_str(), &hints, &result);
  if (rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http ", host, ":", port, ": ", gai_strerror(rc)));
  }
  int fd = socket(result->ai_family, result->ai_socktype | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (fd < 0 || bind(fd, result->ai_addr, result->ai_addrlen) != 0 || listen(fd, 64) != 0) {
    int err = errno;
    freeaddrinfo(result);
    if (fd >= 0) close(fd);
    return absl::UnavailableError(
        absl::StrCat("--http ", host, ":", port, ": cannot listen: ", strerror(err)));
  }
  freeaddrinfo(result);
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  int bound_port = bound.ss_family == AF_INET6
                       ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                       : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  listen_fd_ = fd;
  thread_ = std::thread([this] { AcceptLoop(); });
  return bound_port;
}

void HttpServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (listen_fd_ >= 0) shutdown(listen_fd_, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  listen_fd_ = -1;
}

void HttpServer::AcceptLoop() {
  while (!stopping_) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    timeval timeout{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    Serve(fd);
    close(fd);
  }
}

void HttpServer::Serve(int fd) {
  std::string request;
  char buffer[4096];
  // One deadline for the whole request, so that a trickling client cannot hold the
  // serving thread for longer than that.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left.count())) <= 0) break;
    ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    request.append(buffer, static_cast<size_t>(n));
  }
  std::vector<std::string> line = absl::StrSplit(request.substr(0, request.find("\r\n")), ' ');
  HttpResponse response;
  bool head = false;
  if (line.size() < 3) {
    response = {400, "text/plain; charset=utf-8", "bad request\n"};
  } else if (line[0] != "GET" && line[0] != "HEAD") {
    response = {405, "text/plain; charset=utf-8", "only GET and HEAD\n"};
  } else {
    head = line[0] == "HEAD";
    std::string path = line[1].substr(0, line[1].find('?'));
    auto it = handlers_.find(path);
    response = it == handlers_.end()
                   ? HttpResponse{404, "text/plain; charset=utf-8", "not found\n"}
                   : it->second();
  }
  WriteAll(fd, absl::StrCat("HTTP/1.1 ", response.status, " ", ReasonPhrase(response.status),
                            "\r\nContent-Type: ", response.content_type,
                            "\r\nContent-Length: ", response.body.size(),
                            "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
                            head ? "" : response.body));
}

}  // namespace bench
