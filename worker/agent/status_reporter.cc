#include "worker/agent/status_reporter.h"

#include "absl/strings/str_cat.h"
#include "worker/agent/agent_log.h"
#include "worker/agent/retry.h"

namespace bench::agent {

StatusReporter::StatusReporter(StatusReportRpc* rpc, StatusReporterOptions options)
    : rpc_(rpc), options_(std::move(options)) {
  thread_ = std::thread([this] { Run(); });
}

StatusReporter::~StatusReporter() { Shutdown(); }

void StatusReporter::SetAgent(std::string agent) {
  absl::MutexLock lock(&mu_);
  agent_ = std::move(agent);
}

uint64_t StatusReporter::Report(benchfleet::v1::ReportStatusRequest report) {
  absl::MutexLock lock(&mu_);
  uint64_t ticket = next_ticket_++;
  queue_.emplace_back(ticket, std::move(report));
  work_cv_.Signal();
  return ticket;
}

bool StatusReporter::IsDelivered(uint64_t ticket) const {
  absl::MutexLock lock(&mu_);
  return queue_.empty() ? ticket < next_ticket_ : ticket < queue_.front().first;
}

bool StatusReporter::Drain(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  while (!queue_.empty() && !stopping_) {
    if (delivered_cv_.WaitWithDeadline(&mu_, deadline)) break;
  }
  return queue_.empty();
}

void StatusReporter::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    work_cv_.SignalAll();
    delivered_cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

void StatusReporter::Run() {
  Backoff backoff(options_.initial_backoff, options_.max_backoff);
  uint64_t consecutive_failures = 0;
  int permanent_failures = 0;
  mu_.Lock();
  while (!stopping_) {
    if (queue_.empty()) {
      work_cv_.Wait(&mu_);
      continue;
    }
    benchfleet::v1::ReportStatusRequest request = queue_.front().second;
    request.set_agent(agent_);
    mu_.Unlock();
    absl::Status status = rpc_->ReportStatus(request);
    mu_.Lock();
    bool done = status.ok();
    if (!status.ok()) {
      ++consecutive_failures;
      if (!IsTransientError(status) &&
          ++permanent_failures >= options_.max_permanent_failures) {
        AgentLog(absl::StrCat("warning: giving up on a status report for job ",
                              request.job_id(), ": ", status.ToString()));
        done = true;
      }
    }
    if (done) {
      if (status.ok() && consecutive_failures > 0) {
        AgentLog(absl::StrCat("status report delivered after ", consecutive_failures,
                              " failed attempts"));
      }
      queue_.pop_front();
      delivered_cv_.SignalAll();
      consecutive_failures = 0;
      permanent_failures = 0;
      backoff.Reset();
      continue;
    }
    absl::Duration delay = backoff.Next();
    if (ShouldLogAttempt(consecutive_failures)) {
      AgentLog(absl::StrCat("status report for job ", request.job_id(), " failed (attempt ",
                            consecutive_failures, "): ", status.ToString(),
                            "; retrying in ", absl::FormatDuration(delay)));
    }
    absl::Time deadline = absl::Now() + delay;
    while (!stopping_) {
      if (work_cv_.WaitWithDeadline(&mu_, deadline)) break;
    }
  }
  mu_.Unlock();
}

}  // namespace bench::agent
