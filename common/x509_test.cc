#include "common/x509.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <string>

#include <gtest/gtest.h>

namespace bench::x509 {
namespace {

// A self-signed CA (CA:TRUE, keyCertSign) for `key_pem`, made with OpenSSL directly so that
// SignLeaf is checked against something it did not make.
std::string SelfSignedCa(const std::string& key_pem) {
  BIO* bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 7);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("test CA"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509_set_pubkey(cert, key);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair{NID_basic_constraints, "critical,CA:TRUE"},
                            std::pair{NID_key_usage, "critical,keyCertSign"},
                            std::pair{NID_subject_key_identifier, "hash"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(cert, key, EVP_sha256());
  BIO* out = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(out, cert);
  char* data = nullptr;
  long n = BIO_get_mem_data(out, &data);
  std::string pem(data, static_cast<size_t>(n));
  BIO_free(out);
  X509_free(cert);
  EVP_PKEY_free(key);
  return pem;
}

TEST(X509Test, KeyAndCsrRoundTrip) {
  absl::StatusOr<std::string> key = MakeKey();
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_NE(key->find("BEGIN PRIVATE KEY"), std::string::npos);
  absl::StatusOr<std::string> csr = MakeCsr(*key, "node-a");
  ASSERT_TRUE(csr.ok()) << csr.status();
  absl::StatusOr<ParsedCsr> parsed = ParseCsr(*csr);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->common_name, "node-a");
  EXPECT_NE(parsed->public_key_pem.find("BEGIN PUBLIC KEY"), std::string::npos);
  // Two keys are two keys.
  absl::StatusOr<std::string> other = MakeKey();
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*key, *other);
}

TEST(X509Test, ParseCsrRefusesGarbageAndForgeries) {
  EXPECT_EQ(ParseCsr("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseCsr("not a csr").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseCsr(std::string(20000, 'A')).status().code(), absl::StatusCode::kInvalidArgument);
  // A request for a key its maker does not hold: the victim's public key, signed with the
  // forger's own key. Its signature does not verify with the key it carries.
  auto read_key = [](const std::string& pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    return key;
  };
  EVP_PKEY* victim = read_key(*MakeKey());
  EVP_PKEY* forger = read_key(*MakeKey());
  X509_REQ* req = X509_REQ_new();
  X509_REQ_set_version(req, 0);
  X509_REQ_set_pubkey(req, victim);
  ASSERT_GT(X509_REQ_sign(req, forger, EVP_sha256()), 0);
  BIO* out = BIO_new(BIO_s_mem());
  PEM_write_bio_X509_REQ(out, req);
  char* data = nullptr;
  long n = BIO_get_mem_data(out, &data);
  std::string forged(data, static_cast<size_t>(n));
  BIO_free(out);
  X509_REQ_free(req);
  EVP_PKEY_free(victim);
  EVP_PKEY_free(forger);
  absl::StatusOr<ParsedCsr> parsed = ParseCsr(forged);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find("signature"), std::string::npos) << parsed.status();
}

TEST(X509Test, SignLeafMakesAClientCertificateThatVerifies) {
  std::string ca_key = *MakeKey();
  std::string ca_pem = SelfSignedCa(ca_key);
  std::string agent_key = *MakeKey();
  ParsedCsr csr = *ParseCsr(*MakeCsr(agent_key, "ignored"));
  const int64_t now = static_cast<int64_t>(time(nullptr));
  LeafRequest leaf{csr.public_key_pem, "node-a", "spiffe://benchfleet/agent/node-a", now - 300,
                   now + 3600};
  absl::StatusOr<std::string> pem = SignLeaf(leaf, ca_pem, ca_key);
  ASSERT_TRUE(pem.ok()) << pem.status();

  absl::StatusOr<std::vector<CertificateInfo>> certs = ReadCertificates(*pem);
  ASSERT_TRUE(certs.ok()) << certs.status();
  ASSERT_EQ(certs->size(), 1u);
  const CertificateInfo& info = (*certs)[0];
  EXPECT_EQ(info.common_name, "node-a");
  EXPECT_EQ(info.uris, std::vector<std::string>{"spiffe://benchfleet/agent/node-a"});
  EXPECT_EQ(info.not_before_unix_seconds, now - 300);
  EXPECT_EQ(info.not_after_unix_seconds, now + 3600);
  EXPECT_FALSE(info.is_ca);
  EXPECT_FALSE(info.self_signed);
  EXPECT_TRUE(*KeyMatchesCertificate(agent_key, *pem));
  EXPECT_FALSE(*KeyMatchesCertificate(ca_key, *pem));
  absl::StatusOr<std::vector<CertificateInfo>> ca = ReadCertificates(ca_pem);
  ASSERT_TRUE(ca.ok());
  EXPECT_TRUE((*ca)[0].is_ca);
  EXPECT_TRUE((*ca)[0].self_signed);

  // OpenSSL verifies it against the CA as a TLS client, not as a TLS server.
  X509_STORE* store = X509_STORE_new();
  BIO* cbio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  X509* ca_cert = PEM_read_bio_X509(cbio, nullptr, nullptr, nullptr);
  BIO_free(cbio);
  X509_STORE_add_cert(store, ca_cert);
  BIO* lbio = BIO_new_mem_buf(pem->data(), static_cast<int>(pem->size()));
  X509* leaf_cert = PEM_read_bio_X509(lbio, nullptr, nullptr, nullptr);
  BIO_free(lbio);
  for (auto [purpose, want] :
       {std::pair{X509_PURPOSE_SSL_CLIENT, 1}, std::pair{X509_PURPOSE_SSL_SERVER, 0}}) {
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, leaf_cert, nullptr);
    X509_STORE_CTX_set_purpose(ctx, purpose);
    EXPECT_EQ(X509_verify_cert(ctx), want)
        << purpose << ": " << X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
    X509_STORE_CTX_free(ctx);
  }
  X509_free(leaf_cert);
  X509_free(ca_cert);
  X509_STORE_free(store);
}

TEST(X509Test, VerifyClientChainAcceptsItsOwnCaOnlyAndWithinTheValidity) {
  std::string ca_key = *MakeKey();
  std::string ca_pem = SelfSignedCa(ca_key);
  std::string other_ca_pem = SelfSignedCa(*MakeKey());
  ParsedCsr csr = *ParseCsr(*MakeCsr(*MakeKey(), "ignored"));
  const int64_t now = static_cast<int64_t>(time(nullptr));
  LeafRequest leaf{csr.public_key_pem, "node-a", "spiffe://benchfleet/agent/node-a", now - 300,
                   now + 3600};
  absl::StatusOr<std::string> pem = SignLeaf(leaf, ca_pem, ca_key);
  ASSERT_TRUE(pem.ok()) << pem.status();

  EXPECT_TRUE(VerifyClientChain(*pem, ca_pem, now).ok());
  absl::Status foreign = VerifyClientChain(*pem, other_ca_pem, now);
  EXPECT_EQ(foreign.code(), absl::StatusCode::kFailedPrecondition) << foreign;
  EXPECT_EQ(VerifyClientChain(*pem, ca_pem, now + 7200).code(),
            absl::StatusCode::kFailedPrecondition);
  // A bundle holding the right CA among others verifies.
  EXPECT_TRUE(VerifyClientChain(*pem, other_ca_pem + ca_pem, now).ok());
  EXPECT_EQ(VerifyClientChain("not a certificate", ca_pem, now).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(VerifyClientChain(*pem, "", now).code(), absl::StatusCode::kInvalidArgument);
}

TEST(X509Test, SignLeafRefusesBadInput) {
  std::string ca_key = *MakeKey();
  std::string ca_pem = SelfSignedCa(ca_key);
  ParsedCsr csr = *ParseCsr(*MakeCsr(*MakeKey(), "x"));
  LeafRequest leaf{csr.public_key_pem, "n", "spiffe://benchfleet/agent/n", 100, 50};
  EXPECT_EQ(SignLeaf(leaf, ca_pem, ca_key).status().code(), absl::StatusCode::kInvalidArgument);
  leaf.not_after_unix_seconds = 200;
  leaf.uri = "URI:a,DNS:b";
  EXPECT_EQ(SignLeaf(leaf, ca_pem, ca_key).status().code(), absl::StatusCode::kInvalidArgument);
  leaf.uri = "spiffe://benchfleet/agent/n";
  EXPECT_EQ(SignLeaf(leaf, "junk", ca_key).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SignLeaf(leaf, ca_pem, "junk").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadCertificates("junk").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KeyMatchesCertificate("junk", ca_pem).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace bench::x509
