// For the web port's tests: raw HTTP/1.1 over a loopback socket, so a test sees the
// server's bytes exactly (status line, headers, framing) and can hold connections open,
// send half a request or close early. Test-only; header-only.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>

namespace bench::http_test {

// A connected socket to 127.0.0.1:port, or -1.
inline int ConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends all of `data` unless the peer has gone.
inline void SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

// Reads until `done(what was read)`, EOF or `timeout`; what was read.
inline std::string ReadUntil(int fd, const std::function<bool(const std::string&)>& done,
                             std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  std::string response;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[4096];
  while (!done(response)) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left.count())) <= 0) break;
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    response.append(buffer, static_cast<size_t>(n));
  }
  return response;
}

inline std::string ReadToEof(int fd) {
  return ReadUntil(fd, [](const std::string&) { return false; });
}

// `request` (raw bytes) on a fresh connection; the whole answer until the server closes,
// or "connect failed".
inline std::string Fetch(int port, const std::string& request) {
  int fd = ConnectLoopback(port);
  if (fd < 0) return "connect failed";
  SendAll(fd, request);
  std::string response = ReadToEof(fd);
  close(fd);
  return response;
}

// GET `target` (path and query, already encoded) with Connection: close and any `extra`
// header lines (each ending in "\r\n"); the whole answer.
inline std::string Get(int port, const std::string& target, const std::string& extra = "") {
  return Fetch(port,
               "GET " + target + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n" + extra + "\r\n");
}

}  // namespace bench::http_test
