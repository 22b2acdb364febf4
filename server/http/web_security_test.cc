// benchd's web port with security on, in-process on 127.0.0.1:0 with a PKI and tokens
// made by deploy/pki: HTTPS with the gRPC port's certificate; the data (/api/, /metrics)
// needs a credential that may read (a client certificate, a bearer token or the page's
// cookie); the page's own files, /healthz and /readyz do not. And the same rules over
// plain HTTP on loopback when only tokens are on.
#include <filesystem>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "httpd/http_test_client.h"
#include "httpd/tls_test_client.h"
#include "server/benchd.h"
#include "server/test_pki.h"

namespace bench {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class WebSecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char pattern[] = "/tmp/bench_web_security_XXXXXX";
    dir_ = new std::string(mkdtemp(pattern));
    const std::string ca = *dir_ + "/ca";
    test_pki::Run("./make-ca.sh " + ca);
    test_pki::Run("./make-server-cert.sh " + ca + " benchd DNS:localhost,IP:127.0.0.1");
    test_pki::Run("./make-client-cert.sh " + ca + " agent node-a");
    test_pki::Run("./make-client-cert.sh " + ca + " submit alice");
    tokens_file_ = new std::string(*dir_ + "/tokens");
    view_token_ = new std::string(test_pki::NewToken("view", "grafana", *tokens_file_));
    agent_token_ = new std::string(test_pki::NewToken("agent", "node-b", *tokens_file_));
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete tokens_file_;
    delete view_token_;
    delete agent_token_;
  }
  void TearDown() override { benchd_.reset(); }

  void StartBenchd(bool tls) {
    BenchdOptions options;
    options.listen = "127.0.0.1:0";
    options.http = "127.0.0.1:0";
    options.db = absl::StrCat(*dir_, "/bench-", tls ? "tls" : "plain", ".db");
    if (tls) {
      options.tls_cert = Ca("benchd.pem");
      options.tls_key = Ca("benchd.key");
      options.client_ca = Ca("ca.pem");
    }
    options.tokens = *tokens_file_;
    absl::StatusOr<std::unique_ptr<Benchd>> benchd = Benchd::Start(options);
    ASSERT_TRUE(benchd.ok()) << benchd.status();
    benchd_ = std::move(*benchd);
  }

  static std::string Ca(const std::string& file) { return *dir_ + "/ca/" + file; }

  // The whole answer to GET `path` over HTTPS, with extra header lines and a client
  // certificate named `cert` (in the CA's directory) when given.
  std::string Https(const std::string& path, const std::string& headers = "",
                    const std::string& cert = "") {
    absl::StatusOr<http_test::TlsExchange> exchange = http_test::TlsFetch(
        benchd_->http_port(), Ca("ca.pem"),
        absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: localhost\r\n", headers,
                     "Connection: close\r\n\r\n"),
        cert.empty() ? "" : Ca(cert + ".pem"), cert.empty() ? "" : Ca(cert + ".key"));
    EXPECT_TRUE(exchange.ok()) << exchange.status();
    return exchange.ok() ? exchange->response : "";
  }

  static std::string* dir_;
  static std::string* tokens_file_;
  static std::string* view_token_;
  static std::string* agent_token_;
  std::unique_ptr<Benchd> benchd_;
};

std::string* WebSecurityTest::dir_ = nullptr;
std::string* WebSecurityTest::tokens_file_ = nullptr;
std::string* WebSecurityTest::view_token_ = nullptr;
std::string* WebSecurityTest::agent_token_ = nullptr;

