#include "server/metrics/metrics_exporter.h"

#include <deque>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"

namespace bench {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

class Families {
 public:
  MetricFamily& Gauge(const std::string& name, const std::string& help) {
    return Add(name, help, MetricType::Gauge);
  }
  MetricFamily& Counter(const std::string& name, const std::string& help) {
    return Add(name, help, MetricType::Counter);
  }
  MetricFamily& Histogram(const std::string& name, const std::string& help) {
    return Add(name, help, MetricType::Histogram);
  }
  static void Set(MetricFamily& family, Labels labels, double value) {
    ClientMetric metric;
    metric.label = std::move(labels);
    if (family.type == MetricType::Counter) {
      metric.counter.value = value;
    } else {
      metric.gauge.value = value;
    }
    family.metric.push_back(std::move(metric));
  }
  std::vector<MetricFamily> Take() {
    return {std::make_move_iterator(families_.begin()), std::make_move_iterator(families_.end())};
  }

 private:
  MetricFamily& Add(const std::string& name, const std::string& help, MetricType type) {
    families_.push_back(MetricFamily{name, help, type, {}});
    return families_.back();
  }
  std::deque<MetricFamily> families_;  // stable references while families are filled
};

void AddFleet(const FleetCounts& fleet, Families& out) {
  MetricFamily& jobs = out.Gauge("bench_jobs", "Jobs known to benchd, by state.");
  for (const auto& [state, count] :
       std::vector<std::pair<const char*, int>>{{"queued", fleet.queued},
                                                {"running", fleet.running},
                                                {"succeeded", fleet.succeeded},
                                                {"failed", fleet.failed},
                                                {"cancelled", fleet.cancelled}}) {
    Families::Set(jobs, {{"state", state}}, count);
  }
  Families::Set(out.Gauge("bench_queue_length", "Jobs waiting to be placed."), {},
                fleet.queued);
  Families::Set(out.Gauge("bench_agents_connected", "Agents holding an assignment stream."),
                {}, fleet.agents_connected);
  MetricFamily& devices = out.Gauge("bench_devices", "Devices (GPUs or CPU slots) an agent offers.");
  MetricFamily& busy = out.Gauge("bench_devices_busy", "Devices held by running jobs.");
  for (const FleetCounts::Node& node : fleet.nodes) {
    Families::Set(devices, {{"node", node.name}, {"kind", node.kind}}, node.devices);
    Families::Set(busy, {{"node", node.name}, {"kind", node.kind}}, node.busy);
  }
}

void AddCounters(const LiveMetrics::Counters& counters, Families& out) {
  Families::Set(out.Counter("bench_samples_ingested_total",
                            "Iteration samples newly stored in the database."),
                {}, static_cast<double>(counters.samples_ingested));
  Families::Set(out.Counter("bench_gpu_samples_ingested_total",
                            "GPU (NVML) samples newly stored in the database."),
                {}, static_cast<double>(counters.gpu_samples_ingested));
  Families::Set(out.Counter("bench_sample_duplicates_total",
                            "Samples received again and ignored (at-least-once delivery)."),
                {}, static_cast<double>(counters.duplicates));
  MetricFamily& errors = out.Counter(
      "bench_ingest_errors_total", "Samples rejected or not stored, by reason.");
  for (const auto& [reason, count] : counters.ingest_errors) {
    Families::Set(errors, {{"reason", reason}}, static_cast<double>(count));
  }
  MetricFamily& reports = out.Counter(
      "bench_rank_reports_rejected_total",
      "Rank summaries refused as implausible for their job (the rank still ends), by reason.");
  for (const auto& [reason, count] : counters.rank_reports_rejected) {
    Families::Set(reports, {{"reason", reason}}, static_cast<double>(count));
  }
}

// Every method with its OK count (0 before its first call), and each other code once it
// has been answered: at most 7 × 17 series.
void AddAgentRpcs(const AgentRpcCounters::Figures& figures, Families& out) {
  MetricFamily& calls = out.Counter("bench_agent_rpcs_total",
                                    "Agent RPCs benchd answered, by method and status code.");
  for (int m = 0; m < AgentRpcCounters::kMethods; ++m) {
    const std::string method(
        AgentRpcCounters::MethodName(static_cast<AgentRpcCounters::Method>(m)));
    for (int code = 0; code < AgentRpcCounters::kCodes; ++code) {
      const int64_t count = figures.calls[m][code];
      if (code != 0 && count == 0) continue;
      Families::Set(calls,
                    {{"method", method}, {"code", std::string(AgentRpcCounters::CodeName(code))}},
                    static_cast<double>(count));
    }
  }
  MetricFamily& batches = out.Histogram(
      "bench_upload_batch_samples",
      "Samples per upload batch, by kind (iteration samples, GPU readings); a kind is observed "
      "only in the batches that carry it.");
  for (const auto& [kind, histogram] : {std::pair{"iteration", &figures.iteration_batches},
                                        std::pair{"gpu", &figures.gpu_batches}}) {
    ClientMetric metric;
    metric.label = {{"kind", kind}};
    uint64_t cumulative = 0;
    for (size_t b = 0; b < AgentRpcCounters::kBatchBounds.size(); ++b) {
      cumulative += static_cast<uint64_t>(histogram->buckets[b]);
      metric.histogram.bucket.push_back(
          {cumulative, static_cast<double>(AgentRpcCounters::kBatchBounds[b])});
    }
    metric.histogram.sample_count = static_cast<uint64_t>(histogram->count);
    metric.histogram.sample_sum = static_cast<double>(histogram->sum);
    batches.metric.push_back(std::move(metric));
  }
}

void AddJobs(const LiveMetrics::Snapshot& live, Families& out) {
  MetricFamily& job_rate = out.Gauge(
      "bench_job_images_per_second",
      "Live images per second of a running job (each rank's last iterations, summed).");
  MetricFamily& measured_rate = out.Gauge(
      "bench_job_measured_images_per_second",
      "Measured throughput of a finished job: images after warm-up / the window's wall time.");
  MetricFamily& rank_rate = out.Gauge("bench_job_rank_images_per_second",
                                      "Live images per second of one rank of a running job.");
  MetricFamily& energy = out.Gauge("bench_job_energy_per_image_joules",
                                   "Energy per image of a finished job over its measured window.");
  MetricFamily& power = out.Gauge("bench_gpu_power_watts",
                                  "GPU power draw (instantaneous where NVML offers it).");
  MetricFamily& sm_clock = out.Gauge("bench_gpu_sm_clock_hertz", "GPU SM clock.");
  MetricFamily& memory_clock = out.Gauge("bench_gpu_memory_clock_hertz", "GPU memory clock.");
  MetricFamily& temperature = out.Gauge("bench_gpu_temperature_celsius", "GPU temperature.");
  MetricFamily& utilization =
      out.Gauge("bench_gpu_utilization_ratio", "GPU busy fraction over NVML's sample period.");
  MetricFamily& memory_used = out.Gauge("bench_gpu_memory_used_bytes", "GPU memory in use.");
  MetricFamily& throttle = out.Gauge("bench_gpu_throttle_reasons",
                                     "NVML clock throttle reasons (bit mask).");
  MetricFamily& gpu_energy = out.Counter("bench_gpu_energy_joules_total",
                                         "NVML total energy counter of the GPU.");
  for (const auto& [job_id, job] : live.jobs) {
    const std::string precision = job.labels.precision;
    // A simulated job's every series says so (issue 26): simulated="true"; a real job's
    // series are as they were, without the label.
    auto set = [&job](MetricFamily& family, Labels labels, double value) {
      if (job.labels.simulated) labels.push_back({"simulated", "true"});
      Families::Set(family, std::move(labels), value);
    };
    if (job.images_per_second) {
      set(job.ended ? measured_rate : job_rate,
          {{"bench_job", job_id},
           {"model", job.labels.model},
           {"precision", precision},
           {"batch_size", absl::StrCat(job.labels.batch_size)},
           {"devices", absl::StrCat(job.labels.devices)}},
          *job.images_per_second);
    }
    if (job.energy_per_image_j) {
      set(energy, {{"bench_job", job_id}, {"model", job.labels.model}, {"precision", precision}},
          *job.energy_per_image_j);
    }
    for (const auto& [rank, state] : job.ranks) {
      if (state.images_per_second) {
        set(rank_rate,
            {{"bench_job", job_id},
             {"rank", absl::StrCat(rank)},
             {"node", state.node},
             {"model", job.labels.model},
             {"precision", precision}},
            *state.images_per_second);
      }
      if (!state.gpu) continue;
      const GpuSample& g = *state.gpu;
      Labels labels = {{"node", state.node},           {"gpu", absl::StrCat(g.gpu_index)},
                       {"uuid", g.gpu_uuid},           {"bench_job", job_id},
                       {"rank", absl::StrCat(rank)},   {"model", job.labels.model},
                       {"precision", precision}};
      std::optional<double> watts = g.power_w ? g.power_w : g.power_average_w;
      if (watts) set(power, labels, *watts);
      if (g.sm_clock_mhz) set(sm_clock, labels, *g.sm_clock_mhz * 1e6);
      if (g.memory_clock_mhz) set(memory_clock, labels, *g.memory_clock_mhz * 1e6);
      if (g.temperature_c) set(temperature, labels, *g.temperature_c);
      if (g.gpu_utilization_pct) set(utilization, labels, *g.gpu_utilization_pct / 100);
      if (g.memory_used_bytes) {
        set(memory_used, labels, static_cast<double>(*g.memory_used_bytes));
      }
      if (g.throttle_reasons) {
        set(throttle, labels, static_cast<double>(*g.throttle_reasons));
      }
      if (g.energy_j) set(gpu_energy, labels, *g.energy_j);
    }
  }
}

}  // namespace

std::string RenderMetrics(const FleetCounts& fleet, const LiveMetrics::Snapshot& live) {
  Families families;
  AddFleet(fleet, families);
  AddCounters(live.counters, families);
  AddAgentRpcs(live.agent_rpcs, families);
  AddJobs(live, families);
  return prometheus::TextSerializer().Serialize(families.Take());
}

}  // namespace bench
