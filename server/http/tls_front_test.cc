// The web port's TLS front over real sockets: an HttpServer behind a TlsFront on
// 127.0.0.1, clients speaking TLS with OpenSSL, a PKI made at test time by deploy/pki.
#include "httpd/tls_front.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "httpd/http_server.h"
#include "httpd/http_test_client.h"
#include "httpd/tls_test_client.h"
#include "server/http/http_auth.h"
#include "server/test_pki.h"

namespace bench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

void Pki(const std::string& command) { test_pki::Run(command); }

class TlsFrontTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(absl::StrCat(::testing::TempDir(), "tls_front_", getpid()));
    std::filesystem::remove_all(*dir_);
    const std::string& d = *dir_;
    Pki(absl::StrCat("./make-ca.sh ", d, "/ca"));
    Pki(absl::StrCat("./make-server-cert.sh ", d, "/ca server DNS:localhost,IP:127.0.0.1"));
    Pki(absl::StrCat("./make-client-cert.sh ", d, "/ca agent node-a"));
    Pki(absl::StrCat("./make-client-cert.sh ", d, "/ca view alice"));
    Pki(absl::StrCat("./make-ca.sh ", d, "/foreign"));
    Pki(absl::StrCat("./make-client-cert.sh ", d, "/foreign admin mallory"));
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }

  void SetUp() override {
    server_.Handle("/who", [this](const HttpRequest& request) {
      std::optional<Principal> who = auth_.PrincipalOf(request);
      return HttpResponse{200, "text/plain", who ? who->Describe() : "nobody"};
    });
    // A route that needs an identity allowed to read.
    server_.Handle("/secret", [this](const HttpRequest& request) {
      std::optional<Principal> who = auth_.PrincipalOf(request);
      return HttpResponse{200, "text/plain", who ? who->Describe() : "nobody"};
    });
    server_.SetGate("/secret",
                    [this](const HttpRequest& request) { return auth_.AuthorizeRead(request); });
    server_.HandleEvents("/events", [](const HttpRequest&, EventStream& stream) {
      if (!stream.Send("hello", "{}")) return absl::OkStatus();
      while (stream.Wait(absl::Seconds(1))) {
      }
      return absl::OkStatus();
    });
  }

  // Starts the front (with `options` filled from the test PKI) before the server.
  void Start(absl::Duration refresh = absl::Seconds(60)) {
    TlsFrontOptions options;
    options.cert_file = Ca("server.pem");
    options.key_file = Ca("server.key");
    options.client_ca = Ca("ca.pem");
    options.refresh = refresh;
    absl::StatusOr<std::unique_ptr<TlsFront>> front = TlsFront::Listen(options, "127.0.0.1", 0);
    ASSERT_TRUE(front.ok()) << front.status();
    front_ = std::move(*front);
    auth_ = HttpAuthenticator::On(nullptr, front_.get());
    absl::StatusOr<int> backend = server_.Start("127.0.0.1", 0);
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_port_ = *backend;
    front_->Serve(*backend);
  }

  static std::string Ca(const std::string& file) { return absl::StrCat(*dir_, "/ca/", file); }

  absl::StatusOr<http_test::TlsExchange> Get(const std::string& path, const std::string& cert = "",
                                             const std::string& key = "") {
    return http_test::TlsFetch(
        front_->port(), Ca("ca.pem"),
        absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
        cert, key);
  }

  static std::string* dir_;
  int backend_port_ = 0;
  // Idle keep-alive connections are kept a minute: a test's connection outlives a slow step.
  HttpServer server_{[] {
    HttpServerOptions options;
    options.keep_alive_timeout_ms = 60'000;
    return options;
  }()};
  std::unique_ptr<TlsFront> front_;
  HttpAuthenticator auth_ = HttpAuthenticator::Off();
};

std::string* TlsFrontTest::dir_ = nullptr;

// The local ports of the established IPv4 connections to 127.0.0.1:`port`, as any local
// user reads them from /proc/net/tcp (addresses in the host's byte order: little-endian).
std::vector<int> LocalPortsConnectedTo(int port) {
  std::vector<int> ports;
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the header
  const std::string remote = absl::StrCat(
      "0100007F:", absl::AsciiStrToUpper(absl::StrCat(absl::Hex(port, absl::kZeroPad4))));
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, peer, state;
    fields >> slot >> local >> peer >> state;
    if (peer != remote || state != "01") continue;  // 01: ESTABLISHED
    ports.push_back(std::stoi(local.substr(local.find(':') + 1), nullptr, 16));
  }
  return ports;
}

