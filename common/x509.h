// The X.509 pieces of the agent certificate bootstrap (issue 24), shared by benchd (parse and
// sign a CSR) and bench-agent (make its key and CSR, read back its certificate). OpenSSL
// underneath; everything here goes in and out as PEM text, so no OpenSSL type leaks into a
// caller. Keys are ECDSA P-256. Stateless functions, thread-safe; errors are
// INVALID_ARGUMENT for input that does not parse or verify (naming what), INTERNAL for an
// OpenSSL failure on good input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace bench::x509 {

// A fresh ECDSA P-256 private key as PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----").
absl::StatusOr<std::string> MakeKey();

// A PKCS#10 certificate request (PEM) for `key_pem`'s public key, subject CN=`common_name`,
// signed with that key (SHA-256).
absl::StatusOr<std::string> MakeCsr(std::string_view key_pem, std::string_view common_name);

// What benchd takes from a CSR: its public key (only that, and the proof of possession).
struct ParsedCsr {
  std::string public_key_pem;  // SubjectPublicKeyInfo PEM
  std::string common_name;     // the subject's CN as the agent wrote it ("" when none); unused
};

// Parses a PEM CSR (at most 16 KiB) and verifies its self-signature. INVALID_ARGUMENT when it
// does not parse, when the signature does not verify, or when the key is neither EC on
// P-256/P-384 nor RSA of at least 2048 bits.
absl::StatusOr<ParsedCsr> ParseCsr(std::string_view csr_pem);

// What a certificate says, as far as the bootstrap cares.
struct CertificateInfo {
  std::string common_name;
  std::vector<std::string> uris;  // its URI subject alternative names
  int64_t not_before_unix_seconds = 0;
  int64_t not_after_unix_seconds = 0;
  bool is_ca = false;        // basicConstraints CA:TRUE
  bool self_signed = false;  // issued by itself (a root)
  std::string pem;           // this one certificate, re-encoded as PEM
};

// Every certificate in `pem` (a chain or a bundle), in order. INVALID_ARGUMENT when there is
// none or one does not parse.
absl::StatusOr<std::vector<CertificateInfo>> ReadCertificates(std::string_view pem);

// Whether `key_pem` is the private key of the first certificate in `certificate_pem`.
// INVALID_ARGUMENT when either does not parse.
absl::StatusOr<bool> KeyMatchesCertificate(std::string_view key_pem,
                                           std::string_view certificate_pem);

// Whether the first certificate of `chain_pem` verifies, through the others in it, up to a
// root in `roots_pem` (a CA bundle), at `unix_seconds`, for TLS client use. OK when it does;
// FAILED_PRECONDITION naming OpenSSL's reason when it does not (another CA's, expired);
// INVALID_ARGUMENT when either does not parse.
absl::Status VerifyClientChain(std::string_view chain_pem, std::string_view roots_pem,
                               int64_t unix_seconds);

// A leaf certificate to issue for a parsed CSR's key.
struct LeafRequest {
  std::string public_key_pem;  // ParsedCsr::public_key_pem
  std::string common_name;
  std::string uri;  // the one subject alternative name (a URI)
  int64_t not_before_unix_seconds = 0;
  int64_t not_after_unix_seconds = 0;
};

// Signs `leaf` with the CA `signer_key_pem` whose certificate is the first in
// `signer_certificate_pem`: a fresh random 127-bit serial, the given validity, CN, one URI
// SAN, basicConstraints critical CA:FALSE, keyUsage critical digitalSignature,
// extendedKeyUsage clientAuth, subject and authority key identifiers; SHA-256. Returns the
// leaf as PEM. The caller decides the validity (and keeps it within the signer's).
absl::StatusOr<std::string> SignLeaf(const LeafRequest& leaf,
                                     std::string_view signer_certificate_pem,
                                     std::string_view signer_key_pem);

}  // namespace bench::x509
