// The outlets a RankSupervisor and the GpuSampler write to, as interfaces so that tests
// can fake them. SampleUploader implements SampleSink (and so GpuSampleSink);
// StatusReporter implements ReportSink; FencedSinks puts both behind a switch that one
// controller database's supervisors write through.
#pragma once

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "benchfleet/v1/agent.pb.h"
#include "benchfleet/v1/types.pb.h"

namespace bench::agent {

// GPU samples on their way to the controller. Implementations are thread-safe.
class GpuSampleSink {
 public:
  virtual ~GpuSampleSink() = default;
  // Queues `sample`; returns a ticket (see SampleSink).
  virtual uint64_t AddGpuSample(benchfleet::v1::GpuSample sample) = 0;
};

// Iteration samples (and GPU samples) on their way to the controller, in one stream:
// tickets of both kinds come from one counter that increases with every call.
// Implementations are thread-safe.
class SampleSink : public GpuSampleSink {
 public:
  // Queues `sample`; returns a ticket that increases with every call.
  virtual uint64_t Add(benchfleet::v1::IterationSample sample) = 0;
  // Blocks until every sample (of either kind) up to and including `ticket` has been
  // acknowledged by the controller (or given up on, e.g. dropped under memory
  // pressure). Returns false if the sink shut down before that.
  virtual bool WaitDelivered(uint64_t ticket) = 0;
};

// Rank state reports on their way to the controller, delivered in the order given and
// retried until they arrive. Implementations are thread-safe.
class ReportSink {
 public:
  virtual ~ReportSink() = default;
  // Queues `report` (its `agent` field is filled in by the sink); returns a ticket.
  virtual uint64_t Report(benchfleet::v1::ReportStatusRequest report) = 0;
};

// The sinks the RankSupervisors of one controller database write to: the agent's
// uploader and reporter until Fence(), after which samples and reports are dropped
// (they would reach a database they were not meant for). Dropped calls return ticket 0,
// which WaitDelivered treats as delivered. Thread-safe; Fence() returns after any call
// in progress has reached the real sinks, so a discard after it catches that too.
class FencedSinks final : public SampleSink, public ReportSink {
 public:
  FencedSinks(SampleSink* samples, ReportSink* reports)
      : samples_(samples), reports_(reports) {}
  uint64_t Add(benchfleet::v1::IterationSample sample) override;
  uint64_t AddGpuSample(benchfleet::v1::GpuSample sample) override;
  bool WaitDelivered(uint64_t ticket) override;
  uint64_t Report(benchfleet::v1::ReportStatusRequest report) override;
  void Fence();

 private:
  SampleSink* const samples_;
  ReportSink* const reports_;
  absl::Mutex mu_;
  bool fenced_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace bench::agent
