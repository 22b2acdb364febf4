// CertificateRenewer: keeps a bootstrapped agent's certificate (cert_bootstrap.h) current. One
// background thread sleeps until two thirds of the certificate's lifetime (from when it was
// obtained: agent_certificate.h's UsableLifetime) have passed, then
// asks for a new certificate for the same key over the agent's own certificate (the `own`
// RPC: the agent's channel, whose client certificate is STATE_DIR/agent.pem) and replaces
// agent.pem atomically; gRPC's file watcher hands it to new connections within
// RefreshSecondsFor. A failure (benchd down, restarting, refusing) is logged and retried with
// back-off — capped at a twentieth of the lifetime, so a certificate gets many tries before
// it expires — while the agent keeps working on the current certificate. Once it has expired
// the agent's certificate can no longer authenticate, so the renewer bootstraps again with
// the join token (BootstrapOnce: a new key, one token use), retried the same way.
//
// Thread-safety: Start and Stop from one thread; the accessors from any.
#pragma once

#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "worker/agent/cert_bootstrap.h"

namespace bench::agent {

struct CertificateRenewerOptions {
  BootstrapOptions bootstrap;  // the node, the state directory, and the token for expiry
  absl::Duration min_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Minutes(5);
};

class CertificateRenewer {
 public:
  // `own` outlives the renewer. `current`: the certificate in the state directory now.
  CertificateRenewer(CertificateRenewerOptions options, CertificateRpc* own,
                     HeldCertificate current);
  ~CertificateRenewer();  // Stop()
  CertificateRenewer(const CertificateRenewer&) = delete;
  CertificateRenewer& operator=(const CertificateRenewer&) = delete;

  void Start();
  // Wakes and joins the thread (an RPC in flight ends at its deadline, or when the `own`
  // client is shut down first). Idempotent.
  void Stop();

  HeldCertificate current() const;
  int64_t renewals() const;  // certificates obtained (renewed or bootstrapped again)
  int64_t failures() const;  // attempts that failed

 private:
  void Loop();
  // One attempt at `now`: renews over `own_` while the certificate is valid, else bootstraps.
  absl::StatusOr<HeldCertificate> Attempt(absl::Time now, const HeldCertificate& current);
  // Sleeps until `until`; false if stopped.
  bool SleepUntil(absl::Time until);

  const CertificateRenewerOptions options_;
  CertificateRpc* const own_;
  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  HeldCertificate current_ ABSL_GUARDED_BY(mu_);
  int64_t renewals_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace bench::agent
