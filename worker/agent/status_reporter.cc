#include "worker/agent/status_reporter.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace bench::agent {

// One ReportStatusRequest per call.
class StatusReporter::ReportCall final : public OutboxRpc {
 public:
  explicit ReportCall(StatusReportRpc* rpc) : rpc_(rpc) {}

  void StartBatch() override { request_.Clear(); }
  bool AddToBatch(const OutboxRecord& record) override {
    return record.kind == SpoolKind::kReport && request_.ParseFromString(record.payload);
  }
  absl::Status SendBatch(const std::string& agent) override {
    request_.set_agent(agent);
    return rpc_->ReportStatus(request_);
  }
  std::string DescribeBatch() const override {
    return absl::StrCat("a status report for job ", request_.job_id());
  }

 private:
  StatusReportRpc* const rpc_;
  benchfleet::v1::ReportStatusRequest request_;
};

StatusReporter::StatusReporter(StatusReportRpc* rpc, StatusReporterOptions options, Spool* spool)
    : store_(std::make_unique<MemoryOutboxStore>(/*max_records=*/0, spool)),
      call_(std::make_unique<ReportCall>(rpc)) {
  OutboxOptions outbox;
  outbox.noun = "status reports";
  outbox.max_batch = 1;
  outbox.linger = absl::ZeroDuration();
  outbox.initial_backoff = options.initial_backoff;
  outbox.max_backoff = options.max_backoff;
  outbox.max_permanent_failures = options.max_permanent_failures;
  outbox.agent = std::move(options.agent);
  outbox.start_paused = options.start_paused;
  outbox_ = std::make_unique<Outbox>(store_.get(), call_.get(), std::move(outbox));
}

StatusReporter::~StatusReporter() { Shutdown(); }

void StatusReporter::SetAgent(std::string agent) { outbox_->SetAgent(std::move(agent)); }

uint64_t StatusReporter::Report(benchfleet::v1::ReportStatusRequest report) {
  return outbox_->Add(OutboxRecord{SpoolKind::kReport, report.SerializeAsString()});
}

void StatusReporter::Pause() { outbox_->Pause(); }

void StatusReporter::Resume() { outbox_->Resume(); }

uint64_t StatusReporter::DiscardPending() { return outbox_->DiscardPending(); }

bool StatusReporter::IsDelivered(uint64_t ticket) const { return outbox_->IsDelivered(ticket); }

bool StatusReporter::Drain(absl::Time deadline) { return outbox_->Drain(deadline); }

void StatusReporter::Shutdown() { outbox_->Shutdown(); }

uint64_t StatusReporter::replayed() const { return outbox_->stats().replayed; }

}  // namespace bench::agent