TEST_F(WebSecurityTest, ProbesAndThePageNeedNoCredential) {
  StartBenchd(true);
  EXPECT_THAT(Https("/healthz"), StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(Https("/readyz"), StartsWith("HTTP/1.1 200"));
  std::string page = Https("/");
  EXPECT_THAT(page, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(page, HasSubstr("<html"));
}

TEST_F(WebSecurityTest, TheDataNeedsACredentialThatMayRead) {
  StartBenchd(true);
  std::string none = Https("/api/v1/jobs");
  EXPECT_THAT(none, StartsWith("HTTP/1.1 401"));
  EXPECT_THAT(none, HasSubstr("WWW-Authenticate: Bearer"));
  EXPECT_THAT(none, HasSubstr("\"code\":\"UNAUTHENTICATED\""));
  EXPECT_THAT(Https("/metrics"), StartsWith("HTTP/1.1 401"));
  EXPECT_THAT(Https("/api/v1/jobs/job-1/events"), StartsWith("HTTP/1.1 401"));
  EXPECT_THAT(Https("/api/v1/jobs", "Authorization: Bearer not-a-token\r\n"),
              StartsWith("HTTP/1.1 401"));

  const std::string bearer = absl::StrCat("Authorization: Bearer ", *view_token_, "\r\n");
  EXPECT_THAT(Https("/api/v1/jobs", bearer), StartsWith("HTTP/1.1 200"));
  std::string metrics = Https("/metrics", bearer);
  EXPECT_THAT(metrics, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(metrics, HasSubstr("bench_"));
  // The page's cookie, as the browser sends it.
  EXPECT_THAT(Https("/api/v1/agents",
                    absl::StrCat("Cookie: theme=dark; bench_token=", *view_token_, "\r\n")),
              StartsWith("HTTP/1.1 200"));
  // A user's certificate may read; an agent's, by certificate or token, may not.
  EXPECT_THAT(Https("/api/v1/results", "", "alice"), StartsWith("HTTP/1.1 200"));
  std::string agent = Https("/api/v1/jobs", "", "node-a");
  EXPECT_THAT(agent, StartsWith("HTTP/1.1 403"));
  EXPECT_THAT(agent, HasSubstr("PERMISSION_DENIED"));
  EXPECT_THAT(Https("/api/v1/jobs", absl::StrCat("Authorization: Bearer ", *agent_token_, "\r\n")),
              StartsWith("HTTP/1.1 403"));
}

TEST_F(WebSecurityTest, TokensGuardPlainHttpOnLoopbackToo) {
  StartBenchd(false);
  EXPECT_THAT(http_test::Get(benchd_->http_port(), "/api/v1/jobs"), StartsWith("HTTP/1.1 401"));
  EXPECT_THAT(http_test::Get(benchd_->http_port(), "/api/v1/jobs",
                             absl::StrCat("Authorization: Bearer ", *view_token_, "\r\n")),
              StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(http_test::Get(benchd_->http_port(), "/healthz"), StartsWith("HTTP/1.1 200"));
}

TEST_F(WebSecurityTest, TheBearerSchemeIsCaseInsensitive) {
  StartBenchd(false);
  for (const char* scheme : {"Bearer", "bearer", "BEARER", "bEaReR"}) {
    EXPECT_THAT(http_test::Get(benchd_->http_port(), "/api/v1/jobs",
                               absl::StrCat("Authorization: ", scheme, " ", *view_token_, "\r\n")),
                StartsWith("HTTP/1.1 200"))
        << scheme;
  }
  EXPECT_THAT(http_test::Get(benchd_->http_port(), "/api/v1/jobs",
                             absl::StrCat("Authorization: Basic ", *view_token_, "\r\n")),
              StartsWith("HTTP/1.1 401"));
}

TEST(WebSecurityOptionsTest, ANonLoopbackPortNeedsTlsAndAuthenticationOrInsecure) {
  BenchdOptions options;
  options.listen = "127.0.0.1:0";
  options.http = "0.0.0.0:7601";
  absl::Status plain = CheckSecurityOptions(options);
  EXPECT_EQ(plain.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plain.message(), HasSubstr("--insecure"));
  options.tls_cert = "benchd.pem";
  options.tls_key = "benchd.key";
  // TLS without authentication would make every caller on the network an admin.
  absl::Status unauthenticated = CheckSecurityOptions(options);
  EXPECT_EQ(unauthenticated.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unauthenticated.message(), HasSubstr("--client-ca and/or --tokens"));
  options.tokens = "tokens";
  EXPECT_TRUE(CheckSecurityOptions(options).ok());
  options.tokens.clear();
  options.client_ca = "ca.pem";
  EXPECT_TRUE(CheckSecurityOptions(options).ok());
  options = BenchdOptions();
  options.http = "0.0.0.0:7601";
  options.insecure = true;
  EXPECT_TRUE(CheckSecurityOptions(options).ok());
}

TEST(WebSecurityOptionsTest, LoopbackIsWhatTheHostResolvesToNotHowItIsSpelled) {
  BenchdOptions options;
  options.listen = "127.example.com:0";  // does not resolve: not known to be loopback
  absl::Status status = CheckSecurityOptions(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--listen 127.example.com:0 is not a loopback address"));
  EXPECT_THAT(status.message(), HasSubstr("does not resolve"));
  EXPECT_THAT(status.message(), HasSubstr("--tls-cert"));
  options.listen = ":0";  // every address
  EXPECT_EQ(CheckSecurityOptions(options).code(), absl::StatusCode::kInvalidArgument);
  for (const char* loopback : {"127.0.0.1:0", "127.1.2.3:0", "localhost:0", "[::1]:0"}) {
    options.listen = loopback;
    EXPECT_TRUE(CheckSecurityOptions(options).ok()) << loopback;
  }
}

}  // namespace
}  // namespace bench
