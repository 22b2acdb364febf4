// The bootstrap's signing and decisions without gRPC: AgentSigner with a PKI made by
// deploy/pki's scripts at test time (the fleet's CA and make-signing-ca.sh's sub-CA), its
// certificates checked with OpenSSL; AgentBootstrap over real join tokens in a real store.
#include "server/auth/agent_bootstrap.h"

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/x509.h"
#include "server/test_pki.h"

namespace bench {
namespace {

using test_pki::ReadFile;
using ::testing::HasSubstr;

// OpenSSL's verdict on `chain_pem` (leaf first, then intermediates) against the CA bundle
// `ca_file` for `purpose`: "" when it verifies, the verifier's error otherwise.
std::string Verify(const std::string& chain_pem, const std::string& ca_file, int purpose) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_load_file(store, ca_file.c_str());
  BIO* bio = BIO_new_mem_buf(chain_pem.data(), static_cast<int>(chain_pem.size()));
  X509* leaf = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  STACK_OF(X509)* rest = sk_X509_new_null();
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) sk_X509_push(rest, cert);
  BIO_free(bio);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, rest);
  X509_STORE_CTX_set_purpose(ctx, purpose);
  std::string error;
  if (X509_verify_cert(ctx) != 1) {
    error = X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
  }
  X509_STORE_CTX_free(ctx);
  sk_X509_pop_free(rest, X509_free);
  X509_free(leaf);
  X509_STORE_free(store);
  return error;
}

// The leaf's extended key usage as OpenSSL's XKU_* flags, and whether it is a CA.
uint32_t ExtendedKeyUsage(const std::string& pem, bool* is_ca) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  uint32_t usage = X509_get_extended_key_usage(cert);
  *is_ca = X509_check_ca(cert) != 0;
  X509_free(cert);
  return usage;
}

class AgentBootstrapTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char pattern[] = "/tmp/bench_bootstrap_test_XXXXXX";
    dir_ = new std::string(mkdtemp(pattern));
    test_pki::Run("./make-ca.sh " + *dir_);
    test_pki::Run("./make-signing-ca.sh " + *dir_);
    test_pki::Run("./make-client-cert.sh " + *dir_ + " agent node-a");
    test_pki::Run("./make-ca.sh " + *dir_ + "/foreign");
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    auto store =
        Store::Open(*dir_ + "/bench-" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    tokens_ = std::make_unique<JoinTokens>(store_.get());
  }
  std::string F(const std::string& name) const { return *dir_ + "/" + name; }
  std::unique_ptr<AgentSigner> LoadSigner(absl::Duration ttl = absl::Hours(24)) {
    auto signer = AgentSigner::Load(F("agent-signer.pem"), F("agent-signer.key"), F("ca.pem"), ttl,
                                    absl::Now());
    EXPECT_TRUE(signer.ok()) << signer.status();
    return signer.ok() ? std::move(*signer) : nullptr;
  }
  static std::string Csr(std::string* key_out = nullptr) {
    std::string key = *x509::MakeKey();
    if (key_out != nullptr) *key_out = key;
    return *x509::MakeCsr(key, "whatever");
  }

  static std::string* dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JoinTokens> tokens_;
};
std::string* AgentBootstrapTest::dir_ = nullptr;

