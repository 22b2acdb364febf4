// The certificate bootstrap and renewal (cert_bootstrap.h, cert_renewer.h) against an
// in-process fake AgentService over real TLS on 127.0.0.1: its server certificate and CA made
// at test time by deploy/pki's scripts, the agent certificates it issues signed with that CA
// through common/x509.h, as benchd signs them.
#include "worker/agent/cert_bootstrap.h"

#include <sys/stat.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <grpc/grpc_security_constants.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "benchfleet/v1/agent.grpc.pb.h"
#include "common/x509.h"
#include "worker/agent/agent.h"
#include "worker/agent/cert_renewer.h"
#include "worker/agent/controller_client.h"
#include "worker/agent/file_io.h"
#include "worker/agent/temp_dir.h"

namespace bench::agent {
namespace {

constexpr char kNode[] = "node-7";
constexpr char kToken[] = "bj1.abc.secret";

// Runs one of deploy/pki's scripts (BENCH_SOURCE_DIR/deploy/pki); a failure fails the test.
void RunPki(const std::string& command) {
  const std::string line = absl::StrCat(
      "cd '", BENCH_SOURCE_DIR, "/deploy/pki' && BENCH_PKI_DAYS=2 ", command, " >/dev/null 2>&1");
  EXPECT_EQ(std::system(line.c_str()), 0) << line;
}

std::string ReadOrEmpty(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileText(path);
  return text.ok() ? *text : "";
}

// AgentService with RequestCertificate only: a caller is the token (kToken, `token_uses`
// uses) or an agent certificate of the node it asks for. Issues certificates valid from
// now - valid_before to now + valid_after.
class FakeSigner final : public benchfleet::v1::AgentService::Service {
 public:
  FakeSigner(std::string ca_pem, std::string ca_key) : ca_pem_(ca_pem), ca_key_(ca_key) {}

  grpc::Status RequestCertificate(grpc::ServerContext* context,
                                  const benchfleet::v1::RequestCertificateRequest* request,
                                  benchfleet::v1::RequestCertificateResponse* response) override {
    absl::MutexLock lock(&mu_);
    received_.push_back(request->SerializeAsString());
    bool by_certificate = false;
    for (const grpc::string_ref& uri :
         context->auth_context()->FindPropertyValues(GRPC_PEER_URI_PROPERTY_NAME)) {
      if (std::string(uri.data(), uri.size()) == AgentUri(request->node())) by_certificate = true;
    }
    auto header = context->client_metadata().find("authorization");
    const bool by_token = header != context->client_metadata().end() &&
                          std::string(header->second.data(), header->second.size()) ==
                              absl::StrCat("Bearer ", kToken);
    if (by_certificate) {
      ++renewals_;
    } else if (by_token && token_used_ < token_uses_) {
      ++token_used_;
    } else {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "no valid caller");
    }
    absl::StatusOr<x509::ParsedCsr> csr = x509::ParseCsr(request->csr_pem());
    if (!csr.ok()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad CSR");
    const absl::Time now = absl::Now();
    x509::LeafRequest leaf;
    leaf.public_key_pem = csr->public_key_pem;
    leaf.common_name = request->node();
    leaf.uri = AgentUri(request->node());
    leaf.not_before_unix_seconds = absl::ToUnixSeconds(now - valid_before_);
    leaf.not_after_unix_seconds = absl::ToUnixSeconds(now + valid_after_);
    absl::StatusOr<std::string> signed_leaf = x509::SignLeaf(leaf, ca_pem_, ca_key_);
    if (!signed_leaf.ok()) return grpc::Status(grpc::StatusCode::INTERNAL, "cannot sign");
    response->set_certificate_chain_pem(*signed_leaf);
    response->set_not_before_unix_seconds(leaf.not_before_unix_seconds);
    response->set_not_after_unix_seconds(leaf.not_after_unix_seconds);
    return grpc::Status::OK;
  }

