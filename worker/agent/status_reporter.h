// Delivers ReportStatus requests to the controller in order, retrying until they arrive.
//
// A background thread sends queued reports one at a time. Transient failures (the
// controller away or restarting) are retried with back-off for as long as it takes; a
// report rejected with a non-transient error max_permanent_failures times in a row is
// dropped with a warning so that it cannot block the reports behind it.
//
// With a Spool (spool.h), every report is also appended to it and fdatasync'ed before
// Report() returns, and acknowledged in it once delivered (or given up on); reports a
// previous agent left unacknowledged there are queued first, in their order (replay).
// A report that cannot be spooled (the spool full or unwritable) is logged and kept in
// memory only. Reports are few (a handful per job), so the queue stays in memory too.
//
// Holding: while paused (Pause(), or from construction with options.start_paused)
// nothing is sent; reports keep queueing (and spooling). DiscardPending() forgets every
// queued report (acknowledging the whole spool) without sending it.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "benchfleet/v1/agent.pb.h"
#include "worker/agent/sinks.h"
#include "worker/agent/spool.h"

namespace bench::agent {

// The ReportStatus RPC (ControllerClient in production, a fake in tests).
class StatusReportRpc {
 public:
  virtual ~StatusReportRpc() = default;
  virtual absl::Status ReportStatus(const benchfleet::v1::ReportStatusRequest& request) = 0;
};

struct StatusReporterOptions {
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(2);
  int max_permanent_failures = 5;
  // The name put in each request's `agent` field until SetAgent.
  std::string agent;
  // Start held: nothing is sent until Resume().
  bool start_paused = false;
};

// Thread-safe. `rpc` and `spool` (null: none) are not owned and must outlive the
// reporter; nothing else may read or acknowledge that spool.
class StatusReporter : public ReportSink {
 public:
  explicit StatusReporter(StatusReportRpc* rpc, StatusReporterOptions options = {},
                          Spool* spool = nullptr);
  ~StatusReporter() override;  // Shutdown()
  StatusReporter(const StatusReporter&) = delete;
  StatusReporter& operator=(const StatusReporter&) = delete;

  // The name put in each request's `agent` field (at send time).
  void SetAgent(std::string agent);

  uint64_t Report(benchfleet::v1::ReportStatusRequest report) override;
  // Holds sending: no report is sent until Resume() (a call already in flight
  // completes; its outcome is ignored if DiscardPending runs meanwhile). Idempotent.
  void Pause();
  void Resume();
  // Forgets every queued report (with a spool: acknowledges all of it) without sending
  // it; they count as delivered (IsDelivered). Returns how many.
  uint64_t DiscardPending();
  // True once the report with `ticket` was acknowledged or given up on.
  bool IsDelivered(uint64_t ticket) const;
  // Waits until every queued report is delivered (true) or `deadline` passes (false).
  bool Drain(absl::Time deadline);
  // Stops the thread after a call in flight returns; undelivered reports are abandoned
  // (those in the spool are replayed by the next agent).
  void Shutdown();
  // Reports found in the spool at construction.
  uint64_t replayed() const { return replayed_; }

 private:
  struct Entry {
    uint64_t ticket = 0;
    benchfleet::v1::ReportStatusRequest request;
    bool spooled = false;
    SpoolPosition end;  // where it ends in the spool, if spooled
  };
  void Run();

  StatusReportRpc* const rpc_;
  const StatusReporterOptions options_;
  Spool* const spool_;
  uint64_t replayed_ = 0;

  mutable absl::Mutex mu_;
  absl::CondVar work_cv_;
  absl::CondVar delivered_cv_;
  std::string agent_ ABSL_GUARDED_BY(mu_);
  std::deque<Entry> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t discards_ ABSL_GUARDED_BY(mu_) = 0;  // increased by DiscardPending
  std::thread thread_;
};

}  // namespace bench::agent