TEST_F(AgentBootstrapTest, AnIssuedCertificateChainsToTheFleetCaAsAClient) {
  std::unique_ptr<AgentSigner> signer = LoadSigner(absl::Hours(24));
  ASSERT_NE(signer, nullptr);
  std::string key;
  const absl::Time now = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()));
  absl::StatusOr<IssuedCertificate> issued = signer->Issue("node-b", Csr(&key), now);
  ASSERT_TRUE(issued.ok()) << issued.status();
  EXPECT_EQ(Verify(issued->chain_pem, F("ca.pem"), X509_PURPOSE_SSL_CLIENT), "");
  EXPECT_NE(Verify(issued->chain_pem, F("ca.pem"), X509_PURPOSE_SSL_SERVER), "");
  EXPECT_NE(Verify(issued->chain_pem, F("foreign/ca.pem"), X509_PURPOSE_SSL_CLIENT), "");

  absl::StatusOr<std::vector<x509::CertificateInfo>> chain =
      x509::ReadCertificates(issued->chain_pem);
  ASSERT_TRUE(chain.ok());
  ASSERT_EQ(chain->size(), 2u);  // the leaf and the sub-CA; not the root
  const x509::CertificateInfo& leaf = (*chain)[0];
  EXPECT_EQ(leaf.common_name, "node-b");
  EXPECT_EQ(leaf.uris, std::vector<std::string>{"spiffe://benchfleet/agent/node-b"});
  EXPECT_EQ(leaf.not_before_unix_seconds, absl::ToUnixSeconds(now - absl::Minutes(5)));
  EXPECT_EQ(leaf.not_after_unix_seconds, absl::ToUnixSeconds(now + absl::Hours(24)));
  EXPECT_EQ(issued->not_before, now - absl::Minutes(5));
  EXPECT_EQ(issued->not_after, now + absl::Hours(24));
  EXPECT_TRUE((*chain)[1].is_ca);
  EXPECT_EQ((*chain)[1].pem, x509::ReadCertificates(ReadFile(F("agent-signer.pem")))->at(0).pem);
  bool is_ca = true;
  EXPECT_EQ(ExtendedKeyUsage(leaf.pem, &is_ca), static_cast<uint32_t>(XKU_SSL_CLIENT));
  EXPECT_FALSE(is_ca);
  EXPECT_TRUE(*x509::KeyMatchesCertificate(key, issued->chain_pem));
  // A fresh serial each time.
  absl::StatusOr<IssuedCertificate> again = signer->Issue("node-b", Csr(), now);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->chain_pem.substr(0, 600), issued->chain_pem.substr(0, 600));
}

