// StatusReporter: the ReportSink of the agent, i.e. rank state reports on their way to
// the controller through one Outbox (outbox.h) and the ReportStatus RPC, one report per
// call, in order, retried until they arrive (a report rejected with a non-transient
// error max_permanent_failures times in a row is dropped with a warning).
//
// The queue is in memory (reports are few: a handful per job). With a Spool (spool.h),
// every report is also appended to it and fdatasync'ed before Report() returns, and
// acknowledged in it once delivered (or given up on); reports a previous agent left
// unacknowledged there are queued first, in their order (replay). A report that cannot
// be spooled (the spool full or unwritable) is logged and kept in memory only
// (MemoryOutboxStore with a mirror, outbox_store.h).
//
// Holding: while paused (Pause(), or from construction with options.start_paused)
// nothing is sent; reports keep queueing (and spooling). DiscardPending() forgets every
// queued report (acknowledging the whole spool) without sending it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "benchfleet/v1/agent.pb.h"
#include "worker/agent/outbox.h"
#include "worker/agent/outbox_store.h"
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
  uint64_t replayed() const;

 private:
  class ReportCall;

  std::unique_ptr<MemoryOutboxStore> store_;
  std::unique_ptr<ReportCall> call_;
  std::unique_ptr<Outbox> outbox_;  // last: its thread uses the others
};

}  // namespace bench::agent
