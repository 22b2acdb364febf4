#include "httpd/http_event_stream.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <civetweb.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "httpd/http_civet_io.h"
#include "httpd/http_error.h"

namespace bench {
namespace {

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

bool EventStream::Wait(absl::Duration timeout) {
  absl::SleepFor(timeout);
  return !Stopping();
}

void ServeEventStream(mg_connection* conn, const HttpRequest& request, bool keep_alive,
                      const HttpStreamHandler& handler, EventStreamSlots& slots) {
  const bool head = request.method == "HEAD";
  if (slots.open.fetch_add(1) >= slots.max_streams) {
    slots.open.fetch_sub(1);
    WriteHttpResponse(conn,
                      JsonErrorResponse(absl::ResourceExhaustedError(absl::StrCat(
                          "too many open event streams (", slots.max_streams, "); retry later"))),
                      head, keep_alive);
    return;
  }
  CivetEventStream stream(conn, slots.stopping, slots.stop_fd);
  absl::Status status;
  if (head) {
    stream.Begin();
  } else {
    status = handler(request, stream);
  }
  if (!stream.begun()) {
    if (status.ok()) {
      stream.Begin();
    } else {
      WriteHttpResponse(conn, JsonErrorResponse(status), head, keep_alive);
    }
  }
  if (stream.begun()) mg_disable_connection_keep_alive(conn);
  slots.open.fetch_sub(1);
}

}  // namespace bench