TEST_F(AgentBootstrapTest, ALifetimeNeverOutlastsTheSigner) {
  // The signer is valid for 2 days (test_pki's BENCH_PKI_DAYS); ask for 30.
  std::unique_ptr<AgentSigner> signer = LoadSigner(absl::Hours(24 * 30));
  ASSERT_NE(signer, nullptr);
  absl::StatusOr<IssuedCertificate> issued = signer->Issue("node-b", Csr(), absl::Now());
  ASSERT_TRUE(issued.ok()) << issued.status();
  EXPECT_EQ(issued->not_after, signer->signer_not_after());
  EXPECT_LT(issued->not_after, absl::Now() + absl::Hours(24 * 3));
  // Past the signer's end: nothing more.
  absl::StatusOr<IssuedCertificate> late =
      signer->Issue("node-b", Csr(), signer->signer_not_after() + absl::Seconds(1));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(AgentBootstrapTest, AForgedOrBrokenCsrIsRefused) {
  std::unique_ptr<AgentSigner> signer = LoadSigner();
  ASSERT_NE(signer, nullptr);
  // The victim's public key in a request signed by the forger's key.
  std::string victim_key = *x509::MakeKey(), forger_key = *x509::MakeKey();
  auto read_key = [](const std::string& pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    return key;
  };
  EVP_PKEY* victim = read_key(victim_key);
  EVP_PKEY* forger = read_key(forger_key);
  X509_REQ* req = X509_REQ_new();
  X509_REQ_set_pubkey(req, victim);
  X509_REQ_sign(req, forger, EVP_sha256());
  BIO* out = BIO_new(BIO_s_mem());
  PEM_write_bio_X509_REQ(out, req);
  char* data = nullptr;
  long n = BIO_get_mem_data(out, &data);
  const std::string forged(data, static_cast<size_t>(n));
  BIO_free(out);
  X509_REQ_free(req);
  EVP_PKEY_free(victim);
  EVP_PKEY_free(forger);
  for (const std::string& csr : {forged, std::string("not a csr"), std::string()}) {
    absl::StatusOr<IssuedCertificate> issued = signer->Issue("node-b", csr, absl::Now());
    EXPECT_EQ(issued.status().code(), absl::StatusCode::kInvalidArgument) << csr;
    EXPECT_THAT(issued.status().message(), HasSubstr("csr_pem"));
  }
}

TEST_F(AgentBootstrapTest, LoadRefusesASignerBenchdWouldNotTrust) {
  const absl::Time now = absl::Now();
  auto expect_refused = [&](const std::string& cert, const std::string& key, const std::string& ca,
                            absl::Duration ttl, const std::string& what) {
    auto signer = AgentSigner::Load(cert, key, ca, ttl, now);
    ASSERT_FALSE(signer.ok()) << what;
    EXPECT_EQ(signer.status().code(), absl::StatusCode::kInvalidArgument) << what;
    EXPECT_THAT(signer.status().message(), HasSubstr(what));
  };
  // Not the certificate's key.
  expect_refused(F("agent-signer.pem"), F("ca.key"), F("ca.pem"), absl::Hours(1),
                 "--agent-signing-key");
  // A leaf is no CA.
  expect_refused(F("node-a.pem"), F("node-a.key"), F("ca.pem"), absl::Hours(1), "not a CA");
  // Another fleet's CA: what it signs would not be accepted.
  expect_refused(F("foreign/ca.pem"), F("foreign/ca.key"), F("ca.pem"), absl::Hours(1),
                 "does not verify against --client-ca");
  expect_refused(F("missing.pem"), F("ca.key"), F("ca.pem"), absl::Hours(1), "cannot read");
  expect_refused(F("agent-signer.pem"), F("agent-signer.key"), F("ca.pem"), absl::Seconds(59),
                 "--agent-cert-ttl");
  // The fleet's CA itself may sign (less well: its key then lives on benchd's host).
  EXPECT_TRUE(AgentSigner::Load(F("ca.pem"), F("ca.key"), F("ca.pem"), absl::Hours(1), now).ok());
  // Tests may go below a minute.
  EXPECT_TRUE(AgentSigner::Load(F("agent-signer.pem"), F("agent-signer.key"), F("ca.pem"),
                                absl::Seconds(5), now, absl::Seconds(1))
                  .ok());
}

TEST_F(AgentBootstrapTest, AJoinTokenGetsAFreeNameAndSpendsAUse) {
  std::unique_ptr<AgentSigner> signer = LoadSigner();
  std::set<std::string> live = {"node-live"};
  AgentBootstrap bootstrap(tokens_.get(), signer.get(),
                           [&](const std::string& node) { return live.count(node) > 0; });
  const absl::Time now = absl::Now();
  auto created = tokens_->Create(2, absl::Hours(1), false, "", now);
  ASSERT_TRUE(created.ok());
  std::optional<Principal> join = tokens_->PrincipalOf(created->token, now);
  ASSERT_TRUE(join.has_value());

  absl::StatusOr<IssuedCertificate> issued =
      bootstrap.RequestCertificate(*join, "node-b", Csr(), now);
  ASSERT_TRUE(issued.ok()) << issued.status();
  EXPECT_EQ((*tokens_->List())[0].used, 1);

  // A live agent's name: ALREADY_EXISTS naming it, and no use spent.
  absl::StatusOr<IssuedCertificate> taken =
      bootstrap.RequestCertificate(*join, "node-live", Csr(), now);
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(taken.status().message(), HasSubstr("node-live"));
  // A bad name or a bad CSR: INVALID_ARGUMENT, no use spent either.
  EXPECT_EQ(bootstrap.RequestCertificate(*join, "../etc", Csr(), now).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bootstrap.RequestCertificate(*join, "node-c", "junk", now).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*tokens_->List())[0].used, 1);

  ASSERT_TRUE(bootstrap.RequestCertificate(*join, "node-c", Csr(), now).ok());
  // Used up: the one refusal.
  EXPECT_EQ(bootstrap.RequestCertificate(*join, "node-d", Csr(), now).status(), JoinTokenRefused());
}

