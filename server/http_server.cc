#include "server/http_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>

#include <civetweb.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/json_escape.h"
#include "common/log.h"

namespace bench {
namespace {

std::string StatusCodeName(absl::StatusCode code) {
  std::string name = absl::StatusCodeToString(code);  // "NOT_FOUND"
  return name;
}

std::vector<absl::string_view> Segments(absl::string_view path) {
  return absl::StrSplit(path, '/');
}

bool PatternMatches(const std::vector<std::string>& pattern, absl::string_view path) {
  std::vector<absl::string_view> parts = Segments(path);
  if (parts.size() != pattern.size()) return false;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (pattern[i] == "*") {
      if (parts[i].empty()) return false;
    } else if (pattern[i] != parts[i]) {
      return false;
    }
  }
  return true;
}

std::string UrlDecode(absl::string_view text) {
  std::string out(text.size() + 1, '\0');
  int n = mg_url_decode(text.data(), static_cast<int>(text.size()), out.data(),
                        static_cast<int>(out.size()), /*is_form_url_encoded=*/1);
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

// The socket of the connection civetweb serves `info` on: civetweb does not expose it,
// so it is found among this process's descriptors by its two addresses. -1 if not found.
int FindConnectionSocket(const mg_request_info* info) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long fd = strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof(local), peer_len = sizeof(peer);
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) {
      continue;
    }
    char host[INET6_ADDRSTRLEN] = {0};
    int local_port = 0, peer_port = 0;
    if (peer.ss_family == AF_INET) {
      auto* p = reinterpret_cast<sockaddr_in*>(&peer);
      inet_ntop(AF_INET, &p->sin_addr, host, sizeof(host));
      peer_port = ntohs(p->sin_port);
      local_port = ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
    } else if (peer.ss_family == AF_INET6) {
      auto* p = reinterpret_cast<sockaddr_in6*>(&peer);
      inet_ntop(AF_INET6, &p->sin6_addr, host, sizeof(host));
      peer_port = ntohs(p->sin6_port);
      local_port = ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port);
    } else {
      continue;
    }
    if (peer_port == info->remote_port && local_port == info->server_port &&
        std::strcmp(host, info->remote_addr) == 0) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

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

std::optional<std::string> HttpRequest::Query(const std::string& name) const {
  auto it = query.find(name);
  if (it == query.end()) return std::nullopt;
  return it->second;
}

bool EventStream::Wait(absl::Duration timeout) {
  absl::SleepFor(timeout);
  return !Stopping();
}

HttpResponse JsonErrorResponse(const absl::Status& status) {
  HttpResponse response;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument: response.status = 400; break;
    case absl::StatusCode::kNotFound: response.status = 404; break;
    case absl::StatusCode::kUnauthenticated:
      response.status = 401;
      response.headers.push_back({"WWW-Authenticate", "Bearer realm=\"benchfleet\""});
      break;
    case absl::StatusCode::kPermissionDenied: response.status = 403; break;
    case absl::StatusCode::kResourceExhausted:
      response.status = 503;
      response.headers.push_back({"Retry-After", "5"});
      break;
    case absl::StatusCode::kUnavailable: response.status = 503; break;
    default: response.status = 500;
  }
  response.content_type = "application/json";
  const absl::string_view message = status.message();
  response.body = absl::StrCat("{\"error\":{\"code\":\"", StatusCodeName(status.code()),
                               "\",\"message\":",
                               JsonString(std::string_view(message.data(), message.size())), "}}");
  response.headers.push_back({"Cache-Control", "no-store"});
  return response;
}

struct HttpServer::Impl {
  struct Route {
    std::string path;                  // exact path, pattern or prefix
    std::vector<std::string> pattern;  // segments, when `path` has a '*' segment
    bool prefix = false;
    Handler handler;        // plain
    StreamHandler stream;   // or an event stream
  };

  explicit Impl(HttpServerOptions o) : options(o) {}

  const Route* Find(const std::string& path) const {
    for (const Route& route : routes) {
      if (!route.prefix && route.pattern.empty() && route.path == path) return &route;
    }
    for (const Route& route : routes) {
      if (!route.pattern.empty() && PatternMatches(route.pattern, path)) return &route;
    }
    const Route* best = nullptr;
    for (const Route& route : routes) {
      if (route.prefix && path.compare(0, route.path.size(), route.path) == 0 &&
          (best == nullptr || route.path.size() > best->path.size())) {
        best = &route;
      }
    }
    return best;
  }

