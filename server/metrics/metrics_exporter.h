// Renders benchd's Prometheus exposition (text format 0.0.4), written straight into one
// string by text_exposition.h, byte for byte as prometheus-cpp's TextSerializer would
// (metrics_exporter_test checks it): about 30 ms of CPU for 8,192 busy GPUs.
//
// Naming follows Prometheus's rules: prefix bench_, base units (watts, hertz, joules,
// celsius, bytes, ratios), _total only on counters, and the job's id in `bench_job`
// (`job` belongs to Prometheus). docs/observability.md lists every series.
#pragma once

#include <string>
#include <vector>

#include "server/core/job.h"
#include "server/metrics/live_metrics.h"

namespace bench {

// The fleet as the JobManager sees it at scrape time.
struct FleetCounts {
  int queued = 0;
  int running = 0;
  int succeeded = 0;
  int failed = 0;
  int cancelled = 0;
  int agents_connected = 0;
  struct Node {
    std::string name;
    std::string kind;  // "cuda" or "cpu"
    int devices = 0;
    int busy = 0;
  };
  std::vector<Node> nodes;
};

std::string RenderMetrics(const FleetCounts& fleet, const LiveMetrics::Snapshot& live);

}  // namespace bench
