// The agent's own certificate in its --state-dir (issue 24's bootstrap, docs/agent.md):
//
//   STATE_DIR/agent.key   its ECDSA P-256 key (PKCS#8 PEM, 0600), made on this node, never sent
//   STATE_DIR/agent.pem   the chain benchd signed for that key (the leaf first)
//
// What the pair on disk is worth (LoadUsableCertificate: present, the key is the leaf's, the
// leaf names the node and is valid now), when to renew it (two thirds into its lifetime), how
// often gRPC's file watcher must re-read it (the files are written with file_io.h's atomic
// replace, so that watcher never reads half a file). Stateless functions over files;
// thread-safe.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace bench::agent {

struct AgentCertificateFiles {
  std::string key;   // STATE_DIR/agent.key
  std::string cert;  // STATE_DIR/agent.pem
};
AgentCertificateFiles CertificateFilesIn(const std::string& state_dir);

// spiffe://benchfleet/agent/NODE, the identity benchd gives the certificate's holder.
std::string AgentUri(const std::string& node);

// The validity of a certificate the agent holds, and when it got it.
struct HeldCertificate {
  absl::Time not_before;
  absl::Time not_after;
  // When it was obtained (agent.pem's modification time once stored); InfinitePast: unknown.
  absl::Time obtained = absl::InfinitePast();
};

// The part of the lifetime the agent has: from the later of not_before and obtained (benchd
// backdates not_before by minutes for clock skew, which would otherwise make a short-lived
// certificate due for renewal the moment it is issued) to not_after; zero if none is left.
absl::Duration UsableLifetime(const HeldCertificate& held);

// Two thirds into UsableLifetime.
absl::Time RenewalTime(const HeldCertificate& held);

// How often (seconds) gRPC's FileWatcherCertificateProvider should re-read the files for a
// certificate of this lifetime: a twelfth of UsableLifetime (so a renewed certificate is in
// use long before the old one expires, at two thirds plus a twelfth), between 1 and 60.
unsigned RefreshSecondsFor(const HeldCertificate& held);

// Checks a chain benchd answered for `key_pem`: it parses, its leaf carries AgentUri(node) and
// is the certificate of `key_pem`. Returns the leaf's validity (obtained left unknown);
// INVALID_ARGUMENT naming what is wrong otherwise.
absl::StatusOr<HeldCertificate> CheckIssuedChain(const std::string& chain_pem,
                                                 const std::string& key_pem,
                                                 const std::string& node);

// The pair in `files` if it can be used for `node` at `now` (obtained: the certificate file's
// modification time): NOT_FOUND when either file is
// missing; FAILED_PRECONDITION (saying why: unreadable, another node's, not this key's,
// expired or not yet valid) when it cannot. Nothing is changed on disk.
absl::StatusOr<HeldCertificate> LoadUsableCertificate(const AgentCertificateFiles& files,
                                                      const std::string& node, absl::Time now);

}  // namespace bench::agent