  // Records who registered: the URI of the caller's certificate ("" without one).
  grpc::Status Register(grpc::ServerContext* context, const benchfleet::v1::RegisterRequest*,
                        benchfleet::v1::RegisterResponse* response) override {
    absl::MutexLock lock(&mu_);
    std::string uri;
    for (const grpc::string_ref& value :
         context->auth_context()->FindPropertyValues(GRPC_PEER_URI_PROPERTY_NAME)) {
      uri.assign(value.data(), value.size());
    }
    registered_as_.push_back(uri);
    response->set_heartbeat_interval_ms(60000);
    return grpc::Status::OK;
  }

  void SetValidity(absl::Duration before, absl::Duration after) {
    absl::MutexLock lock(&mu_);
    valid_before_ = before;
    valid_after_ = after;
  }
  void SetTokenUses(int uses) {
    absl::MutexLock lock(&mu_);
    token_uses_ = uses;
  }
  int token_used() {
    absl::MutexLock lock(&mu_);
    return token_used_;
  }
  int renewals() {
    absl::MutexLock lock(&mu_);
    return renewals_;
  }
  std::vector<std::string> received() {
    absl::MutexLock lock(&mu_);
    return received_;
  }
  std::vector<std::string> registered_as() {
    absl::MutexLock lock(&mu_);
    return registered_as_;
  }

 private:
  const std::string ca_pem_;
  const std::string ca_key_;
  absl::Mutex mu_;
  absl::Duration valid_before_ ABSL_GUARDED_BY(mu_) = absl::Minutes(5);
  absl::Duration valid_after_ ABSL_GUARDED_BY(mu_) = absl::Hours(1);
  int token_uses_ ABSL_GUARDED_BY(mu_) = 10;
  int token_used_ ABSL_GUARDED_BY(mu_) = 0;
  int renewals_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> received_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> registered_as_ ABSL_GUARDED_BY(mu_);
};

class CertBootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(temp_.ok());
    ServeUnderNewPki("pki");
    ASSERT_NE(server_, nullptr);
    state_dir_ = temp_.path() + "/state";
    ASSERT_EQ(mkdir(state_dir_.c_str(), 0700), 0);
    token_file_ = temp_.path() + "/join-token";
    ASSERT_TRUE(WriteFileAtomically(token_file_, absl::StrCat(kToken, "\n"), 0600).ok());
  }
  void TearDown() override { StopServer(); }

  // A CA and a server certificate made in temp_/`name` by deploy/pki, a signer with that CA,
  // and the server (re)started with them on port_.
  void ServeUnderNewPki(const std::string& name) {
    StopServer();
    pki_ = temp_.path() + "/" + name;
    RunPki(absl::StrCat("./make-ca.sh '", pki_, "'"));
    RunPki(absl::StrCat("./make-server-cert.sh '", pki_, "' benchd IP:127.0.0.1"));
    signer_ =
        std::make_unique<FakeSigner>(ReadOrEmpty(pki_ + "/ca.pem"), ReadOrEmpty(pki_ + "/ca.key"));
    StartServer();
  }

  // On port_ (0 the first time: any free port, then the same one again).
  void StartServer() {
    grpc::SslServerCredentialsOptions tls(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
    tls.pem_root_certs = ReadOrEmpty(pki_ + "/ca.pem");
    tls.pem_key_cert_pairs.push_back(
        {ReadOrEmpty(pki_ + "/benchd.key"), ReadOrEmpty(pki_ + "/benchd.pem")});
    grpc::ServerBuilder builder;
    int selected = 0;
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", port_), grpc::SslServerCredentials(tls),
                             &selected);
    builder.RegisterService(signer_.get());
    server_ = builder.BuildAndStart();
    if (server_ != nullptr) port_ = selected;
  }
  void StopServer() {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
    server_.reset();
  }

