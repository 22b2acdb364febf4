#include "worker/agent/cert_bootstrap.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_credentials.h"
#include "common/log.h"
#include "common/x509.h"
#include "worker/agent/controller_client.h"
#include "worker/agent/file_io.h"
#include "worker/agent/retry.h"

namespace bench::agent {

absl::StatusOr<HeldCertificate> RequestAndStore(CertificateRpc& rpc, const std::string& node,
                                                const std::string& key_pem,
                                                const AgentCertificateFiles& files,
                                                bool store_key) {
  absl::StatusOr<std::string> csr = x509::MakeCsr(key_pem, node);
  if (!csr.ok()) return csr.status();
  benchfleet::v1::RequestCertificateRequest request;
  request.set_node(node);
  request.set_csr_pem(*std::move(csr));
  absl::StatusOr<benchfleet::v1::RequestCertificateResponse> response =
      rpc.RequestCertificate(request);
  if (!response.ok()) return response.status();
  const absl::Time obtained = absl::Now();
  absl::StatusOr<HeldCertificate> held =
      CheckIssuedChain(response->certificate_chain_pem(), key_pem, node);
  if (!held.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("benchd answered an unusable certificate: ", held.status().message()));
  }
  if (store_key) {
    if (absl::Status written = WriteFileAtomically(files.key, key_pem, 0600); !written.ok()) {
      return written;
    }
  }
  if (absl::Status written =
          WriteFileAtomically(files.cert, response->certificate_chain_pem(), 0644);
      !written.ok()) {
    return written;
  }
  held->obtained = obtained;
  return held;
}

absl::StatusOr<HeldCertificate> BootstrapOnce(const BootstrapOptions& options) {
  if (options.tls_ca.empty()) {
    return absl::InvalidArgumentError(
        "--join-token-file needs --tls-ca: the join token is only sent over TLS");
  }
  absl::StatusOr<std::string> token = ReadTokenFile(options.join_token_file, "--join-token-file");
  if (!token.ok()) return token.status();
  ControllerClientOptions client_options;
  client_options.target = options.controller;
  client_options.rpc_timeout = options.rpc_timeout;
  client_options.credentials.tls_ca = options.tls_ca;
  client_options.credentials.token = *std::move(token);
  absl::StatusOr<std::unique_ptr<ControllerClient>> client =
      ControllerClient::Create(std::move(client_options));
  if (!client.ok()) return client.status();
  absl::StatusOr<std::string> key = x509::MakeKey();
  if (!key.ok()) return key.status();
  absl::StatusOr<HeldCertificate> held = RequestAndStore(
      **client, options.node, *key, CertificateFilesIn(options.state_dir), /*store_key=*/true);
  if (!held.ok()) {
    return absl::Status(held.status().code(),
                        absl::StrCat("asking ", options.controller, " for node ", options.node,
                                     "'s certificate with the join token in ",
                                     options.join_token_file, ": ", held.status().message()));
  }
  return held;
}

namespace {

// `held` (the pair in `files`) if its chain verifies against the CA bundle `tls_ca` now;
// FAILED_PRECONDITION saying why otherwise.
absl::StatusOr<HeldCertificate> CheckIssuedUnder(const AgentCertificateFiles& files,
                                                 const std::string& tls_ca,
                                                 const HeldCertificate& held) {
  absl::StatusOr<std::string> chain = ReadFileText(files.cert);
  if (!chain.ok()) return chain.status();
  absl::StatusOr<std::string> ca = ReadFileText(tls_ca);
  if (!ca.ok()) return ca.status();
  absl::Status verified = x509::VerifyClientChain(*chain, *ca, absl::ToUnixSeconds(absl::Now()));
  if (!verified.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(files.cert, ": ", verified.message(), " (--tls-ca ", tls_ca, ")"));
  }
  return held;
}

}  // namespace

absl::StatusOr<BootstrapResult> EnsureAgentCertificate(const BootstrapOptions& options,
                                                       const std::function<bool()>& keep_trying) {
  const AgentCertificateFiles files = CertificateFilesIn(options.state_dir);
  absl::StatusOr<HeldCertificate> usable = LoadUsableCertificate(files, options.node, absl::Now());
  if (usable.ok()) {
    // A certificate from another fleet (benchd's CA made anew, a state directory copied from
    // elsewhere) would fail every handshake: it is used only if it verifies against --tls-ca.
    usable = CheckIssuedUnder(files, options.tls_ca, *usable);
    if (usable.ok()) return BootstrapResult{*usable, false};
  }
  if (!absl::IsNotFound(usable.status())) {
    Log("the certificate in ", options.state_dir, " is not usable (", usable.status().message(),
        "): bootstrapping again with the join token");
  } else {
    Log("no certificate in ", options.state_dir, ": bootstrapping with the join token");
  }
  const absl::Time give_up = absl::Now() + options.retry_for;
  Backoff backoff(options.min_backoff, options.max_backoff);
  for (uint64_t attempt = 1;; ++attempt) {
    absl::StatusOr<HeldCertificate> held = BootstrapOnce(options);
    if (held.ok()) {
      Log("node ", options.node, ": certificate issued, valid until ",
          absl::FormatTime(held->not_after, absl::UTCTimeZone()), "; key and certificate in ",
          options.state_dir);
      return BootstrapResult{*held, true};
    }
    if (!IsTransientError(held.status())) return held.status();
    const absl::Duration delay = backoff.Next();
    if (absl::Now() + delay > give_up || (keep_trying && !keep_trying())) {
      return absl::Status(
          held.status().code(),
          absl::StrCat(held.status().message(), " (gave up after ", attempt, " attempts)"));
    }
    if (ShouldLogAttempt(attempt)) {
      Log("bootstrap attempt ", attempt, " failed: ", held.status().message(), "; retrying in ",
          absl::FormatDuration(delay));
    }
    absl::SleepFor(delay);
  }
}

}  // namespace bench::agent
