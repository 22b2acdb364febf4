#include "common/x509.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace bench::x509 {
namespace {

constexpr size_t kMaxCsrBytes = 16 * 1024;
constexpr size_t kMaxPemBytes = 1024 * 1024;

struct Free {
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(X509_REQ* p) const { X509_REQ_free(p); }
  void operator()(X509_NAME* p) const { X509_NAME_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
  void operator()(BASIC_CONSTRAINTS* p) const { BASIC_CONSTRAINTS_free(p); }
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
  void operator()(STACK_OF(X509) * p) const { sk_X509_pop_free(p, X509_free); }
};
template <typename T>
using Ptr = std::unique_ptr<T, Free>;

// The OpenSSL error queue as text (and emptied), for INTERNAL errors.
std::string OpenSslErrors() {
  std::string out;
  while (unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof(buffer));
    if (!out.empty()) out += "; ";
    out += buffer;
  }
  return out.empty() ? "no detail" : out;
}

absl::Status Internal(std::string_view what) {
  return absl::InternalError(absl::StrCat("OpenSSL: ", std::string(what), ": ", OpenSslErrors()));
}

Ptr<BIO> ReadBio(std::string_view text) {
  return Ptr<BIO>(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

absl::StatusOr<Ptr<EVP_PKEY>> ReadPrivateKey(std::string_view pem) {
  if (pem.size() > kMaxPemBytes) return absl::InvalidArgumentError("the private key is too long");
  Ptr<BIO> bio = ReadBio(pem);
  Ptr<EVP_PKEY> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (key == nullptr) return absl::InvalidArgumentError("not a PEM private key");
  return key;
}

absl::StatusOr<Ptr<X509>> ReadFirstCertificate(std::string_view pem) {
  if (pem.size() > kMaxPemBytes) return absl::InvalidArgumentError("the certificate is too long");
  Ptr<BIO> bio = ReadBio(pem);
  Ptr<X509> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (cert == nullptr) return absl::InvalidArgumentError("not a PEM certificate");
  return cert;
}

// An acceptable key for an agent: EC on P-256 or P-384, or RSA of 2048 bits or more.
absl::Status CheckKeyType(EVP_PKEY* key) {
  const int type = EVP_PKEY_get_base_id(key);
  if (type == EVP_PKEY_EC) {
    char group[64] = {0};
    size_t length = 0;
    if (EVP_PKEY_get_group_name(key, group, sizeof(group), &length) != 1) {
      ERR_clear_error();
      return absl::InvalidArgumentError("the CSR's EC key names no curve");
    }
    const std::string name(group, length);
    if (name == "prime256v1" || name == "P-256" || name == "secp384r1" || name == "P-384") {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(
        absl::StrCat("the CSR's EC key is on curve ", name, "; P-256 or P-384 is needed"));
  }
  if (type == EVP_PKEY_RSA) {
    if (EVP_PKEY_get_bits(key) >= 2048) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("the CSR's RSA key has ", EVP_PKEY_get_bits(key),
                                                   " bits; at least 2048 are needed"));
  }
  return absl::InvalidArgumentError("the CSR's key is neither EC (P-256, P-384) nor RSA");
}

int64_t UnixSeconds(const ASN1_TIME* time) {
  struct tm tm = {};
  if (time == nullptr || ASN1_TIME_to_tm(time, &tm) != 1) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

absl::Status SetTime(ASN1_TIME* field, int64_t unix_seconds, std::string_view what) {
  if (ASN1_TIME_set(field, static_cast<time_t>(unix_seconds)) == nullptr) return Internal(what);
  return absl::OkStatus();
}

// Adds one extension from OpenSSL's configuration syntax ("critical,CA:FALSE").
absl::Status AddExtension(X509* cert, X509V3_CTX* ctx, int nid, const std::string& value) {
  Ptr<X509_EXTENSION> ext(X509V3_EXT_conf_nid(nullptr, ctx, nid, value.c_str()));
  if (ext == nullptr || X509_add_ext(cert, ext.get(), -1) != 1) {
    return Internal(absl::StrCat("extension ", OBJ_nid2sn(nid), "=", value));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> MakeKey() {
  Ptr<EVP_PKEY> key(EVP_EC_gen("P-256"));
  if (key == nullptr) return Internal("generating a P-256 key");
  Ptr<BIO> out(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PrivateKey(out.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return Internal("writing the key");
  }
  return BioText(out.get());
}

absl::StatusOr<std::string> MakeCsr(std::string_view key_pem, std::string_view common_name) {
  absl::StatusOr<Ptr<EVP_PKEY>> key = ReadPrivateKey(key_pem);
  if (!key.ok()) return key.status();
  Ptr<X509_REQ> req(X509_REQ_new());
  if (req == nullptr || X509_REQ_set_version(req.get(), 0) != 1) return Internal("a new CSR");
  X509_NAME* subject = X509_REQ_get_subject_name(req.get());
  const std::string cn(common_name);
  if (!cn.empty() && X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                                reinterpret_cast<const unsigned char*>(cn.data()),
                                                static_cast<int>(cn.size()), -1, 0) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot use '", cn, "' as a certificate's common name"));
  }
  if (X509_REQ_set_pubkey(req.get(), key->get()) != 1) return Internal("the CSR's key");
  if (X509_REQ_sign(req.get(), key->get(), EVP_sha256()) <= 0) return Internal("signing the CSR");
  Ptr<BIO> out(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509_REQ(out.get(), req.get()) != 1) return Internal("writing the CSR");
  return BioText(out.get());
}

absl::StatusOr<ParsedCsr> ParseCsr(std::string_view csr_pem) {
  if (csr_pem.empty()) return absl::InvalidArgumentError("the CSR is empty");
  if (csr_pem.size() > kMaxCsrBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the CSR has ", csr_pem.size(), " bytes; at most ", kMaxCsrBytes));
  }
  Ptr<BIO> bio = ReadBio(csr_pem);
  Ptr<X509_REQ> req(PEM_read_bio_X509_REQ(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (req == nullptr) {
    return absl::InvalidArgumentError("the CSR does not parse as a PEM PKCS#10 request");
  }
  EVP_PKEY* key = X509_REQ_get0_pubkey(req.get());  // owned by req
  if (key == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError("the CSR holds no usable public key");
  }
  if (absl::Status status = CheckKeyType(key); !status.ok()) return status;
  if (X509_REQ_verify(req.get(), key) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        "the CSR's signature does not verify with its public key (not made with that key)");
  }
  ParsedCsr parsed;
  Ptr<BIO> out(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PUBKEY(out.get(), key) != 1) return Internal("writing the CSR's key");
  parsed.public_key_pem = BioText(out.get());
  X509_NAME* subject = X509_REQ_get_subject_name(req.get());
  char cn[256] = {0};
  if (subject != nullptr) {
    int n = X509_NAME_get_text_by_NID(subject, NID_commonName, cn, sizeof(cn));
    if (n > 0) parsed.common_name.assign(cn, static_cast<size_t>(n));
  }
  ERR_clear_error();
  return parsed;
}

absl::StatusOr<std::vector<CertificateInfo>> ReadCertificates(std::string_view pem) {
  if (pem.size() > kMaxPemBytes) return absl::InvalidArgumentError("the certificates are too long");
  Ptr<BIO> bio = ReadBio(pem);
  std::vector<CertificateInfo> out;
  while (true) {
    Ptr<X509> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (cert == nullptr) {
      // The end of the input, or a block that does not parse.
      unsigned long error = ERR_peek_last_error();
      ERR_clear_error();
      if (ERR_GET_REASON(error) == PEM_R_NO_START_LINE) break;
      return absl::InvalidArgumentError(
          absl::StrCat("certificate ", out.size() + 1, " does not parse"));
    }
    CertificateInfo info;
    char cn[256] = {0};
    int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert.get()), NID_commonName, cn,
                                      sizeof(cn));
    if (n > 0) info.common_name.assign(cn, static_cast<size_t>(n));
    Ptr<GENERAL_NAMES> names(static_cast<GENERAL_NAMES*>(
        X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr)));
    for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names.get()); ++i) {
      const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
      if (name->type != GEN_URI) continue;
      const ASN1_IA5STRING* uri = name->d.uniformResourceIdentifier;
      info.uris.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
                             static_cast<size_t>(ASN1_STRING_length(uri)));
    }
    info.not_before_unix_seconds = UnixSeconds(X509_get0_notBefore(cert.get()));
    info.not_after_unix_seconds = UnixSeconds(X509_get0_notAfter(cert.get()));
    Ptr<BASIC_CONSTRAINTS> constraints(static_cast<BASIC_CONSTRAINTS*>(
        X509_get_ext_d2i(cert.get(), NID_basic_constraints, nullptr, nullptr)));
    info.is_ca = constraints != nullptr && constraints->ca;
    info.self_signed = X509_check_issued(cert.get(), cert.get()) == X509_V_OK;
    Ptr<BIO> out_bio(BIO_new(BIO_s_mem()));
    if (PEM_write_bio_X509(out_bio.get(), cert.get()) != 1)
      return Internal("writing a certificate");
    info.pem = BioText(out_bio.get());
    ERR_clear_error();
    out.push_back(std::move(info));
  }
  if (out.empty()) return absl::InvalidArgumentError("no PEM certificate found");
  return out;
}

absl::StatusOr<bool> KeyMatchesCertificate(std::string_view key_pem,
                                           std::string_view certificate_pem) {
  absl::StatusOr<Ptr<EVP_PKEY>> key = ReadPrivateKey(key_pem);
  if (!key.ok()) return key.status();
  absl::StatusOr<Ptr<X509>> cert = ReadFirstCertificate(certificate_pem);
  if (!cert.ok()) return cert.status();
  const bool match = X509_check_private_key(cert->get(), key->get()) == 1;
  ERR_clear_error();
  return match;
}

absl::StatusOr<std::string> SignLeaf(const LeafRequest& leaf,
                                     std::string_view signer_certificate_pem,
                                     std::string_view signer_key_pem) {
  if (leaf.not_after_unix_seconds <= leaf.not_before_unix_seconds) {
    return absl::InvalidArgumentError("the certificate's notAfter is not after its notBefore");
  }
  if (leaf.uri.empty() || leaf.uri.find_first_of(", \t\r\n") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", leaf.uri, "' is not a URI for a subject alternative name"));
  }
  absl::StatusOr<Ptr<X509>> signer = ReadFirstCertificate(signer_certificate_pem);
  if (!signer.ok()) return signer.status();
  absl::StatusOr<Ptr<EVP_PKEY>> signer_key = ReadPrivateKey(signer_key_pem);
  if (!signer_key.ok()) return signer_key.status();
  Ptr<BIO> key_bio = ReadBio(leaf.public_key_pem);
  Ptr<EVP_PKEY> subject_key(PEM_read_bio_PUBKEY(key_bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (subject_key == nullptr) return absl::InvalidArgumentError("not a PEM public key");

  Ptr<X509> cert(X509_new());
  if (cert == nullptr || X509_set_version(cert.get(), 2) != 1) return Internal("a new certificate");
  // A random positive serial of 127 bits (RFC 5280: at most 20 octets, positive).
  unsigned char serial_bytes[16];
  if (RAND_bytes(serial_bytes, sizeof(serial_bytes)) != 1) return Internal("a random serial");
  serial_bytes[0] &= 0x7f;
  serial_bytes[0] |= 0x40;  // never a short (leading-zero) serial
  Ptr<BIGNUM> serial(BN_bin2bn(serial_bytes, sizeof(serial_bytes), nullptr));
  if (serial == nullptr ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    return Internal("setting the serial");
  }
  if (absl::Status s =
          SetTime(X509_getm_notBefore(cert.get()), leaf.not_before_unix_seconds, "notBefore");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          SetTime(X509_getm_notAfter(cert.get()), leaf.not_after_unix_seconds, "notAfter");
      !s.ok()) {
    return s;
  }
  Ptr<X509_NAME> subject(X509_NAME_new());
  if (subject == nullptr ||
      (!leaf.common_name.empty() &&
       X509_NAME_add_entry_by_txt(subject.get(), "CN", MBSTRING_UTF8,
                                  reinterpret_cast<const unsigned char*>(leaf.common_name.data()),
                                  static_cast<int>(leaf.common_name.size()), -1, 0) != 1) ||
      X509_set_subject_name(cert.get(), subject.get()) != 1 ||
      X509_set_issuer_name(cert.get(), X509_get_subject_name(signer->get())) != 1 ||
      X509_set_pubkey(cert.get(), subject_key.get()) != 1) {
    return Internal("the certificate's names and key");
  }
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, signer->get(), cert.get(), nullptr, nullptr, 0);
  const std::pair<int, std::string> extensions[] = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature"},
      {NID_ext_key_usage, "clientAuth"},
      {NID_subject_alt_name, absl::StrCat("URI:", leaf.uri)},
      {NID_subject_key_identifier, "hash"},
      {NID_authority_key_identifier, "keyid:always"},
  };
  for (const auto& [nid, value] : extensions) {
    if (absl::Status s = AddExtension(cert.get(), &ctx, nid, value); !s.ok()) return s;
  }
  if (X509_sign(cert.get(), signer_key->get(), EVP_sha256()) <= 0) {
    return Internal("signing the certificate (is the key the signer certificate's?)");
  }
  Ptr<BIO> out(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(out.get(), cert.get()) != 1) return Internal("writing the certificate");
  return BioText(out.get());
}

absl::Status VerifyClientChain(std::string_view chain_pem, std::string_view roots_pem,
                               int64_t unix_seconds) {
  if (chain_pem.size() > kMaxPemBytes || roots_pem.size() > kMaxPemBytes) {
    return absl::InvalidArgumentError("the certificates are too long");
  }
  // Every certificate of a PEM text, in order; nullptr when one does not parse or none is there.
  auto read_all = [](std::string_view pem) -> Ptr<STACK_OF(X509)> {
    Ptr<STACK_OF(X509)> all(sk_X509_new_null());
    Ptr<BIO> bio = ReadBio(pem);
    while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      sk_X509_push(all.get(), cert);
    }
    unsigned long error = ERR_peek_last_error();
    ERR_clear_error();
    if (ERR_GET_REASON(error) != PEM_R_NO_START_LINE || sk_X509_num(all.get()) == 0) return nullptr;
    return all;
  };
  Ptr<STACK_OF(X509)> chain = read_all(chain_pem);
  if (chain == nullptr) return absl::InvalidArgumentError("the certificate chain does not parse");
  Ptr<STACK_OF(X509)> roots = read_all(roots_pem);
  if (roots == nullptr) return absl::InvalidArgumentError("the CA bundle does not parse");
  Ptr<X509_STORE> store(X509_STORE_new());
  for (int i = 0; i < sk_X509_num(roots.get()); ++i) {
    if (X509_STORE_add_cert(store.get(), sk_X509_value(roots.get(), i)) != 1) {
      return Internal("adding a CA certificate");
    }
  }
  Ptr<X509_STORE_CTX> context(X509_STORE_CTX_new());
  if (store == nullptr || context == nullptr ||
      X509_STORE_CTX_init(context.get(), store.get(), sk_X509_value(chain.get(), 0), chain.get()) !=
          1) {
    return Internal("setting up a verification");
  }
  X509_STORE_CTX_set_purpose(context.get(), X509_PURPOSE_SSL_CLIENT);
  X509_STORE_CTX_set_time(context.get(), 0, static_cast<time_t>(unix_seconds));
  const int verified = X509_verify_cert(context.get());
  ERR_clear_error();
  if (verified != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("the certificate does not verify against the CA: ",
                     X509_verify_cert_error_string(X509_STORE_CTX_get_error(context.get()))));
  }
  return absl::OkStatus();
}

}  // namespace bench::x509
