// Fuzz target: benchd's web port (httpd/http_server.h, HttpServer on civetweb). One
// server is started once, on 127.0.0.1:0, with routes like benchd's: an exact path, a
// '*' pattern, prefixes, two event streams (each sends one event and returns, one answers
// NOT_FOUND first for job "missing") and a gate on /api/ that refuses every third request.
// The bytes are sent as they are over a fresh loopback TCP connection (pipelined requests
// included), our side is shut for writing, and the answer is read until the server closes
// (3 s at most). Besides no crash, leak, hang or sanitizer report in the server's
// threads, it checks: handlers see only GET and HEAD, each route only the paths it
// matches; an answer, when there is one, is HTTP/1.x; and every 64 inputs a plain
// GET /healthz on a new connection is still answered 200.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "httpd/http_server.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using bench::EventStream;
using bench::HttpRequest;
using bench::HttpResponse;
using bench::HttpServer;

void CheckMethod(const HttpRequest& request) {
  FUZZ_CHECK(request.method == "GET" || request.method == "HEAD");
}

HttpResponse Text(std::string body) { return HttpResponse{200, "text/plain", std::move(body)}; }

// The server, started on first use and never stopped (it lives as long as the process;
// this pointer keeps it reachable for LeakSanitizer).
HttpServer* volatile g_server = nullptr;  // volatile: GCC drops a global only written

int ServerPort() {
  static const int port = [] {
    bench::HttpServerOptions options;
    options.worker_threads = 4;
    options.max_event_streams = 2;
    options.request_timeout_ms = 2000;
    options.keep_alive_timeout_ms = 1000;
    options.max_request_head_bytes = 2048;  // so that the fuzzer reaches 431
    g_server = new HttpServer(options);
    HttpServer* server = g_server;
    server->Handle("/healthz", [](const HttpRequest& request) {
      CheckMethod(request);
      FUZZ_CHECK(request.path == "/healthz");
      return Text("ok\n");
    });
    server->Handle("/api/v1/jobs/*/log", [](const HttpRequest& request) {
      CheckMethod(request);
      std::vector<absl::string_view> parts = absl::StrSplit(request.path, '/');
      FUZZ_CHECK(parts.size() == 6 && parts[3] == "jobs" && !parts[4].empty() &&
                 parts[5] == "log");
      return Text("log of " + std::string(parts[4]) + "\n");
    });
    server->HandlePrefix("/api/v1/", [](const HttpRequest& request) {
      CheckMethod(request);
      FUZZ_CHECK(absl::StartsWith(request.path, "/api/v1/"));
      if (request.Query("fail").has_value()) {
        return bench::JsonErrorResponse(absl::InvalidArgumentError(*request.Query("fail")));
      }
      return HttpResponse{200, "application/json", "{\"path\":\"" + request.path + "\"}"};
    });
    server->HandlePrefix("/static/", [](const HttpRequest& request) {
      CheckMethod(request);
      FUZZ_CHECK(absl::StartsWith(request.path, "/static/"));
      return Text(request.path);
    });
    server->HandleEvents("/api/v1/events", [](const HttpRequest& request, EventStream& stream) {
      CheckMethod(request);
      FUZZ_CHECK(request.path == "/api/v1/events");
      stream.Send("hello", "one event\nfor " + request.path);
      return absl::OkStatus();
    });
    server->HandleEvents("/api/v1/jobs/*/events",
                         [](const HttpRequest& request, EventStream& stream) {
                           CheckMethod(request);
                           std::vector<absl::string_view> parts =
                               absl::StrSplit(request.path, '/');
                           FUZZ_CHECK(parts.size() == 6 && parts[5] == "events");
                           if (parts[4] == "missing") return absl::NotFoundError("no such job");
                           stream.Send("", std::string(parts[4]));
                           return absl::OkStatus();
                         });
    static std::atomic<int> gate_calls{0};
    server->SetGate("/api/", std::function<absl::Status()>([] {
                      return gate_calls.fetch_add(1) % 3 == 2
                                 ? absl::UnavailableError("recovering")
                                 : absl::OkStatus();
                    }));
    auto started = server->Start("127.0.0.1", 0);
    FUZZ_CHECK(started.ok());
    return *started;
  }();
  return port;
}

// Sends `request` on a new loopback connection, shuts our side, and returns what the
// server answered until it closed (or 3 s passed).
std::string Exchange(int port, absl::string_view request) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FUZZ_CHECK(fd >= 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) break;
    int error = errno;
    close(fd);
    fd = -1;
    // Interrupted (libFuzzer's SIGALRM timer) or out of local ports (thousands of
    // connections a second): try again. Anything else (a refusal) means the server is
    // gone.
    if ((error != EINTR && error != EADDRNOTAVAIL) || attempt == 500) {
      std::fprintf(stderr, "connect to 127.0.0.1:%d: %s\n", port, std::strerror(error));
      FUZZ_CHECK(false);
    }
    if (error == EADDRNOTAVAIL) usleep(10'000);
  }
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the server closed early (e.g. after a 400)
    sent += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  std::string answer;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  char buffer[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{fd, POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  // Close with linger 0: our side keeps no port in TIME_WAIT.
  linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  close(fd);
  return answer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static int inputs = 0;
  const int port = ServerPort();
  absl::string_view request(reinterpret_cast<const char*>(data), size);
  std::string answer = Exchange(port, request);
  if (getenv("FUZZ_VERBOSE") != nullptr) {  // the status lines, for a look at a corpus
    std::fprintf(stderr, "%zu bytes in, %zu out: %s\n", size, answer.size(),
                 answer.substr(0, answer.find('\r')).c_str());
  }
  FUZZ_CHECK(answer.empty() || absl::StartsWith(answer, "HTTP/1.1 ") ||
             absl::StartsWith(answer, "HTTP/1.0 "));
  if (++inputs % 64 == 0) {
    std::string health =
        Exchange(port, "GET /healthz HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n");
    FUZZ_CHECK(absl::StartsWith(health, "HTTP/1.1 200 "));
  }
  return 0;
}
