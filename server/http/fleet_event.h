// The live fleet stream's event (GET /api/v1/fleet/events, live_streams.h), rendered once
// per period and shared by every open fleet stream.
//
// RenderFleetEvent writes {"agents":[...],"gpus":[...]} by hand: each agent as the proto3
// JSON mapping of benchfleet.v1.AgentStatus (report::ToJson: proto field names, fields in
// field-number order, every primitive printed, int64 as strings), its maps (versions,
// labels) by key (protobuf's printer wrote them in its hash map's order, and escaped
// '<', '>' and a few invisible characters that common/json_escape.h passes through: the
// same JSON once parsed); `gpus` each running rank's latest reading (LiveMetrics), by job then
// rank, a reading's absent figure absent from its object. RenderFleetEventWithProtobuf is
// the former rendering through protobuf's printer, kept as the reference for the tests
// and tests/bench/fleet_stream_bench.cc.
//
// FleetEventCache: one rendering per tick of `period` (ticks counted from the cache's
// construction), rendered by the first Get of the tick and handed to every caller of the
// same tick as the same buffer; nothing is rendered while nobody calls. An event is at
// most one period old. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/core/views.h"
#include "server/metrics/live_metrics.h"

namespace bench {

// `live` may be null (no readings: "gpus":[]).
std::string RenderFleetEvent(const std::vector<AgentView>& agents, LiveMetrics* live,
                             absl::Time now);
std::string RenderFleetEventWithProtobuf(const std::vector<AgentView>& agents, LiveMetrics* live,
                                         absl::Time now);

class FleetEventCache {
 public:
  using Render = std::function<std::string(absl::Time now)>;
  FleetEventCache(absl::Duration period, Render render, absl::Time start = absl::Now());

  // The event of `now`'s tick: rendered by the first caller of the tick, shared after.
  std::shared_ptr<const std::string> Get(absl::Time now);
  int64_t renders() const;

 private:
  const absl::Duration period_;
  const Render render_;
  const absl::Time start_;
  mutable absl::Mutex mu_;
  int64_t tick_ ABSL_GUARDED_BY(mu_) = -1;
  std::shared_ptr<const std::string> event_ ABSL_GUARDED_BY(mu_);
  int64_t renders_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace bench
