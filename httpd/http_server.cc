#include "httpd/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <civetweb.h>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "httpd/http_civet_io.h"

namespace bench {
namespace {

std::once_flag g_library_once;

// When the connection began waiting for its current request (its start, or the end of
// its last answer), in steady-clock milliseconds, kept in civetweb's per-connection
// pointer.
int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
void MarkWaiting(const mg_connection* conn) {
  mg_set_user_connection_data(conn, reinterpret_cast<void*>(static_cast<intptr_t>(NowMs())));
}
int64_t WaitingSinceMs(const mg_connection* conn) {
  return static_cast<int64_t>(reinterpret_cast<intptr_t>(mg_get_user_connection_data(conn)));
}

}  // namespace

struct HttpServer::Impl {
  explicit Impl(HttpServerOptions o) : options(o) {
    streams.max_streams = options.max_event_streams;
    streams.stopping = &stopping;
  }

  // civetweb's own messages (e.g. "Bad HTTP version" with the client's bytes), at most
  // kLogsPerSecond a second: a client sending garbage cannot fill benchd's log. What is
  // held back is counted in the next line written.
  static constexpr int kLogsPerSecond = 10;
  void LogLimited(const char* message) {
    std::lock_guard<std::mutex> lock(log_mu);
    const int64_t now = NowMs();
    if (now - log_window_start_ms >= 1000) {
      if (logs_suppressed > 0) {
        Log("http: ", logs_suppressed, " more messages of the web server not logged");
      }
      log_window_start_ms = now;
      logs_in_window = 0;
      logs_suppressed = 0;
    }
    if (logs_in_window++ < kLogsPerSecond) {
      Log("http: ", message != nullptr ? message : "");
    } else {
      ++logs_suppressed;
    }
  }

  int Serve(mg_connection* conn);

  const HttpServerOptions options;
  HttpRoutes routes;
  struct Gate {
    std::string prefix;
    std::function<absl::Status(const HttpRequest&)> check;
  };
  std::vector<Gate> gates;
  mg_context* context = nullptr;
  int stop_fd = -1;  // an eventfd, readable once stopping
  std::atomic<bool> stopping{false};
  EventStreamSlots streams;  // the cap, the open count, `stopping` and `stop_fd`
  std::mutex stop_mu;
  std::mutex log_mu;
  int64_t log_window_start_ms = 0;
  int logs_in_window = 0;
  int64_t logs_suppressed = 0;
  sockaddr_storage nudge_address{};  // the bound port, on loopback for a wildcard address
  socklen_t nudge_length = 0;
};

int HttpServer::Impl::Serve(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  const bool keep_alive = WantsKeepAlive(conn) && !stopping.load();
  const std::string method = info->request_method ? info->request_method : "";
  if (method != "GET" && method != "HEAD") {
    HttpResponse response{405, "text/plain; charset=utf-8", "only GET and HEAD\n"};
    response.headers.push_back({"Allow", "GET, HEAD"});
    WriteHttpResponse(conn, response, false, false);
    return 405;
  }
  HttpRequest request = ReadHttpRequest(conn);
  const bool head = method == "HEAD";
  for (const Gate& gate : gates) {
    if (request.path.compare(0, gate.prefix.size(), gate.prefix) != 0) continue;
    absl::Status open = gate.check(request);
    if (!open.ok()) {
      HttpResponse refused = JsonErrorResponse(open);
      WriteHttpResponse(conn, refused, head, keep_alive);
      return refused.status;
    }
  }
  const HttpRoutes::Route* route = routes.Find(request.path);
  if (route == nullptr) {
    WriteHttpResponse(conn, HttpResponse{404, "text/plain; charset=utf-8", "not found\n"}, head,
                      keep_alive);
    return 404;
  }
  if (route->stream) {
    ServeEventStream(conn, request, keep_alive, route->stream, streams);
    return 200;
  }
  HttpResponse response = route->handler(request);
  WriteHttpResponse(conn, response, head, keep_alive);
  return response.status;
}

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>(options)) {}

HttpServer::~HttpServer() {
  Stop();
  if (impl_->stop_fd >= 0) close(impl_->stop_fd);
}

void HttpServer::Handle(const std::string& path, Handler handler) {
  impl_->routes.Add(path, false, std::move(handler), nullptr);
}

void HttpServer::SetGate(const std::string& prefix, std::function<absl::Status()> check) {
  impl_->gates.push_back(
      {prefix, [check = std::move(check)](const HttpRequest&) { return check(); }});
}

void HttpServer::SetGate(const std::string& prefix,
                         std::function<absl::Status(const HttpRequest&)> check) {
  impl_->gates.push_back({prefix, std::move(check)});
}

void HttpServer::HandlePrefix(const std::string& prefix, Handler handler) {
  impl_->routes.Add(prefix, true, std::move(handler), nullptr);
}

void HttpServer::HandleEvents(const std::string& path, StreamHandler handler) {
  impl_->routes.Add(path, !path.empty() && path.back() == '/', nullptr, std::move(handler));
}

int HttpServer::open_event_streams() const { return impl_->streams.open.load(); }

