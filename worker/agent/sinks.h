// The outlets a RankSupervisor and the GpuSampler write to, as interfaces so that tests
// can fake them. SampleUploader implements SampleSink (and so GpuSampleSink);
// StatusReporter implements ReportSink.
#pragma once

#include <cstdint>

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

}  // namespace bench::agent
