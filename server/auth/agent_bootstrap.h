// AgentBootstrap: the decision behind AgentService.RequestCertificate (issue 24). A join
// token (role join) may obtain a certificate for any valid node name that no live agent
// holds (ALREADY_EXISTS naming it, unless the token allows replacing), spending one use; an
// agent (its certificate) may renew for its own node only (PERMISSION_DENIED for another);
// nobody else may. Checks in this order: caller, signer configured (FAILED_PRECONDITION),
// node name, CSR (INVALID_ARGUMENT), the signer not expired (FAILED_PRECONDITION), the name
// held, the use spent (UNAUTHENTICATED when the token ran out meanwhile), then the
// signature. Domain code: no gRPC; time passed in.
// Thread-safe.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/auth/agent_signer.h"
#include "server/auth/auth.h"
#include "server/auth/join_tokens.h"

namespace bench {

class AgentBootstrap {
 public:
  // Whether a live (registered, not lost) agent holds the name.
  using AgentLive = std::function<bool(const std::string& node)>;
  // None is owned; `signer` may be null (benchd signs nothing: FAILED_PRECONDITION).
  AgentBootstrap(JoinTokens* tokens, const AgentSigner* signer, AgentLive agent_live)
      : tokens_(tokens), signer_(signer), agent_live_(std::move(agent_live)) {}

  absl::StatusOr<IssuedCertificate> RequestCertificate(const Principal& who,
                                                       const std::string& node,
                                                       const std::string& csr_pem, absl::Time now);

  bool signing() const { return signer_ != nullptr; }

 private:
  JoinTokens* const tokens_;
  const AgentSigner* const signer_;
  const AgentLive agent_live_;
};

}  // namespace bench
