#include "worker/agent/cert_renewer.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "worker/agent/file_io.h"
#include "worker/agent/retry.h"

namespace bench::agent {

CertificateRenewer::CertificateRenewer(CertificateRenewerOptions options, CertificateRpc* own,
                                       HeldCertificate current)
    : options_(std::move(options)), own_(own), current_(current) {}

CertificateRenewer::~CertificateRenewer() { Stop(); }

void CertificateRenewer::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void CertificateRenewer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

HeldCertificate CertificateRenewer::current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

int64_t CertificateRenewer::renewals() const {
  absl::MutexLock lock(&mu_);
  return renewals_;
}

int64_t CertificateRenewer::failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

bool CertificateRenewer::SleepUntil(absl::Time until) {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    if (cv_.WaitWithDeadline(&mu_, until)) break;
  }
  return !stopping_;
}

absl::StatusOr<HeldCertificate> CertificateRenewer::Attempt(absl::Time now,
                                                            const HeldCertificate& current) {
  const BootstrapOptions& bootstrap = options_.bootstrap;
  if (now >= current.not_after) return BootstrapOnce(bootstrap);
  const AgentCertificateFiles files = CertificateFilesIn(bootstrap.state_dir);
  absl::StatusOr<std::string> key = ReadFileText(files.key);
  if (!key.ok()) return key.status();
  // The same key: only agent.pem changes, so the file watcher never sees a mismatched pair.
  return RequestAndStore(*own_, bootstrap.node, *key, files, /*store_key=*/false);
}

void CertificateRenewer::Loop() {
  HeldCertificate current = this->current();
  absl::Time next = RenewalTime(current);
  Backoff backoff(options_.min_backoff, options_.max_backoff);
  uint64_t failed = 0;
  while (SleepUntil(next)) {
    const absl::Time now = absl::Now();
    absl::StatusOr<HeldCertificate> renewed = Attempt(now, current);
    if (renewed.ok()) {
      Log(now >= current.not_after ? "certificate bootstrapped again (the old one expired)"
                                   : "certificate renewed",
          ": valid until ", absl::FormatTime(renewed->not_after, absl::UTCTimeZone()));
      current = *renewed;
      {
        absl::MutexLock lock(&mu_);
        current_ = current;
        ++renewals_;
      }
      backoff.Reset();
      failed = 0;
      next = RenewalTime(current);
      continue;
    }
    {
      absl::MutexLock lock(&mu_);
      ++failures_;
    }
    const absl::Duration cap = std::max(options_.min_backoff, UsableLifetime(current) / 20);
    const absl::Duration delay = std::min(backoff.Next(), cap);
    if (ShouldLogAttempt(++failed)) {
      Log("certificate renewal attempt ", failed, " failed: ", renewed.status().ToString(),
          now >= current.not_after
              ? "; the certificate has expired"
              : absl::StrCat("; the current one is valid until ",
                             absl::FormatTime(current.not_after, absl::UTCTimeZone())),
          "; retrying in ", absl::FormatDuration(delay));
    }
    next = now + delay;
  }
}

}  // namespace bench::agent