  BootstrapOptions Options() const {
    BootstrapOptions options;
    options.controller = absl::StrCat("127.0.0.1:", port_);
    options.node = kNode;
    options.tls_ca = pki_ + "/ca.pem";
    options.join_token_file = token_file_;
    options.state_dir = state_dir_;
    options.retry_for = absl::Seconds(30);
    options.min_backoff = absl::Milliseconds(50);
    options.max_backoff = absl::Milliseconds(500);
    return options;
  }

  // The agent's own channel: its certificate from the state directory, re-read every second.
  std::unique_ptr<ControllerClient> OwnClient() const {
    ControllerClientOptions options;
    options.target = absl::StrCat("127.0.0.1:", port_);
    options.credentials.tls_ca = pki_ + "/ca.pem";
    options.credentials.tls_cert = state_dir_ + "/agent.pem";
    options.credentials.tls_key = state_dir_ + "/agent.key";
    options.credentials.refresh_seconds = 1;
    absl::StatusOr<std::unique_ptr<ControllerClient>> client =
        ControllerClient::Create(std::move(options));
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  CertificateRenewerOptions RenewerOptions() const {
    CertificateRenewerOptions options;
    options.bootstrap = Options();
    options.min_backoff = absl::Milliseconds(100);
    options.max_backoff = absl::Seconds(1);
    return options;
  }

  // Waits (generously) until `done` holds.
  static bool WaitFor(const std::function<bool()>& done) {
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    while (!done()) {
      if (absl::Now() > deadline) return false;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return true;
  }

  TempDir temp_{"cert-bootstrap-test-"};
  std::string pki_;
  std::string state_dir_;
  std::string token_file_;
  std::unique_ptr<FakeSigner> signer_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(CertBootstrapTest, AFreshStartSpendsOneTokenUseAndARestartNone) {
  absl::StatusOr<BootstrapResult> first = EnsureAgentCertificate(Options());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->requested);
  EXPECT_EQ(signer_->token_used(), 1);
  absl::StatusOr<HeldCertificate> held =
      LoadUsableCertificate(CertificateFilesIn(state_dir_), kNode, absl::Now());
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(held->not_after, first->held.not_after);

  // A restart: the certificate is still valid, so no token use and no request.
  absl::StatusOr<BootstrapResult> again = EnsureAgentCertificate(Options());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->requested);
  EXPECT_EQ(signer_->token_used(), 1);
  EXPECT_EQ(signer_->received().size(), 1u);
}

TEST_F(CertBootstrapTest, TheKeyIs0600AndNeverSent) {
  ASSERT_TRUE(EnsureAgentCertificate(Options()).ok());
  struct stat st;
  ASSERT_EQ(stat((state_dir_ + "/agent.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  const std::string key = ReadOrEmpty(state_dir_ + "/agent.key");
  ASSERT_TRUE(absl::StrContains(key, "PRIVATE KEY")) << key;
  // The key's base64 body, line by line: none of it in anything the server received.
  std::vector<std::string> lines = absl::StrSplit(key, '\n', absl::SkipEmpty());
  std::vector<std::string> received = signer_->received();
  ASSERT_EQ(received.size(), 1u);
  for (const std::string& bytes : received) {
    EXPECT_FALSE(absl::StrContains(bytes, "PRIVATE KEY"));
    for (const std::string& line : lines) {
      if (absl::StartsWith(line, "-----")) continue;
      EXPECT_FALSE(absl::StrContains(bytes, line)) << line;
    }
  }
  // The certificate is the key's and names the node.
  absl::StatusOr<bool> matches =
      x509::KeyMatchesCertificate(key, ReadOrEmpty(state_dir_ + "/agent.pem"));
  ASSERT_TRUE(matches.ok()) << matches.status();
  EXPECT_TRUE(*matches);
}

TEST_F(CertBootstrapTest, AnExpiredCertificateBootstrapsAgainWithANewKey) {
  signer_->SetValidity(absl::Hours(2), -absl::Hours(1));  // expired an hour ago
  ASSERT_TRUE(EnsureAgentCertificate(Options()).ok());
  const std::string old_key = ReadOrEmpty(state_dir_ + "/agent.key");
  signer_->SetValidity(absl::Minutes(5), absl::Hours(1));
  absl::StatusOr<BootstrapResult> again = EnsureAgentCertificate(Options());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->requested);
  EXPECT_EQ(signer_->token_used(), 2);
  EXPECT_NE(ReadOrEmpty(state_dir_ + "/agent.key"), old_key);
  EXPECT_TRUE(LoadUsableCertificate(CertificateFilesIn(state_dir_), kNode, absl::Now()).ok());
}

TEST_F(CertBootstrapTest, ACertificateFromAnotherCaIsNotUsed) {
  ASSERT_TRUE(EnsureAgentCertificate(Options()).ok());
  // benchd's PKI made anew (another CA): the state directory's certificate, still within its
  // validity, would fail every handshake, so the agent bootstraps again under the new CA.
  ServeUnderNewPki("pki-new");
  ASSERT_NE(server_, nullptr);
  absl::StatusOr<BootstrapResult> again = EnsureAgentCertificate(Options());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->requested);
  EXPECT_EQ(signer_->token_used(), 1);
  absl::StatusOr<bool> fresh = x509::KeyMatchesCertificate(ReadOrEmpty(state_dir_ + "/agent.key"),
                                                           ReadOrEmpty(state_dir_ + "/agent.pem"));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_TRUE(*fresh);
  EXPECT_TRUE(x509::VerifyClientChain(ReadOrEmpty(state_dir_ + "/agent.pem"),
                                      ReadOrEmpty(pki_ + "/ca.pem"),
                                      absl::ToUnixSeconds(absl::Now()))
                  .ok());
}

TEST_F(CertBootstrapTest, AnotherNodesCertificateIsNotUsed) {
  ASSERT_TRUE(EnsureAgentCertificate(Options()).ok());
  absl::StatusOr<HeldCertificate> other =
      LoadUsableCertificate(CertificateFilesIn(state_dir_), "node-8", absl::Now());
  ASSERT_FALSE(other.ok());
  EXPECT_TRUE(absl::StrContains(other.status().message(), "spiffe://benchfleet/agent/node-8"))
      << other.status();
}

TEST_F(CertBootstrapTest, ARefusedTokenFailsAtOnceNamingItsFile) {
  signer_->SetTokenUses(0);  // used up
  absl::StatusOr<BootstrapResult> result = EnsureAgentCertificate(Options());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnauthenticated) << result.status();
  EXPECT_TRUE(absl::StrContains(result.status().message(), token_file_)) << result.status();
  EXPECT_EQ(signer_->received().size(), 1u);                   // not retried
  EXPECT_FALSE(ReadFileText(state_dir_ + "/agent.key").ok());  // nothing stored
}

TEST_F(CertBootstrapTest, TheTokenGoesOnlyOverTls) {
  BootstrapOptions options = Options();
  options.tls_ca.clear();
  absl::StatusOr<BootstrapResult> result = EnsureAgentCertificate(options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(result.status().message(), "--tls-ca")) << result.status();
  EXPECT_TRUE(signer_->received().empty());
}

TEST_F(CertBootstrapTest, AMissingTokenFileIsAnErrorNamingTheFlag) {
  BootstrapOptions options = Options();
  options.join_token_file = temp_.path() + "/no-such-token";
  absl::StatusOr<BootstrapResult> result = EnsureAgentCertificate(options);
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(absl::StrContains(result.status().message(), "--join-token-file")) << result.status();
}

TEST_F(CertBootstrapTest, ABootstrapWaitsForAServerThatIsDown) {
  StopServer();
  // keep_trying is asked after each failed attempt: the server comes back after the third.
  int failed = 0;
  absl::StatusOr<BootstrapResult> result = EnsureAgentCertificate(Options(), [&] {
    if (++failed == 3) StartServer();
    return true;
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GE(failed, 3);
  EXPECT_EQ(signer_->token_used(), 1);
}

TEST_F(CertBootstrapTest, RenewalHappensBeforeExpiryOverItsOwnCertificate) {
  // Valid from 200 s ago for 300 s, and obtained then: renewal is due now.
  signer_->SetValidity(absl::Seconds(200), absl::Seconds(100));
  absl::StatusOr<BootstrapResult> first = EnsureAgentCertificate(Options());
  ASSERT_TRUE(first.ok()) << first.status();
  first->held.obtained = first->held.not_before;
  const std::string old_pem = ReadOrEmpty(state_dir_ + "/agent.pem");
  const std::string key = ReadOrEmpty(state_dir_ + "/agent.key");
  signer_->SetValidity(absl::Minutes(5), absl::Hours(1));
  std::unique_ptr<ControllerClient> own = OwnClient();
  ASSERT_NE(own, nullptr);
  CertificateRenewer renewer(RenewerOptions(), own.get(), first->held);
  renewer.Start();
  ASSERT_TRUE(WaitFor([&] { return renewer.renewals() >= 1; }));
  EXPECT_LT(absl::Now(), first->held.not_after);
  renewer.Stop();
  EXPECT_EQ(signer_->renewals(), 1);    // over the agent's own certificate,
  EXPECT_EQ(signer_->token_used(), 1);  // not the token
  EXPECT_NE(ReadOrEmpty(state_dir_ + "/agent.pem"), old_pem);
  EXPECT_EQ(ReadOrEmpty(state_dir_ + "/agent.key"), key);  // same key, new certificate
  absl::StatusOr<HeldCertificate> held =
      LoadUsableCertificate(CertificateFilesIn(state_dir_), kNode, absl::Now());
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_GT(held->not_after, first->held.not_after);
  EXPECT_EQ(renewer.current().not_after, held->not_after);
}

TEST_F(CertBootstrapTest, RenewalSurvivesTheServerBeingDownForAWhile) {
  signer_->SetValidity(absl::Seconds(200), absl::Seconds(100));
  absl::StatusOr<BootstrapResult> first = EnsureAgentCertificate(Options());
  ASSERT_TRUE(first.ok()) << first.status();
  first->held.obtained = first->held.not_before;  // renewal due now
  signer_->SetValidity(absl::Minutes(5), absl::Hours(1));
  std::unique_ptr<ControllerClient> own = OwnClient();
  ASSERT_NE(own, nullptr);
  StopServer();
  CertificateRenewer renewer(RenewerOptions(), own.get(), first->held);
  renewer.Start();
  ASSERT_TRUE(WaitFor([&] { return renewer.failures() >= 3; }));
  EXPECT_EQ(renewer.renewals(), 0);
  StartServer();  // the same port
  ASSERT_NE(server_, nullptr);
  ASSERT_TRUE(WaitFor([&] { return renewer.renewals() >= 1; }));
  EXPECT_LT(absl::Now(), first->held.not_after);
  renewer.Stop();
  EXPECT_EQ(signer_->renewals(), 1);
  EXPECT_EQ(signer_->token_used(), 1);
}

TEST_F(CertBootstrapTest, ACertificateThatExpiredWhileRunningIsBootstrappedWithTheToken) {
  signer_->SetValidity(absl::Hours(2), -absl::Seconds(1));
  absl::StatusOr<BootstrapResult> first = EnsureAgentCertificate(Options());
  ASSERT_TRUE(first.ok()) << first.status();
  signer_->SetValidity(absl::Minutes(5), absl::Hours(1));
  std::unique_ptr<ControllerClient> own = OwnClient();
  ASSERT_NE(own, nullptr);
  CertificateRenewer renewer(RenewerOptions(), own.get(), first->held);
  renewer.Start();
  ASSERT_TRUE(WaitFor([&] { return renewer.renewals() >= 1; }));
  renewer.Stop();
  EXPECT_EQ(signer_->token_used(), 2);
  EXPECT_TRUE(LoadUsableCertificate(CertificateFilesIn(state_dir_), kNode, absl::Now()).ok());
}

// The Agent itself: bootstraps in Start, registers over its own certificate, and a restart
// on the same state directory spends no token use.
TEST_F(CertBootstrapTest, AnAgentWithATokenRegistersWithItsOwnCertificate) {
  AgentOptions options;
  options.controller = absl::StrCat("127.0.0.1:", port_);
  options.name = kNode;
  options.cpu_slots = 1;
  options.credentials.tls_ca = pki_ + "/ca.pem";
  options.join_token_file = token_file_;
  options.state_dir = state_dir_;
  options.shutdown_flush_timeout = absl::Seconds(1);
  for (int start = 1; start <= 2; ++start) {
    const size_t registered = signer_->registered_as().size();
    {
      Agent agent(options);
      absl::Status started = agent.Start();
      ASSERT_TRUE(started.ok()) << started;
      ASSERT_TRUE(WaitFor([&] { return signer_->registered_as().size() > registered; }));
      EXPECT_EQ(signer_->registered_as().back(), AgentUri(kNode));
    }
    EXPECT_EQ(signer_->token_used(), 1) << "start " << start;
  }
  struct stat st;
  ASSERT_EQ(stat((state_dir_ + "/agent.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
}

TEST(AgentBootstrapOptionsTest, ATokenNeedsAStateDirectory) {
  AgentOptions options;
  options.controller = "127.0.0.1:1";
  options.name = kNode;
  options.cpu_slots = 1;
  options.credentials.tls_ca = "/nonexistent/ca.pem";
  options.join_token_file = "/nonexistent/token";
  Agent agent(options);
  absl::Status started = agent.Start();
  EXPECT_EQ(started.code(), absl::StatusCode::kInvalidArgument) << started;
  EXPECT_TRUE(absl::StrContains(started.message(), "--join-token-file")) << started;
}

TEST(AgentCertificateTest, RenewalIsTwoThirdsIntoTheLifetime) {
  HeldCertificate held{absl::FromUnixSeconds(1000), absl::FromUnixSeconds(1000 + 3 * 3600)};
  EXPECT_EQ(RenewalTime(held), absl::FromUnixSeconds(1000 + 2 * 3600));
}

TEST(AgentCertificateTest, ABackdatedNotBeforeDoesNotMakeAShortCertificateDueAtOnce) {
  // benchd's notBefore is 5 minutes before issuance; a 1-minute certificate obtained at
  // 1000 is renewed at 1040, not at once.
  HeldCertificate held{absl::FromUnixSeconds(700), absl::FromUnixSeconds(1060),
                       absl::FromUnixSeconds(1000)};
  EXPECT_EQ(RenewalTime(held), absl::FromUnixSeconds(1040));
  EXPECT_EQ(RefreshSecondsFor(held), 5u);
}

TEST_F(CertBootstrapTest, ARestartKnowsWhenItsCertificateWasObtained) {
  signer_->SetValidity(absl::Minutes(5), absl::Minutes(1));
  const absl::Time before = absl::Now();
  ASSERT_TRUE(EnsureAgentCertificate(Options()).ok());
  absl::StatusOr<HeldCertificate> held =
      LoadUsableCertificate(CertificateFilesIn(state_dir_), kNode, absl::Now());
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_GE(held->obtained, before - absl::Seconds(1));
  EXPECT_GT(RenewalTime(*held), before);
}

TEST(AgentCertificateTest, TheFileWatcherRefreshesWellWithinTheLastThird) {
  // 24 h: once a minute; 1 min (benchd's shortest): every 5 s; shorter: every second.
  EXPECT_EQ(RefreshSecondsFor({absl::UnixEpoch(), absl::UnixEpoch() + absl::Hours(24)}), 60u);
  EXPECT_EQ(RefreshSecondsFor({absl::UnixEpoch(), absl::UnixEpoch() + absl::Minutes(1)}), 5u);
  EXPECT_EQ(RefreshSecondsFor({absl::UnixEpoch(), absl::UnixEpoch() + absl::Seconds(6)}), 1u);
}

}  // namespace
}  // namespace bench::agent