  void AddRoute(const std::string& path, bool prefix, Handler handler, StreamHandler stream) {
    Route route;
    route.path = path;
    route.prefix = prefix;
    if (!prefix) {
      std::vector<std::string> parts = absl::StrSplit(path, '/');
      if (std::find(parts.begin(), parts.end(), "*") != parts.end()) route.pattern = parts;
    }
    route.handler = std::move(handler);
    route.stream = std::move(stream);
    routes.push_back(std::move(route));
  }

  // Whether civetweb keeps the connection after this answer (its should_keep_alive).
  static bool KeepAlive(mg_connection* conn) {
    const mg_request_info* info = mg_get_request_info(conn);
    const char* connection = mg_get_header(conn, "Connection");
    if (connection != nullptr) {
      std::string value = connection;
      std::transform(value.begin(), value.end(), value.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      return value.find("keep-alive") != std::string::npos;
    }
    return info->http_version != nullptr && std::strcmp(info->http_version, "1.1") == 0;
  }

  static void Write(mg_connection* conn, const HttpResponse& response, bool head,
                    bool keep_alive) {
    std::string out = absl::StrCat("HTTP/1.1 ", response.status, " ",
                                   mg_get_response_code_text(conn, response.status),
                                   "\r\nContent-Type: ", response.content_type,
                                   "\r\nContent-Length: ", response.body.size(), "\r\n");
    bool cache_control = false;
    for (const auto& [name, value] : response.headers) {
      if (strcasecmp(name.c_str(), "Cache-Control") == 0) cache_control = true;
      absl::StrAppend(&out, name, ": ", value, "\r\n");
    }
    if (!cache_control) out += "Cache-Control: no-store\r\n";
    absl::StrAppend(&out, "Connection: ", keep_alive ? "keep-alive" : "close", "\r\n\r\n");
    if (!head) out += response.body;
    mg_write(conn, out.data(), out.size());
    if (!keep_alive) mg_disable_connection_keep_alive(conn);
  }

  static HttpRequest Parse(mg_connection* conn) {
    const mg_request_info* info = mg_get_request_info(conn);
    HttpRequest request;
    request.method = info->request_method;
    request.path = info->local_uri != nullptr ? info->local_uri : "";
    request.remote_addr = info->remote_addr;
    request.remote_port = info->remote_port;
    request.local_port = info->server_port;
    if (info->query_string != nullptr) {
      for (absl::string_view pair : absl::StrSplit(info->query_string, '&', absl::SkipEmpty())) {
        size_t eq = pair.find('=');
        std::string name = UrlDecode(pair.substr(0, eq));
        std::string value = eq == absl::string_view::npos ? "" : UrlDecode(pair.substr(eq + 1));
        request.query.emplace(std::move(name), std::move(value));
      }
    }
    for (int i = 0; i < info->num_headers; ++i) {
      std::string name = info->http_headers[i].name;
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      const char* value = info->http_headers[i].value ? info->http_headers[i].value : "";
      auto [it, inserted] = request.headers.emplace(name, value);
      if (!inserted) absl::StrAppend(&it->second, ", ", value);
    }
    return request;
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
  void ServeStream(mg_connection* conn, const HttpRequest& request, const Route& route,
                   bool keep_alive);

  const HttpServerOptions options;
  std::vector<Route> routes;
  struct Gate {
    std::string prefix;
    std::function<absl::Status(const HttpRequest&)> check;
  };
  std::vector<Gate> gates;
  mg_context* context = nullptr;
  int stop_fd = -1;  // an eventfd, readable once stopping
  std::atomic<bool> stopping{false};
  std::atomic<int> open_streams{0};
  std::mutex stop_mu;
  std::mutex log_mu;
  int64_t log_window_start_ms = 0;
  int logs_in_window = 0;
  int64_t logs_suppressed = 0;
  sockaddr_storage nudge_address{};  // the bound port, on loopback for a wildcard address
  socklen_t nudge_length = 0;
};

namespace {

class CivetEventStream : public EventStream {
 public:
  CivetEventStream(mg_connection* conn, const std::atomic<bool>* stopping, int stop_fd)
      : conn_(conn), stopping_(stopping), stop_fd_(stop_fd) {
    socket_ = FindConnectionSocket(mg_get_request_info(conn));
  }

  bool Send(absl::string_view event, absl::string_view data) override {
    std::string frame;
    if (!event.empty()) absl::StrAppend(&frame, "event: ", event, "\n");
    for (absl::string_view line : absl::StrSplit(data, '\n')) {
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      absl::StrAppend(&frame, "data: ", line, "\n");
    }
    frame += "\n";
    return WriteFrame(frame);
  }

  bool Ping() override { return WriteFrame(": keep-alive\n\n"); }

  bool Stopping() const override { return stopping_->load(); }

  bool Wait(absl::Duration timeout) override {
    if (failed_ || Stopping()) return false;
    const absl::Time deadline = absl::Now() + timeout;
    bool watch_client = socket_ >= 0;
    while (true) {
      absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return !Stopping();
      pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {socket_, POLLRDHUP, 0}};
      int ms = static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
      int n = poll(fds, watch_client ? 2 : 1, ms);
      if (n < 0 && errno != EINTR) return !Stopping();
      if (Stopping() || (fds[0].revents & POLLIN)) return false;
      if (watch_client && fds[1].revents != 0) {
        if (fds[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
          failed_ = true;  // the client closed its side
          return false;
        }
        watch_client = false;  // it sent something unasked for; stop watching it
      }
    }
  }

  // Sends the stream's head unless sent; false if it could not be.
  bool Begin() {
    if (begun_) return !failed_;
    begun_ = true;
    static constexpr absl::string_view kHead =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
        "X-Accel-Buffering: no\r\nConnection: close\r\n\r\n";
    if (mg_write(conn_, kHead.data(), kHead.size()) != static_cast<int>(kHead.size())) {
      failed_ = true;
    }
    return !failed_;
  }
  bool begun() const { return begun_; }

 private:
  bool WriteFrame(const std::string& frame) {
    if (failed_ || Stopping() || !Begin()) return false;
    if (mg_write(conn_, frame.data(), frame.size()) != static_cast<int>(frame.size())) {
      failed_ = true;
    }
    return !failed_ && !Stopping();
  }

  mg_connection* const conn_;
  const std::atomic<bool>* const stopping_;
  const int stop_fd_;
  int socket_ = -1;
  bool begun_ = false;
  bool failed_ = false;
};

}  // namespace

int HttpServer::Impl::Serve(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  const bool keep_alive = KeepAlive(conn) && !stopping.load();
  const std::string method = info->request_method ? info->request_method : "";
  if (method != "GET" && method != "HEAD") {
    HttpResponse response{405, "text/plain; charset=utf-8", "only GET and HEAD\n"};
    response.headers.push_back({"Allow", "GET, HEAD"});
    Write(conn, response, false, false);
    return 405;
  }
  HttpRequest request = Parse(conn);
  const bool head = method == "HEAD";
  for (const Gate& gate : gates) {
    if (request.path.compare(0, gate.prefix.size(), gate.prefix) != 0) continue;
    absl::Status open = gate.check(request);
    if (!open.ok()) {
      HttpResponse refused = JsonErrorResponse(open);
      Write(conn, refused, head, keep_alive);
      return refused.status;
    }
  }
  const Route* route = Find(request.path);
  if (route == nullptr) {
    Write(conn, HttpResponse{404, "text/plain; charset=utf-8", "not found\n"}, head, keep_alive);
    return 404;
  }
  if (route->stream) {
    ServeStream(conn, request, *route, keep_alive);
    return 200;
  }
  HttpResponse response = route->handler(request);
  Write(conn, response, head, keep_alive);
  return response.status;
}

void HttpServer::Impl::ServeStream(mg_connection* conn, const HttpRequest& request,
                                   const Route& route, bool keep_alive) {
  const bool head = request.method == "HEAD";
  if (open_streams.fetch_add(1) >= options.max_event_streams) {
    open_streams.fetch_sub(1);
    Write(conn,
          JsonErrorResponse(absl::ResourceExhaustedError(
              absl::StrCat("too many open event streams (", options.max_event_streams,
                           "); retry later"))),
          head, keep_alive);
    return;
  }
  CivetEventStream stream(conn, &stopping, stop_fd);
  absl::Status status;
  if (head) {
    stream.Begin();
  } else {
    status = route.stream(request, stream);
  }
  if (!stream.begun()) {
    if (status.ok()) {
      stream.Begin();
    } else {
      Write(conn, JsonErrorResponse(status), head, keep_alive);
    }
  }
  if (stream.begun()) mg_disable_connection_keep_alive(conn);
  open_streams.fetch_sub(1);
}

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>(options)) {}

HttpServer::~HttpServer() {
  Stop();
  if (impl_->stop_fd >= 0) close(impl_->stop_fd);
}

void HttpServer::Handle(const std::string& path, Handler handler) {
  impl_->AddRoute(path, false, std::move(handler), nullptr);
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
  impl_->AddRoute(prefix, true, std::move(handler), nullptr);
}

void HttpServer::HandleEvents(const std::string& path, StreamHandler handler) {
  impl_->AddRoute(path, !path.empty() && path.back() == '/', nullptr, std::move(handler));
}

int HttpServer::open_event_streams() const { return impl_->open_streams.load(); }

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