absl::StatusOr<int> HttpServer::Start(const std::string& host, int port) {
  std::call_once(g_library_once, [] { mg_init_library(0); });
  // civetweb listens on numeric addresses only: resolve the name here.
  std::string address;
  if (!host.empty()) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* result = nullptr;
    int rc = getaddrinfo(host.c_str(), nullptr, &hints, &result);
    if (rc != 0 || result == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--http ", host, ":", port, ": ", gai_strerror(rc)));
    }
    char text[INET6_ADDRSTRLEN] = {0};
    if (result->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(result->ai_addr)->sin6_addr, text,
                sizeof(text));
      address = absl::StrCat("[", text, "]:", port);
    } else {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(result->ai_addr)->sin_addr, text,
                sizeof(text));
      address = absl::StrCat(text, ":", port);
    }
    freeaddrinfo(result);
  } else {
    address = std::to_string(port);
  }
  impl_->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl_->stop_fd < 0) return absl::InternalError("eventfd failed");
  impl_->streams.stop_fd = impl_->stop_fd;

  const std::string threads = std::to_string(std::max(1, impl_->options.worker_threads));
  const std::string request_timeout = std::to_string(impl_->options.request_timeout_ms);
  const std::string keep_alive_timeout = std::to_string(impl_->options.keep_alive_timeout_ms);
  const std::string head_bytes = std::to_string(impl_->options.max_request_head_bytes);
  const char* config[] = {"listening_ports", address.c_str(),
                          "num_threads", threads.c_str(),
                          "enable_keep_alive", "yes",
                          "keep_alive_timeout_ms", keep_alive_timeout.c_str(),
                          "request_timeout_ms", request_timeout.c_str(),
                          "max_request_size", head_bytes.c_str(),
                          "decode_url", "yes",
                          nullptr};
  mg_callbacks callbacks{};
  callbacks.begin_request = [](mg_connection* conn) -> int {
    auto* impl = static_cast<Impl*>(mg_get_user_data(mg_get_context(conn)));
    return impl->Serve(conn);
  };
  callbacks.log_message = [](const mg_connection* conn, const char* message) -> int {
    auto* impl = static_cast<Impl*>(mg_get_user_data(mg_get_context(conn)));
    impl->LogLimited(message);
    return 1;
  };
  callbacks.init_connection = [](const mg_connection*, void** data) -> int {
    *data = reinterpret_cast<void*>(static_cast<intptr_t>(NowMs()));
    return 0;
  };
  callbacks.end_request = [](const mg_connection* conn, int) { MarkWaiting(conn); };
  // civetweb's own answers to requests it could not read, as plain text. civetweb 1.15
  // answers a request head past max_request_size with 400 "Malformed message" (its
  // 413 check misses read_message's -2), as it does a head still incomplete at the
  // timeout: told apart by the time waited, 431 for the first, 408 for the second.
  callbacks.http_error = [](mg_connection* conn, int status, const char* message) -> int {
    auto* impl = static_cast<Impl*>(mg_get_user_data(mg_get_context(conn)));
    std::string text = message ? message : "";
    if ((status == 413 && text == "Message too large") ||
        (status == 400 && text == "Malformed message" &&
         NowMs() - WaitingSinceMs(conn) <
             std::min(impl->options.request_timeout_ms, impl->options.keep_alive_timeout_ms))) {
      status = 431;
      text = "request head too large";
    } else if (status == 400 && text == "Malformed message") {
      status = 408;
      text = "request incomplete";
    }
    std::string body = absl::StrCat(text, "\n");
    std::string out = absl::StrCat(
        "HTTP/1.1 ", status, " ", mg_get_response_code_text(conn, status),
        "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ", body.size(),
        "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n", body);
    mg_write(conn, out.data(), out.size());
    mg_disable_connection_keep_alive(conn);
    return 0;
  };
  char error_text[256] = {0};
  unsigned error_code = 0;
  mg_error_data error{&error_code, error_text, sizeof(error_text)};
  mg_init_data init{&callbacks, impl_.get(), config};
  impl_->context = mg_start2(&init, &error);
  if (impl_->context == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("--http ", host, ":", port, ": cannot listen: ", error_text));
  }
  mg_server_port ports[4];
  int n = mg_get_server_ports(impl_->context, 4, ports);
  if (n < 1) {
    Stop();
    return absl::UnavailableError(absl::StrCat("--http ", host, ":", port, ": no port"));
  }
  const int bound = ports[0].port;
  auto& nudge = impl_->nudge_address;
  if (!address.empty() && address[0] == '[') {  // IPv6
    auto* a = reinterpret_cast<sockaddr_in6*>(&nudge);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(bound));
    if (inet_pton(AF_INET6, address.substr(1, address.rfind(']') - 1).c_str(),
                                  &a->sin6_addr) != 1 ||
        IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr)) {
      a->sin6_addr = in6addr_loopback;
    }
    impl_->nudge_length = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&nudge);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(bound));
    if (host.empty() ||
        inet_pton(AF_INET, address.substr(0, address.rfind(':')).c_str(), &a->sin_addr) != 1 ||
        a->sin_addr.s_addr == htonl(INADDR_ANY)) {
      a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    }
    impl_->nudge_length = sizeof(sockaddr_in);
  }
  return bound;
}

void HttpServer::Stop() {
  std::lock_guard<std::mutex> lock(impl_->stop_mu);
  if (impl_->context == nullptr) return;
  impl_->stopping = true;
  if (impl_->stop_fd >= 0) {
    uint64_t one = 1;
    (void)!write(impl_->stop_fd, &one, sizeof(one));
  }
  // civetweb's accept loop polls in 2 s quanta: connections to the port wake it, so
  // that it sees the stop at once.
  std::atomic<bool> stopped{false};
  std::thread nudge([this, &stopped] {
    while (!stopped.load()) {
      int fd = socket(impl_->nudge_address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd >= 0) {
        (void)!connect(fd, reinterpret_cast<const sockaddr*>(&impl_->nudge_address),
                       impl_->nudge_length);
        close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  mg_stop(impl_->context);
  stopped = true;
  nudge.join();
  impl_->context = nullptr;
}

}  // namespace bench
