// AgentSigner: benchd's signing side of issue 24's bootstrap. It holds the CA (the fleet's,
// or better a sub-CA of it: deploy/pki/make-signing-ca.sh) given by --agent-signing-cert and
// --agent-signing-key, and issues an agent's short-lived client certificate for a CSR:
// CN <node>, URI SAN spiffe://benchfleet/agent/<node>, clientAuth, CA:FALSE, a random
// serial, notBefore now-5m, notAfter now+ttl but never past the signer's own notAfter.
// Loaded once at start (a restart picks up a renewed signer). Immutable, thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace bench {

struct IssuedCertificate {
  std::string chain_pem;  // the leaf, then the signer's chain up to (not incl.) a root
  absl::Time not_before;
  absl::Time not_after;
};

class AgentSigner {
 public:
  static constexpr absl::Duration kBackdate = absl::Minutes(5);
  static constexpr absl::Duration kMinTtl = absl::Minutes(1);

  // Reads the signer's certificate file (the signer first, optionally followed by its
  // chain) and key, and checks: the key is the certificate's, the certificate is a CA
  // (basicConstraints CA:TRUE) valid at `now`, and — when `client_ca_file` is given — it
  // verifies against that bundle (so benchd will accept what it signs). `ttl` must be at
  // least `min_ttl` (kMinTtl; tests pass less). INVALID_ARGUMENT naming the flag
  // (--agent-signing-cert, --agent-signing-key, --agent-cert-ttl) otherwise.
  static absl::StatusOr<std::unique_ptr<AgentSigner>> Load(const std::string& cert_file,
                                                           const std::string& key_file,
                                                           const std::string& client_ca_file,
                                                           absl::Duration ttl, absl::Time now,
                                                           absl::Duration min_ttl = kMinTtl);

  // A certificate for `node`'s key in `csr_pem` (common/x509.h ParseCsr: INVALID_ARGUMENT
  // when it does not parse or verify). `node` is the caller's to check (the name rule).
  // FAILED_PRECONDITION when the signer has expired.
  absl::StatusOr<IssuedCertificate> Issue(const std::string& node, const std::string& csr_pem,
                                          absl::Time now) const;

  absl::Duration ttl() const { return ttl_; }
  absl::Time signer_not_after() const { return signer_not_after_; }

 private:
  AgentSigner() = default;
  std::string signer_pem_;  // the signer certificate alone
  std::string chain_pem_;   // the signer and its intermediates, no self-signed root
  std::string key_pem_;
  absl::Duration ttl_;
  absl::Time signer_not_after_;
};

}  // namespace bench
