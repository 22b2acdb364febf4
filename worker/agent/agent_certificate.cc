#include "worker/agent/agent_certificate.h"

#include <sys/stat.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/x509.h"
#include "worker/agent/file_io.h"

namespace bench::agent {

AgentCertificateFiles CertificateFilesIn(const std::string& state_dir) {
  return {state_dir + "/agent.key", state_dir + "/agent.pem"};
}

std::string AgentUri(const std::string& node) {
  return absl::StrCat("spiffe://benchfleet/agent/", node);
}

absl::Duration UsableLifetime(const HeldCertificate& held) {
  return std::max(absl::ZeroDuration(), held.not_after - std::max(held.not_before, held.obtained));
}

absl::Time RenewalTime(const HeldCertificate& held) {
  return held.not_after - UsableLifetime(held) / 3;
}

unsigned RefreshSecondsFor(const HeldCertificate& held) {
  const int64_t twelfth = absl::ToInt64Seconds(UsableLifetime(held)) / 12;
  return static_cast<unsigned>(std::clamp<int64_t>(twelfth, 1, 60));
}

absl::StatusOr<HeldCertificate> CheckIssuedChain(const std::string& chain_pem,
                                                 const std::string& key_pem,
                                                 const std::string& node) {
  absl::StatusOr<std::vector<x509::CertificateInfo>> chain = x509::ReadCertificates(chain_pem);
  if (!chain.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the certificate does not parse: ", chain.status().message()));
  }
  const x509::CertificateInfo& leaf = chain->front();
  const std::string uri = AgentUri(node);
  if (std::find(leaf.uris.begin(), leaf.uris.end(), uri) == leaf.uris.end()) {
    return absl::InvalidArgumentError(absl::StrCat("the certificate is not node ", node,
                                                   "'s: it names [", absl::StrJoin(leaf.uris, ", "),
                                                   "], not ", uri));
  }
  absl::StatusOr<bool> matches = x509::KeyMatchesCertificate(key_pem, chain_pem);
  if (!matches.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the key does not parse: ", matches.status().message()));
  }
  if (!*matches) {
    return absl::InvalidArgumentError("the certificate is not the key's (another public key)");
  }
  return HeldCertificate{absl::FromUnixSeconds(leaf.not_before_unix_seconds),
                         absl::FromUnixSeconds(leaf.not_after_unix_seconds)};
}

absl::StatusOr<HeldCertificate> LoadUsableCertificate(const AgentCertificateFiles& files,
                                                      const std::string& node, absl::Time now) {
  absl::StatusOr<std::string> key = ReadFileText(files.key);
  if (!key.ok()) return key.status();
  absl::StatusOr<std::string> cert = ReadFileText(files.cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<HeldCertificate> held = CheckIssuedChain(*cert, *key, node);
  if (!held.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(files.cert, " cannot be used: ", held.status().message()));
  }
  if (now >= held->not_after) {
    return absl::FailedPreconditionError(absl::StrCat(
        files.cert, " expired at ", absl::FormatTime(held->not_after, absl::UTCTimeZone())));
  }
  struct stat st;
  if (stat(files.cert.c_str(), &st) == 0) {
    held->obtained = absl::TimeFromTimespec(st.st_mtim);
  }
  if (now < held->not_before) {
    return absl::FailedPreconditionError(
        absl::StrCat(files.cert, " is not valid before ",
                     absl::FormatTime(held->not_before, absl::UTCTimeZone())));
  }
  return held;
}

}  // namespace bench::agent
