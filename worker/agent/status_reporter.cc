#include "worker/agent/status_reporter.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "worker/agent/agent_log.h"
#include "worker/agent/retry.h"

namespace bench::agent {

StatusReporter::StatusReporter(StatusReportRpc* rpc, StatusReporterOptions options,
                               Spool* spool)
    : rpc_(rpc), options_(std::move(options)), spool_(spool) {
  agent_ = options_.agent;
  paused_ = options_.start_paused;
  if (spool_ != nullptr) {
    SpoolPosition from = spool_->acked();
    while (true) {
      std::vector<SpoolRecord> records;
      SpoolPosition next = spool_->Read(from, 1000, &records);
      if (records.empty()) break;
      for (SpoolRecord& record : records) {
        Entry entry;
        if (record.kind != SpoolKind::kReport ||
            !entry.request.ParseFromString(record.payload)) {
          AgentLog(absl::StrCat("spool ", spool_->dir(), ": a record before offset ",
                                record.end.offset, " is not a status report; skipped"));
          continue;
        }
        entry.ticket = next_ticket_++;
        entry.spooled = true;
        entry.end = record.end;
        queue_.push_back(std::move(entry));
      }
      from = next;
    }
    replayed_ = queue_.size();
    if (replayed_ > 0) {
      AgentLog(absl::StrCat("replaying ", replayed_, " undelivered status reports from the spool ",
                            spool_->dir()));
    }
  }
  thread_ = std::thread([this] { Run(); });
}

StatusReporter::~StatusReporter() { Shutdown(); }

void StatusReporter::SetAgent(std::string agent) {
  absl::MutexLock lock(&mu_);
  agent_ = std::move(agent);
}

uint64_t StatusReporter::Report(benchfleet::v1::ReportStatusRequest report) {
  absl::MutexLock lock(&mu_);
  Entry entry;
  entry.ticket = next_ticket_++;
  if (spool_ != nullptr) {
    absl::StatusOr<SpoolPosition> end =
        spool_->Append(SpoolKind::kReport, report.SerializeAsString());
    absl::Status synced = end.ok() ? spool_->Sync() : end.status();
    if (end.ok()) {
      entry.spooled = true;
      entry.end = *end;
    }
    if (!synced.ok()) {
      AgentLog(absl::StrCat("warning: status report for job ", report.job_id(),
                            end.ok() ? " spooled but not synced: " : " kept in memory only: ",
                            synced.message()));
    }
  }
  entry.request = std::move(report);
  uint64_t ticket = entry.ticket;
  queue_.push_back(std::move(entry));
  work_cv_.Signal();
  return ticket;
}

void StatusReporter::Pause() {
  absl::MutexLock lock(&mu_);
  paused_ = true;
}

void StatusReporter::Resume() {
  absl::MutexLock lock(&mu_);
  paused_ = false;
  work_cv_.SignalAll();
}

uint64_t StatusReporter::DiscardPending() {
  absl::MutexLock lock(&mu_);
  ++discards_;
  uint64_t discarded = queue_.size();
  if (spool_ != nullptr) {
    absl::Status acked = spool_->Ack(spool_->end());
    if (!acked.ok()) AgentLog(absl::StrCat("warning: ", acked.message()));
  }
  queue_.clear();
  delivered_cv_.SignalAll();
  return discarded;
}

bool StatusReporter::IsDelivered(uint64_t ticket) const {
  absl::MutexLock lock(&mu_);
  return queue_.empty() ? ticket < next_ticket_ : ticket < queue_.front().ticket;
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
    if (queue_.empty() || paused_) {
      work_cv_.Wait(&mu_);
      continue;
    }
    benchfleet::v1::ReportStatusRequest request = queue_.front().request;
    request.set_agent(agent_);
    const uint64_t discards = discards_;
    mu_.Unlock();
    absl::Status status = rpc_->ReportStatus(request);
    mu_.Lock();
    if (discards != discards_) continue;  // discarded while in flight
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
      if (queue_.front().spooled) {
        absl::Status acked = spool_->Ack(queue_.front().end);
        if (!acked.ok()) AgentLog(absl::StrCat("warning: ", acked.message()));
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
