#include "worker/sim/rendezvous.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>
#include <thread>

namespace bench::sim {
namespace {

using Clock = std::chrono::steady_clock;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

bool SendAll(int fd, const std::string& text) {
  size_t sent = 0;
  while (sent < text.size()) {
    ssize_t n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Reads up to and including "\n" into *line (without it), by the deadline.
bool ReadLine(int fd, std::string* buffer, std::string* line, Clock::time_point deadline) {
  while (true) {
    if (size_t nl = buffer->find('\n'); nl != std::string::npos) {
      *line = buffer->substr(0, nl);
      buffer->erase(0, nl + 1);
      return true;
    }
    if (buffer->size() > 65536) return false;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, MillisLeft(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char chunk[4096];
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer->append(chunk, static_cast<size_t>(n));
  }
}

// "RANK GPU NODE" -> its parts; the node is the rest of the line.
bool ParsePlace(const std::string& text, int* rank, RankPlace* place) {
  std::istringstream in(text);
  if (!(in >> *rank >> place->gpu)) return false;
  std::string node;
  std::getline(in >> std::ws, node);
  if (node.empty()) return false;
  place->node = node;
  return true;
}

std::string PlaceLine(int rank, const RankPlace& place) {
  return std::to_string(rank) + " " + std::to_string(place.gpu) + " " + place.node + "\n";
}

bool Resolve(const std::string& host, int port, bool passive, addrinfo** out, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, out);
  if (rc != 0) {
    *error = "cannot resolve MASTER_ADDR " + host + ": " + ::gai_strerror(rc);
    return false;
  }
  return true;
}

bool Host(int world_size, const std::string& addr, int port, const RankPlace& self,
          double timeout_s, RendezvousResult* out, std::string* error) {
  const std::string where = addr + ":" + std::to_string(port);
  addrinfo* info = nullptr;
  if (!Resolve(addr, port, true, &info, error)) return false;
  Fd listener;
  std::string last_error = "no address";
  for (addrinfo* a = info; a != nullptr; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (fd.get() < 0) continue;
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd.get(), world_size) == 0) {
      listener = std::move(fd);
      break;
    }
    last_error = std::strerror(errno);
  }
  ::freeaddrinfo(info);
  if (listener.get() < 0) {
    *error = "rank 0 cannot listen on " + where + ": " + last_error;
    return false;
  }
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  out->places.assign(static_cast<size_t>(world_size), RankPlace{});
  out->places[0] = self;
  std::vector<Fd> peers;
  std::set<int> joined;
  while (static_cast<int>(joined.size()) < world_size - 1) {
    pollfd p{listener.get(), POLLIN, 0};
    int ready = ::poll(&p, 1, MillisLeft(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      std::string missing;
      for (int r = 1; r < world_size; ++r) {
        if (joined.count(r) == 0) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
      *error = "rank(s) " + missing + " of " + std::to_string(world_size) + " did not come to " +
               where + " within " + std::to_string(timeout_s) + " s";
      return false;
    }
    Fd peer(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (peer.get() < 0) continue;
    std::string buffer, line;
    if (!ReadLine(peer.get(), &buffer, &line, deadline)) continue;  // a stray connection
    int rank = -1;
    RankPlace place;
    if (line.rfind("hello ", 0) != 0 || !ParsePlace(line.substr(6), &rank, &place)) {
      *error = "rendezvous at " + where + ": malformed hello '" + line + "'";
      return false;
    }
    if (rank < 1 || rank >= world_size) {
      *error = "rendezvous at " + where + ": rank " + std::to_string(rank) +
               " is outside the world of " + std::to_string(world_size);
      return false;
    }
    if (!joined.insert(rank).second) {
      *error = "rendezvous at " + where + ": rank " + std::to_string(rank) + " came twice";
      return false;
    }
    out->places[static_cast<size_t>(rank)] = place;
    peers.push_back(std::move(peer));
  }
  // A little ahead, so that every rank has the table before iteration 1 starts.
  out->start_unix_s = UnixNow() + 0.2;
  char head[96];
  std::snprintf(head, sizeof(head), "table %.6f %d\n", out->start_unix_s, world_size);
  std::string table = head;
  for (int r = 0; r < world_size; ++r) table += PlaceLine(r, out->places[static_cast<size_t>(r)]);
  table += "end\n";
  for (const Fd& peer : peers) {
    if (!SendAll(peer.get(), table)) {
      *error = "rendezvous at " + where + ": a rank left before it got the table";
      return false;
    }
  }
  return true;
}

bool Join(int rank, int world_size, const std::string& addr, int port, const RankPlace& self,
          double timeout_s, RendezvousResult* out, std::string* error) {
  const std::string where = addr + ":" + std::to_string(port);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  Fd fd;
  std::string last_error = "no address";
  while (fd.get() < 0) {
    addrinfo* info = nullptr;
    if (!Resolve(addr, port, false, &info, error)) return false;
    for (addrinfo* a = info; a != nullptr && fd.get() < 0; a = a->ai_next) {
      Fd attempt(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
      if (attempt.get() < 0) continue;
      if (::connect(attempt.get(), a->ai_addr, a->ai_addrlen) == 0) {
        fd = std::move(attempt);
      } else {
        last_error = std::strerror(errno);
      }
    }
    ::freeaddrinfo(info);
    if (fd.get() >= 0) break;
    if (Clock::now() >= deadline) {
      *error = "rank " + std::to_string(rank) + " could not reach rank 0 at " + where + " within " +
               std::to_string(timeout_s) + " s (" + last_error + ")";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // rank 0 not up yet
  }
  if (!SendAll(fd.get(), "hello " + PlaceLine(rank, self))) {
    *error = "rank " + std::to_string(rank) + ": rank 0 at " + where + " closed the connection";
    return false;
  }
  std::string buffer, line;
  auto lost = [&](const std::string& what) {
    *error = "rank " + std::to_string(rank) + ": no table from rank 0 at " + where + " within " +
             std::to_string(timeout_s) + " s (" + what + ")";
    return false;
  };
  if (!ReadLine(fd.get(), &buffer, &line, deadline)) return lost("no answer");
  int world = 0;
  if (std::sscanf(line.c_str(), "table %lf %d", &out->start_unix_s, &world) != 2 ||
      world != world_size) {
    return lost("unexpected answer '" + line + "'");
  }
  out->places.assign(static_cast<size_t>(world_size), RankPlace{});
  for (int r = 0; r < world_size; ++r) {
    int got = -1;
    RankPlace place;
    if (!ReadLine(fd.get(), &buffer, &line, deadline) || !ParsePlace(line, &got, &place) ||
        got != r) {
      return lost("a malformed table");
    }
    out->places[static_cast<size_t>(r)] = place;
  }
  if (!ReadLine(fd.get(), &buffer, &line, deadline) || line != "end") return lost("no end");
  return true;
}

}  // namespace

bool Rendezvous(int rank, int world_size, const std::string& master_addr, int master_port,
                const RankPlace& self, double timeout_s, RendezvousResult* out,
                std::string* error) {
  if (self.node.empty() || self.node.find('\n') != std::string::npos) {
    *error = "the node name '" + self.node + "' is empty or spans lines";
    return false;
  }
  if (world_size <= 1) {
    out->places = {self};
    out->start_unix_s = UnixNow();
    return true;
  }
  if (rank == 0) return Host(world_size, master_addr, master_port, self, timeout_s, out, error);
  return Join(rank, world_size, master_addr, master_port, self, timeout_s, out, error);
}

}  // namespace bench::sim
