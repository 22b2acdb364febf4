#include "httpd/tls_front.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/quote.h"

namespace bench {
namespace {

std::string OpenSslError() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

// "mtime:size" of each file, to notice a change.
std::string Stamp(const std::vector<std::string>& files) {
  std::string stamp;
  for (const std::string& file : files) {
    struct stat st {};
    if (file.empty() || stat(file.c_str(), &st) != 0) {
      stamp += "-;";
      continue;
    }
    absl::StrAppend(&stamp, st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, ":", st.st_size, ";");
  }
  return stamp;
}

using SslContext = std::shared_ptr<SSL_CTX>;

// A server context for the files; errors name the flag whose file did not load.
absl::StatusOr<SslContext> LoadContext(const TlsFrontOptions& options) {
  SslContext ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (ctx == nullptr) return absl::InternalError(absl::StrCat("TLS: ", OpenSslError()));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_AUTO_RETRY);
  // Clients resume sessions (browsers, node); with client certificates requested OpenSSL
  // refuses to resume one without a session id context, with an "internal error" alert.
  static constexpr unsigned char kSessionContext[] = "benchd-web";
  SSL_CTX_set_session_id_context(ctx.get(), kSessionContext, sizeof(kSessionContext) - 1);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), options.cert_file.c_str()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert ", QuotePrefix(options.cert_file), ": ", OpenSslError()));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), options.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-key ", QuotePrefix(options.key_file), ": ", OpenSslError()));
  }
  if (!options.client_ca.empty()) {
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options.client_ca.c_str());
    if (names == nullptr ||
        SSL_CTX_load_verify_locations(ctx.get(), options.client_ca.c_str(), nullptr) != 1) {
      if (names != nullptr) sk_X509_NAME_pop_free(names, X509_NAME_free);
      return absl::InvalidArgumentError(
          absl::StrCat("--client-ca ", QuotePrefix(options.client_ca), ": ", OpenSslError()));
    }
    SSL_CTX_set_client_CA_list(ctx.get(), names);
    // Requested and verified when sent; not required (SSL_VERIFY_FAIL_IF_NO_PEER_CERT off).
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  }
  return ctx;
}

std::vector<std::string> CertificateUris(SSL* ssl) {
  std::vector<std::string> uris;
  if (SSL_get_verify_result(ssl) != X509_V_OK) return uris;
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return uris;
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type != GEN_URI) continue;
    const ASN1_IA5STRING* uri = name->d.uniformResourceIdentifier;
    uris.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
                      static_cast<size_t>(ASN1_STRING_length(uri)));
  }
  if (names != nullptr) GENERAL_NAMES_free(names);
  X509_free(cert);
  return uris;
}