// A plain HTTP request to 127.0.0.1:`port` from a socket bound to `from_addr`:`from_port`;
// the whole answer, or why it could not be sent.
std::string FetchFrom(const char* from_addr, int from_port, int port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  from.sin_port = htons(static_cast<uint16_t>(from_port));
  inet_pton(AF_INET, from_addr, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    std::string why =
        absl::StrCat("cannot connect from ", from_addr, ":", from_port, ": ", strerror(errno));
    close(fd);
    return why;
  }
  http_test::SendAll(fd, request);
  std::string response = http_test::ReadToEof(fd);
  close(fd);
  return response;
}

TEST_F(TlsFrontTest, ServesHttpsAndKnowsTheClientCertificate) {
  Start();
  absl::StatusOr<http_test::TlsExchange> anonymous = Get("/who");
  ASSERT_TRUE(anonymous.ok()) << anonymous.status();
  EXPECT_THAT(anonymous->response, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(anonymous->response, HasSubstr("\r\n\r\nnobody"));
  EXPECT_THAT(anonymous->server_subject, HasSubstr("CN=server"));

  absl::StatusOr<http_test::TlsExchange> agent = Get("/who", Ca("node-a.pem"), Ca("node-a.key"));
  ASSERT_TRUE(agent.ok()) << agent.status();
  EXPECT_THAT(agent->response, HasSubstr("\r\n\r\nnode-a (agent, cert)"));
}

// Issue 24's attack: a local user reads the relay's port of a live client-certificate
// connection from /proc/net/tcp, binds 127.0.0.2 on that port and asks the internal
// port for data. The identity belongs to the relayed connection alone.
TEST_F(TlsFrontTest, AnotherSocketOnTheRelaysPortDoesNotGetItsIdentity) {
  Start();
  absl::StatusOr<std::unique_ptr<http_test::TlsConnection>> alice = http_test::TlsConnection::Open(
      front_->port(), Ca("ca.pem"), Ca("alice.pem"), Ca("alice.key"));
  ASSERT_TRUE(alice.ok()) << alice.status();
  const std::string ask = "GET /secret HTTP/1.1\r\nHost: localhost\r\n\r\n";
  // Answered with her identity: the front has recorded it, and the relay stays open.
  EXPECT_THAT((*alice)->Exchange(ask, "alice (view, cert)"), HasSubstr("alice (view, cert)"));
  std::vector<int> relays = LocalPortsConnectedTo(backend_port_);
  ASSERT_EQ(relays.size(), 1u) << "the front's one relay to the web server";

  std::string attack = FetchFrom("127.0.0.2", relays[0], backend_port_,
                                 "GET /secret HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(attack, StartsWith("HTTP/1.1 401")) << attack;
  EXPECT_THAT(attack, Not(HasSubstr("alice")));

  // The real connection keeps its identity.
  EXPECT_THAT((*alice)->Exchange(ask, "alice (view, cert)"), HasSubstr("alice (view, cert)"));
  // And a plain caller on the internal port from the relay's own address but another
  // port is nobody too.
  EXPECT_THAT(FetchFrom("127.0.0.1", 0, backend_port_,
                        "GET /secret HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
              StartsWith("HTTP/1.1 401"));
}

TEST_F(TlsFrontTest, AResumedSessionKeepsItsClientCertificate) {
  Start();
  SSL_SESSION* session = nullptr;
  const std::string request = "GET /who HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<http_test::TlsExchange> exchange = http_test::TlsFetch(
        front_->port(), Ca("ca.pem"), request, Ca("node-a.pem"), Ca("node-a.key"), "", &session);
    ASSERT_TRUE(exchange.ok()) << "connection " << i << ": " << exchange.status();
    EXPECT_EQ(exchange->resumed, i > 0) << "connection " << i;
    EXPECT_THAT(exchange->response, HasSubstr("\r\n\r\nnode-a (agent, cert)")) << i;
  }
  SSL_SESSION_free(session);
}

TEST_F(TlsFrontTest, RefusesAForeignCertificateAndPlainHttp) {
  Start();
  absl::StatusOr<http_test::TlsExchange> foreign =
      Get("/who", absl::StrCat(*dir_, "/foreign/mallory.pem"),
          absl::StrCat(*dir_, "/foreign/mallory.key"));
  // TLS 1.3 reports the refusal after the client's handshake has completed: either the
  // handshake fails or no answer comes.
  if (foreign.ok()) {
    EXPECT_EQ(foreign->response, "");
  } else {
    EXPECT_EQ(foreign.status().code(), absl::StatusCode::kUnavailable);
  }
  std::string plain =
      http_test::Fetch(front_->port(), "GET /who HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(plain, ::testing::Not(HasSubstr("nobody")));
  // The front still serves after both.
  absl::StatusOr<http_test::TlsExchange> again = Get("/who");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT(again->response, HasSubstr("nobody"));
}

TEST_F(TlsFrontTest, PicksUpARenewedCertificateWithoutRestart) {
  Start(absl::Seconds(1));
  absl::StatusOr<http_test::TlsExchange> before = Get("/who");
  ASSERT_TRUE(before.ok()) << before.status();
  const std::string old_subject = before->server_subject;
  // Renewed under the same file names, with a new subject to tell it apart.
  Pki(absl::StrCat("./make-server-cert.sh ", *dir_, "/ca server DNS:localhost,IP:127.0.0.1"));
  std::string renewed = absl::StrCat(*dir_, "/ca/renewed");
  Pki(absl::StrCat("./make-server-cert.sh ", *dir_, "/ca renewed DNS:localhost,IP:127.0.0.1"));
  std::filesystem::rename(renewed + ".key", Ca("server.key"));
  std::filesystem::rename(renewed + ".pem", Ca("server.pem"));
  std::string subject = old_subject;
  for (int i = 0; i < 40 && subject == old_subject; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    absl::StatusOr<http_test::TlsExchange> after = Get("/who");
    ASSERT_TRUE(after.ok()) << after.status();
    subject = after->server_subject;
  }
  EXPECT_THAT(subject, HasSubstr("CN=renewed"));
}

TEST_F(TlsFrontTest, RelaysAnEventStreamAndEndsItWhenTheClientGoes) {
  Start();
  {
    // A client that reads the first event and closes.
    absl::StatusOr<http_test::TlsExchange> stream = http_test::TlsFetch(
        front_->port(), Ca("ca.pem"), "GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n", "", "",
        /*read_until=*/"event: hello");
    ASSERT_TRUE(stream.ok()) << stream.status();
    EXPECT_THAT(stream->response, HasSubstr("text/event-stream"));
  }
  for (int i = 0; i < 50 && server_.open_event_streams() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(server_.open_event_streams(), 0);
}

TEST_F(TlsFrontTest, StopsPromptlyWithAHandshakeHanging) {
  Start();
  int idle = http_test::ConnectLoopback(front_->port());  // never says hello
  ASSERT_GE(idle, 0);
  // Stop must find the connection accepted and its handshake waiting, else this tests
  // nothing: wait (generously) until the front has taken it.
  const auto taken_by = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (front_->open_connections() == 0 && std::chrono::steady_clock::now() < taken_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(front_->open_connections(), 1) << "the front never accepted the connection";
  auto start = std::chrono::steady_clock::now();
  front_->Stop();
  // Not the handshake's own timeout (io_timeout, 10 s): Stop wakes it.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  close(idle);
}

TEST(TlsFrontOptionsTest, AFileThatDoesNotLoadIsNamedByItsFlag) {
  TlsFrontOptions options;
  options.cert_file = "/nonexistent/server.pem";
  options.key_file = "/nonexistent/server.key";
  absl::StatusOr<std::unique_ptr<TlsFront>> front = TlsFront::Listen(options, "127.0.0.1", 0);
  ASSERT_FALSE(front.ok());
  EXPECT_EQ(front.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(front.status().message(), HasSubstr("--tls-cert"));
}

TEST(CookieValueTest, FindsAndDecodesTheNamedCookie) {
  EXPECT_EQ(CookieValue("a=1; bench_token=abc%2Fd; b=2", "bench_token"), "abc/d");
  EXPECT_EQ(CookieValue("bench_token=\"q\"", "bench_token"), "q");
  EXPECT_EQ(CookieValue("xbench_token=1", "bench_token"), std::nullopt);
  EXPECT_EQ(CookieValue("", "bench_token"), std::nullopt);
  EXPECT_EQ(CookieValue("bench_token=%zz%4", "bench_token"), "%zz%4");
}

}  // namespace
}  // namespace bench
