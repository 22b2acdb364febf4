#include "server/auth/agent_signer.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/quote.h"
#include "common/x509.h"

namespace bench {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read ", QuotePrefix(path)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::Status Bad(const char* flag, const std::string& path, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", QuotePrefix(path), ": ", why));
}

// Whether `leaf_pem`, with `chain_pem` as untrusted intermediates, verifies as a TLS client
// against the CA bundle in `ca_file`; the verifier's reason when not.
absl::Status VerifiesAgainst(const std::string& leaf_pem, const std::string& chain_pem,
                             const std::string& ca_file) {
  struct Cleanup {
    X509_STORE* store = X509_STORE_new();
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    STACK_OF(X509) * untrusted = sk_X509_new_null();
    X509* leaf = nullptr;
    ~Cleanup() {
      X509_free(leaf);
      sk_X509_pop_free(untrusted, X509_free);
      X509_STORE_CTX_free(ctx);
      X509_STORE_free(store);
    }
  } c;
  if (c.store == nullptr || c.ctx == nullptr || c.untrusted == nullptr ||
      X509_STORE_load_file(c.store, ca_file.c_str()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat("--client-ca: cannot load ", QuotePrefix(ca_file), " as certificates"));
  }
  BIO* bio = BIO_new_mem_buf(leaf_pem.data(), static_cast<int>(leaf_pem.size()));
  c.leaf = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  bio = BIO_new_mem_buf(chain_pem.data(), static_cast<int>(chain_pem.size()));
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    sk_X509_push(c.untrusted, cert);
  }
  BIO_free(bio);
  ERR_clear_error();
  if (c.leaf == nullptr || X509_STORE_CTX_init(c.ctx, c.store, c.leaf, c.untrusted) != 1) {
    return absl::InternalError("cannot set up a certificate verification");
  }
  X509_STORE_CTX_set_purpose(c.ctx, X509_PURPOSE_SSL_CLIENT);
  if (X509_verify_cert(c.ctx) != 1) {
    const int error = X509_STORE_CTX_get_error(c.ctx);
    ERR_clear_error();
    return absl::InvalidArgumentError(X509_verify_cert_error_string(error));
  }
  return absl::OkStatus();
}

std::string AgentUri(const std::string& node) {
  return absl::StrCat("spiffe://benchfleet/agent/", node);
}

}  // namespace

absl::StatusOr<std::unique_ptr<AgentSigner>> AgentSigner::Load(const std::string& cert_file,
                                                               const std::string& key_file,
                                                               const std::string& client_ca_file,
                                                               absl::Duration ttl, absl::Time now,
                                                               absl::Duration min_ttl) {
  constexpr char kCertFlag[] = "--agent-signing-cert";
  constexpr char kKeyFlag[] = "--agent-signing-key";
  if (ttl < min_ttl) {
    return absl::InvalidArgumentError(absl::StrCat("--agent-cert-ttl: ", absl::FormatDuration(ttl),
                                                   " is below ", absl::FormatDuration(min_ttl)));
  }
  absl::StatusOr<std::string> cert_text = ReadFile(cert_file, kCertFlag);
  if (!cert_text.ok()) return cert_text.status();
  absl::StatusOr<std::string> key_text = ReadFile(key_file, kKeyFlag);
  if (!key_text.ok()) return key_text.status();
  absl::StatusOr<std::vector<x509::CertificateInfo>> certs = x509::ReadCertificates(*cert_text);
  if (!certs.ok()) return Bad(kCertFlag, cert_file, certs.status().message());
  const x509::CertificateInfo& signer = certs->front();
  if (!signer.is_ca) return Bad(kCertFlag, cert_file, "is not a CA (basicConstraints CA:TRUE)");
  if (absl::FromUnixSeconds(signer.not_after_unix_seconds) <= now) {
    return Bad(kCertFlag, cert_file, "has expired");
  }
  absl::StatusOr<bool> match = x509::KeyMatchesCertificate(*key_text, *cert_text);
  if (!match.ok()) return Bad(kKeyFlag, key_file, match.status().message());
  if (!*match) return Bad(kKeyFlag, key_file, absl::StrCat("is not the key of ", cert_file));

  auto out = std::unique_ptr<AgentSigner>(new AgentSigner());
  out->signer_pem_ = signer.pem;
  for (const x509::CertificateInfo& cert : *certs) {
    if (!cert.self_signed) out->chain_pem_ += cert.pem;
  }
  out->key_pem_ = *key_text;
  out->ttl_ = ttl;
  out->signer_not_after_ = absl::FromUnixSeconds(signer.not_after_unix_seconds);

  if (!client_ca_file.empty()) {
    // What it signs must be accepted by benchd's own client verification: a throwaway
    // leaf, verified against --client-ca as a TLS client.
    absl::StatusOr<std::string> key = x509::MakeKey();
    if (!key.ok()) return key.status();
    absl::StatusOr<std::string> csr = x509::MakeCsr(*key, "benchd-signer-check");
    if (!csr.ok()) return csr.status();
    absl::StatusOr<IssuedCertificate> probe = out->Issue("benchd-signer-check", *csr, now);
    if (!probe.ok()) return Bad(kCertFlag, cert_file, probe.status().message());
    if (absl::Status verified = VerifiesAgainst(probe->chain_pem, out->chain_pem_, client_ca_file);
        !verified.ok()) {
      return Bad(kCertFlag, cert_file,
                 absl::StrCat("what it signs does not verify against --client-ca ",
                              QuotePrefix(client_ca_file), ": ", verified.message(),
                              " (the signer must be in that bundle or a sub-CA of a CA there "
                              "that allows one: deploy/pki/make-signing-ca.sh)"));
    }
  }
  return out;
}

absl::StatusOr<IssuedCertificate> AgentSigner::Issue(const std::string& node,
                                                     const std::string& csr_pem,
                                                     absl::Time now) const {
  if (now >= signer_not_after_) {
    return absl::FailedPreconditionError(
        "benchd's agent signing certificate has expired: renew --agent-signing-cert");
  }
  absl::StatusOr<x509::ParsedCsr> csr = x509::ParseCsr(csr_pem);
  if (!csr.ok())
    return absl::InvalidArgumentError(absl::StrCat("csr_pem: ", csr.status().message()));
  x509::LeafRequest leaf;
  leaf.public_key_pem = csr->public_key_pem;
  leaf.common_name = node;
  leaf.uri = AgentUri(node);
  const absl::Time not_before = now - kBackdate;
  const absl::Time not_after = std::min(now + ttl_, signer_not_after_);
  leaf.not_before_unix_seconds = absl::ToUnixSeconds(not_before);
  leaf.not_after_unix_seconds = absl::ToUnixSeconds(not_after);
  absl::StatusOr<std::string> pem = x509::SignLeaf(leaf, signer_pem_, key_pem_);
  if (!pem.ok()) return pem.status();
  IssuedCertificate issued;
  issued.chain_pem = *pem + chain_pem_;
  issued.not_before = absl::FromUnixSeconds(leaf.not_before_unix_seconds);
  issued.not_after = absl::FromUnixSeconds(leaf.not_after_unix_seconds);
  return issued;
}

}  // namespace bench