TEST_F(AgentBootstrapTest, AnAllowReplaceTokenMayTakeALiveName) {
  std::unique_ptr<AgentSigner> signer = LoadSigner();
  AgentBootstrap bootstrap(tokens_.get(), signer.get(), [](const std::string&) { return true; });
  const absl::Time now = absl::Now();
  auto created = tokens_->Create(1, absl::Hours(1), /*allow_replace=*/true, "", now);
  ASSERT_TRUE(created.ok());
  std::optional<Principal> join = tokens_->PrincipalOf(created->token, now);
  ASSERT_TRUE(join.has_value());
  EXPECT_TRUE(bootstrap.RequestCertificate(*join, "node-live", Csr(), now).ok());
}

TEST_F(AgentBootstrapTest, AnAgentRenewsOnlyItsOwnName) {
  std::unique_ptr<AgentSigner> signer = LoadSigner();
  // Its own name is live (it is the one holding it): renewing is not taking it.
  AgentBootstrap bootstrap(tokens_.get(), signer.get(), [](const std::string&) { return true; });
  const Principal agent{"node-a", Role::kAgent, "cert"};
  EXPECT_TRUE(bootstrap.RequestCertificate(agent, "node-a", Csr(), absl::Now()).ok());
  absl::StatusOr<IssuedCertificate> other =
      bootstrap.RequestCertificate(agent, "node-b", Csr(), absl::Now());
  EXPECT_EQ(other.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(other.status().message(), HasSubstr("node-b"));
}

TEST_F(AgentBootstrapTest, NobodyElseGetsACertificate) {
  std::unique_ptr<AgentSigner> signer = LoadSigner();
  AgentBootstrap bootstrap(tokens_.get(), signer.get(), [](const std::string&) { return false; });
  for (const Principal& who :
       {Principal{"ops", Role::kAdmin, "cert"}, Principal{"root", Role::kAdmin, "token"},
        Principal{"alice", Role::kSubmit, "token"}, Principal{"", Role::kAdmin, "none"},
        Principal{"node-a", Role::kAgent, "token"}}) {
    EXPECT_EQ(bootstrap.RequestCertificate(who, "node-a", Csr(), absl::Now()).status().code(),
              absl::StatusCode::kPermissionDenied)
        << who.Describe();
  }
}

TEST_F(AgentBootstrapTest, WithoutASignerItIsAFailedPrecondition) {
  AgentBootstrap bootstrap(tokens_.get(), nullptr, [](const std::string&) { return false; });
  const absl::Time now = absl::Now();
  auto created = tokens_->Create(1, absl::Hours(1), false, "", now);
  ASSERT_TRUE(created.ok());
  std::optional<Principal> join = tokens_->PrincipalOf(created->token, now);
  ASSERT_TRUE(join.has_value());
  absl::StatusOr<IssuedCertificate> issued =
      bootstrap.RequestCertificate(*join, "node-b", Csr(), now);
  EXPECT_EQ(issued.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(issued.status().message(), HasSubstr("--agent-signing-cert"));
  EXPECT_EQ((*tokens_->List())[0].used, 0);
}

// A signer that has expired signs nothing, and the token keeps its use: the refusal comes
// before the use is spent.
TEST_F(AgentBootstrapTest, AnExpiredSignerSpendsNoTokenUse) {
  std::unique_ptr<AgentSigner> signer = LoadSigner();
  ASSERT_NE(signer, nullptr);
  AgentBootstrap bootstrap(tokens_.get(), signer.get(), [](const std::string&) { return false; });
  const absl::Time later = signer->signer_not_after() + absl::Seconds(1);
  auto created = tokens_->Create(1, absl::Hours(24 * 30), false, "", absl::Now());
  ASSERT_TRUE(created.ok()) << created.status();
  std::optional<Principal> join = tokens_->PrincipalOf(created->token, later);
  ASSERT_TRUE(join.has_value());
  absl::StatusOr<IssuedCertificate> issued =
      bootstrap.RequestCertificate(*join, "node-b", Csr(), later);
  EXPECT_EQ(issued.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(issued.status().message(), HasSubstr("has expired"));
  EXPECT_EQ((*tokens_->List())[0].used, 0);
}

}  // namespace
}  // namespace bench