void SetTimeouts(int fd, absl::Duration timeout) {
  timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

bool SendAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

struct TlsFront::Impl {
  TlsFrontOptions options;
  std::atomic<int> backend_port{0};  // set by Serve, read by PeerUris on web threads
  int listen_fd = -1;
  int stop_fd = -1;
  int port = 0;
  std::thread acceptor;
  std::atomic<bool> stopping{false};

  absl::Mutex mu;
  SslContext context ABSL_GUARDED_BY(mu);
  std::string stamp ABSL_GUARDED_BY(mu);
  absl::Time last_check ABSL_GUARDED_BY(mu);
  int active ABSL_GUARDED_BY(mu) = 0;         // connection threads running
  std::set<int> clients ABSL_GUARDED_BY(mu);  // their sockets, shut down by Stop()
  // The relay socket's (address, port) → the URIs of its client's certificate.
  std::map<std::pair<std::string, int>, std::vector<std::string>> peers ABSL_GUARDED_BY(mu);
  absl::Time last_refusal_log ABSL_GUARDED_BY(mu) = absl::InfinitePast();

  std::vector<std::string> Files() const {
    return {options.cert_file, options.key_file, options.client_ca};
  }

  // The newest context, reloading the files when they changed since the last look.
  SslContext CurrentContext() {
    absl::MutexLock lock(&mu);
    const absl::Time now = absl::Now();
    if (now - last_check < options.refresh) return context;
    last_check = now;
    std::string current = Stamp(Files());
    if (current == stamp) return context;
    absl::StatusOr<SslContext> loaded = LoadContext(options);
    stamp = current;  // a bad file is reported once per change
    if (!loaded.ok()) {
      Log("web port TLS: keeping the previous certificate: ", loaded.status().message());
      return context;
    }
    Log("web port TLS: reloaded ", options.cert_file);
    context = *loaded;
    return context;
  }

  void LogRefusal(const std::string& why) {
    absl::MutexLock lock(&mu);
    const absl::Time now = absl::Now();
    if (now - last_refusal_log < absl::Seconds(1)) return;  // a flood logs one a second
    last_refusal_log = now;
    Log("web port TLS: handshake refused: ", why);
  }

  void AcceptLoop();
  void Relay(int client_fd);
};

void TlsFront::Impl::AcceptLoop() {
  while (!stopping.load()) {
    pollfd fds[2] = {{listen_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (stopping.load() || (fds[1].revents & POLLIN)) break;
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    {
      absl::MutexLock lock(&mu);
      if (active >= options.max_connections) {
        close(fd);
        continue;
      }
      ++active;
      clients.insert(fd);
    }
    std::thread([this, fd] {
      Relay(fd);
      absl::MutexLock lock(&mu);
      --active;
    }).detach();
  }
}

void TlsFront::Impl::Relay(int client_fd) {
  SetTimeouts(client_fd, options.io_timeout);
  SslContext ctx = CurrentContext();
  SSL* ssl = SSL_new(ctx.get());
  int backend_fd = -1;
  int relay_port = 0;
  std::pair<std::string, int> relay;  // this connection's end of the loopback hop
  if (ssl == nullptr || SSL_set_fd(ssl, client_fd) != 1) {
    LogRefusal(OpenSslError());
  } else if (SSL_accept(ssl) != 1) {
    LogRefusal(OpenSslError());
  } else {
    backend_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in backend{};
    backend.sin_family = AF_INET;
    backend.sin_port = htons(static_cast<uint16_t>(backend_port));
    backend.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sockaddr_in local{};
    socklen_t local_len = sizeof(local);
    if (backend_fd < 0 ||
        connect(backend_fd, reinterpret_cast<sockaddr*>(&backend), sizeof(backend)) != 0 ||
        getsockname(backend_fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) {
      Log("web port TLS: cannot reach the web server on 127.0.0.1:", backend_port.load());
    } else {
      relay_port = ntohs(local.sin_port);
      char address[INET_ADDRSTRLEN] = {0};
      inet_ntop(AF_INET, &local.sin_addr, address, sizeof(address));
      relay = {address, relay_port};
      std::vector<std::string> uris = CertificateUris(ssl);
      if (!uris.empty()) {
        absl::MutexLock lock(&mu);
        peers[relay] = std::move(uris);
      }
    }
  }
  char buffer[16 * 1024];
  while (relay_port != 0 && !stopping.load()) {
    int pending = SSL_pending(ssl);
    pollfd fds[3] = {{client_fd, POLLIN, 0}, {backend_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    if (pending == 0 && poll(fds, 3, -1) < 0) continue;
    if (fds[2].revents & POLLIN) break;
    if (pending > 0 || (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      int n = SSL_read(ssl, buffer, sizeof(buffer));
      if (n <= 0 || !SendAll(backend_fd, buffer, static_cast<size_t>(n))) break;
    }
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = recv(backend_fd, buffer, sizeof(buffer), 0);
      if (n <= 0 || SSL_write(ssl, buffer, static_cast<int>(n)) != n) break;
    }
  }
  if (relay_port != 0) {  // before the socket is closed: the tuple is ours until then
    absl::MutexLock lock(&mu);
    peers.erase(relay);
  }
  if (ssl != nullptr) {
    if (relay_port != 0) SSL_shutdown(ssl);
    SSL_free(ssl);
  }
  ERR_clear_error();
  if (backend_fd >= 0) close(backend_fd);
  absl::MutexLock lock(&mu);
  clients.erase(client_fd);
  close(client_fd);
}

TlsFront::TlsFront(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<TlsFront>> TlsFront::Listen(const TlsFrontOptions& options,
                                                           const std::string& host, int port) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  {
    absl::StatusOr<SslContext> ctx = LoadContext(options);
    if (!ctx.ok()) return ctx.status();
    absl::MutexLock lock(&impl->mu);
    impl->context = *ctx;
    impl->stamp = Stamp(impl->Files());
    impl->last_check = absl::Now();
  }
  const std::string address = absl::StrCat(host, ":", port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--http ", address, ": ", gai_strerror(rc)));
  }
  int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  bool ok = fd >= 0 && bind(fd, found->ai_addr, found->ai_addrlen) == 0 && listen(fd, 128) == 0;
  freeaddrinfo(found);
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  if (!ok || getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    std::string why = strerror(errno);
    if (fd >= 0) close(fd);
    return absl::UnavailableError(absl::StrCat("--http ", address, ": cannot listen: ", why));
  }
  impl->listen_fd = fd;
  impl->port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  impl->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl->stop_fd < 0) {
    close(fd);
    return absl::InternalError("eventfd failed");
  }
  return std::unique_ptr<TlsFront>(new TlsFront(std::move(impl)));
}

void TlsFront::Serve(int backend_port) {
  if (impl_->acceptor.joinable() || impl_->stopping.load()) return;
  impl_->backend_port = backend_port;
  Impl* raw = impl_.get();
  impl_->acceptor = std::thread([raw] { raw->AcceptLoop(); });
}

TlsFront::~TlsFront() {
  Stop();
  if (impl_->stop_fd >= 0) close(impl_->stop_fd);
}

int TlsFront::port() const { return impl_->port; }

std::vector<std::string> TlsFront::PeerUris(const std::string& relay_addr, int relay_port,
                                            int backend_port) const {
  absl::MutexLock lock(&impl_->mu);
  if (backend_port == 0 || backend_port != impl_->backend_port) return {};
  auto it = impl_->peers.find({relay_addr, relay_port});
  return it == impl_->peers.end() ? std::vector<std::string>{} : it->second;
}

int TlsFront::open_connections() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->active;
}

void TlsFront::Stop() {
  if (impl_->stopping.exchange(true)) return;
  uint64_t one = 1;
  (void)!write(impl_->stop_fd, &one, sizeof(one));
  if (impl_->acceptor.joinable()) impl_->acceptor.join();
  close(impl_->listen_fd);
  // Every relay polls the stop descriptor too; a handshake in progress is woken by the
  // shutdown of its socket.
  absl::MutexLock lock(&impl_->mu);
  for (int fd : impl_->clients) shutdown(fd, SHUT_RDWR);
  impl_->mu.Await(absl::Condition(
      +[](int* active) { return *active == 0; }, &impl_->active));
}

}  // namespace bench
