#include "worker/agent/sinks.h"

#include <utility>

namespace bench::agent {

uint64_t FencedSinks::Add(benchfleet::v1::IterationSample sample) {
  absl::ReaderMutexLock lock(&mu_);
  return fenced_ ? 0 : samples_->Add(std::move(sample));
}

uint64_t FencedSinks::AddGpuSample(benchfleet::v1::GpuSample sample) {
  absl::ReaderMutexLock lock(&mu_);
  return fenced_ ? 0 : samples_->AddGpuSample(std::move(sample));
}

bool FencedSinks::WaitDelivered(uint64_t ticket) {
  return ticket == 0 || samples_->WaitDelivered(ticket);
}

uint64_t FencedSinks::Report(benchfleet::v1::ReportStatusRequest report) {
  absl::ReaderMutexLock lock(&mu_);
  return fenced_ ? 0 : reports_->Report(std::move(report));
}

void FencedSinks::Fence() {
  absl::WriterMutexLock lock(&mu_);
  fenced_ = true;
}

}  // namespace bench::agent
