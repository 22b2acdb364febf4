#include "server/auth/agent_bootstrap.h"

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/x509.h"
#include "server/core/inventory_validation.h"

namespace bench {

absl::StatusOr<IssuedCertificate> AgentBootstrap::RequestCertificate(const Principal& who,
                                                                     const std::string& node,
                                                                     const std::string& csr_pem,
                                                                     absl::Time now) {
  const bool join = who.role == Role::kJoin && who.via == "join-token";
  if (!join) {
    if (who.role != Role::kAgent || who.via != "cert") {
      return absl::PermissionDeniedError(absl::StrCat(
          "permission denied: ", who.Describe(),
          " may not request an agent certificate (a join token or the agent's own certificate "
          "may)"));
    }
    if (absl::Status status = CheckAgentNode(who, node); !status.ok()) return status;
  }
  if (signer_ == nullptr) {
    return absl::FailedPreconditionError(
        "benchd signs no agent certificates: start it with --agent-signing-cert and "
        "--agent-signing-key");
  }
  if (absl::Status status = ValidateNodeName(node, "node"); !status.ok()) return status;
  if (absl::StatusOr<x509::ParsedCsr> csr = x509::ParseCsr(csr_pem); !csr.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("csr_pem: ", csr.status().message()));
  }
  if (now >= signer_->signer_not_after()) {  // before a use is spent on a refusal
    return absl::FailedPreconditionError(
        "benchd's agent signing certificate has expired: renew --agent-signing-cert");
  }
  if (join) {
    absl::StatusOr<JoinTokenRecord> token = tokens_->CheckId(who.name, now);
    if (!token.ok()) return token.status();
    if (!token->allow_replace && agent_live_(node)) {
      return absl::AlreadyExistsError(
          absl::StrCat("node ", node,
                       " is held by a live agent; stop it first, or use a join token made "
                       "with --allow-replace"));
    }
    if (absl::Status status = tokens_->Spend(who.name, now); !status.ok()) return status;
  }
  absl::StatusOr<IssuedCertificate> issued = signer_->Issue(node, csr_pem, now);
  if (!issued.ok()) return issued.status();
  Log("issued a certificate for agent ", node, " to ", who.Describe(), " valid until ",
      absl::FormatTime(issued->not_after, absl::UTCTimeZone()));
  return issued;
}

}  // namespace bench
