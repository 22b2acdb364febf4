// Who is calling and what they may do: roles, principals, hashed bearer tokens, and the
// one table of which role may take which action. Pure domain: no gRPC, no HTTP, no
// TLS (the adapters, server/rpc/grpc_auth.* and the web port, turn a call's certificate or
// token into a Principal and ask Authorize). Security off (no client CA, no token file)
// means every caller is `kAnonymousAdmin`. docs/security.md explains the model.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace bench {

// view: read only. submit: view + submit jobs, cancel its own. admin: submit + cancel
// any job, set baselines, manage join tokens. agent: the agent RPCs only, for the node it
// names. join: a join token (server/auth/join_tokens.h), which may only ask for an agent's
// certificate (RequestCertificate); never in a --tokens file or a certificate.
enum class Role { kView, kSubmit, kAdmin, kAgent, kJoin };

const char* RoleName(Role role);  // "view", "submit", "admin", "agent", "join"
absl::StatusOr<Role> ParseRole(std::string_view name);

struct Principal {
  // A user's name, or for an agent its node (the name it must register under).
  std::string name;
  Role role = Role::kView;
  // "cert" or "token" (how it authenticated), "none" when security is off.
  std::string via = "none";

  // "alice (submit, cert)": for logs and the job's submitted_by.
  std::string Describe() const;
};

// What a caller asks to do; one per RPC or HTTP route family.
enum class Action {
  kRead,                // jobs, results, agents, queue, baselines, samples, the web page and API
  kSubmit,              // SubmitJob
  kCancel,              // CancelJob: submit may cancel only jobs it submitted, admin any
  kSetBaseline,         // SetBaseline
  kAgent,               // Register, Heartbeat, StreamAssignments, ReportStatus, UploadSamples
  kRequestCertificate,  // RequestCertificate: a join token, or an agent for its own node
  kManageJoinTokens,    // Create/List/RevokeJoinToken: admin
};

// OK, UNAUTHENTICATED (no principal: "no credentials; ..."), or PERMISSION_DENIED naming
// the principal, its role and the action. `job_owner_name` is the name of the principal
// that submitted the job a kCancel is about (Job::submitted_by; ignored for other
// actions): a submit principal may cancel it only when its name matches. Agents may take no
// action but kAgent and kRequestCertificate; the node check (an agent acts only for its own
// node) is the caller's: CheckAgentNode. A join principal may take kRequestCertificate and
// nothing else, and is the only other role that may.
absl::Status Authorize(const std::optional<Principal>& who, Action action,
                       std::string_view job_owner_name = "");

// PERMISSION_DENIED unless `who` is an agent whose name is `node` (or security is off:
// who->via == "none").
absl::Status CheckAgentNode(const Principal& who, std::string_view node);

// The principal a client certificate's URI SAN names:
//   spiffe://benchfleet/<role>/<name>    e.g. spiffe://benchfleet/agent/dgx-01,
//                                             spiffe://benchfleet/submit/alice
// INVALID_ARGUMENT for anything else (the error quotes a short prefix of the URI).
absl::StatusOr<Principal> PrincipalFromCertUri(std::string_view uri);

// Bearer tokens, stored hashed. The file has one token per line:
//   sha256:<64 hex digits> <role> <name>
// blank lines and lines starting with '#' ignored. deploy/pki/new-token.sh makes one.
class TokenTable {
 public:
  // INVALID_ARGUMENT naming the file and line of the first bad line; NOT_FOUND etc.
  // when it cannot be read. The plaintext tokens are never stored.
  static absl::StatusOr<TokenTable> Load(const std::string& path);
  static absl::StatusOr<TokenTable> Parse(std::string_view text, std::string_view source);

  // The principal (via "token") the token belongs to; nullopt when unknown. Compares
  // hashes in constant time.
  std::optional<Principal> Find(std::string_view token) const;

  // "sha256:" + the lowercase hex SHA-256 of `token`.
  static std::string Hash(std::string_view token);

  size_t size() const { return by_hash_.size(); }

 private:
  std::map<std::string, Principal> by_hash_;
};

}  // namespace bench
