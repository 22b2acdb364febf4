// bench-agent's certificate bootstrap (issue 24; --join-token-file, docs/agent.md). An agent
// started with a join token and no certificate of its own makes an ECDSA P-256 key in its
// state directory (0600; it never leaves the node), sends a certificate request for its node
// name through AgentService.RequestCertificate, authenticated by the token (over TLS only:
// the token is a credential), and stores the chain benchd signed beside the key. A state
// directory that already holds a usable certificate for the node (agent_certificate.h) costs
// no token use; an expired or foreign one is replaced by a new bootstrap.
//
// RequestAndStore is the one exchange both the bootstrap and the renewal
// (cert_renewer.h) make: a CSR for a key, the answer checked (it names the node, it is the
// key's), the files written atomically (key first, then the chain), so gRPC's file watcher
// never reads half a pair.
//
// Thread-safety: the functions are reentrant; two of them must not write one state directory
// at once (the agent's StateDirLock keeps one agent per directory, and it bootstraps before
// its renewer starts).
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "benchfleet/v1/agent.pb.h"
#include "worker/agent/agent_certificate.h"

namespace bench::agent {

// The RPC, as the bootstrap and the renewal need it (ControllerClient implements it).
class CertificateRpc {
 public:
  virtual ~CertificateRpc() = default;
  virtual absl::StatusOr<benchfleet::v1::RequestCertificateResponse> RequestCertificate(
      const benchfleet::v1::RequestCertificateRequest& request) = 0;
};

struct BootstrapOptions {
  std::string controller;       // HOST:PORT of benchd
  std::string node;             // the agent's name: the certificate's
  std::string tls_ca;           // CA file verifying benchd (required: the token needs TLS)
  std::string join_token_file;  // the token's file (its first line), read at each bootstrap
  std::string state_dir;        // where agent.key and agent.pem live
  absl::Duration rpc_timeout = absl::Seconds(10);
  // A transient failure (benchd away or starting) is retried with back-off for this long.
  absl::Duration retry_for = absl::Minutes(5);
  absl::Duration min_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(5);
};

struct BootstrapResult {
  HeldCertificate held;
  bool requested = false;  // false: the state directory's certificate was still usable
};

// One exchange: a CSR for `key_pem` (CN `node`) through `rpc`; the answer checked against the
// key and the node; with `store_key` the key written first (0600), then the chain (0644).
absl::StatusOr<HeldCertificate> RequestAndStore(CertificateRpc& rpc, const std::string& node,
                                                const std::string& key_pem,
                                                const AgentCertificateFiles& files, bool store_key);

// A new key and a certificate for it, asked for once with the join token. Errors: the token
// file or the CA unreadable (INVALID_ARGUMENT naming the flag), and benchd's refusal as it
// answered (UNAUTHENTICATED for a token it does not accept, ALREADY_EXISTS for a name a live
// agent holds, ...), prefixed with what was asked.
absl::StatusOr<HeldCertificate> BootstrapOnce(const BootstrapOptions& options);

// The state directory's certificate if usable for the node now, else BootstrapOnce, retried
// on transient errors for options.retry_for (while `keep_trying` says so; default: always).
absl::StatusOr<BootstrapResult> EnsureAgentCertificate(
    const BootstrapOptions& options, const std::function<bool()>& keep_trying = nullptr);

}  // namespace bench::agent
