#include "server/metrics/metrics_exporter.h"

#include <array>
#include <deque>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/metrics/text_exposition.h"

namespace bench {
namespace {

using Family = ExpositionFamily;

class Families {
 public:
  Family& Gauge(std::string_view name, std::string_view help) {
    return families_.emplace_back(name, help, Family::Type::kGauge);
  }
  Family& Counter(std::string_view name, std::string_view help) {
    return families_.emplace_back(name, help, Family::Type::kCounter);
  }
  Family& Histogram(std::string_view name, std::string_view help) {
    return families_.emplace_back(name, help, Family::Type::kHistogram);
  }
  static void Set(Family& family, std::initializer_list<ExpositionLabel> labels, double value) {
    family.Add(labels, value);
  }
  std::string Text() const {
    size_t size = 0;
    for (const Family& family : families_) size += family.size();
    std::string text;
    text.reserve(size);
    for (const Family& family : families_) family.AppendTo(text);
    return text;
  }

 private:
  std::deque<Family> families_;  // stable references while families are filled
};

void AddFleet(const FleetCounts& fleet, Families& out) {
  Family& jobs = out.Gauge("bench_jobs", "Jobs known to benchd, by state.");
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
  Family& devices = out.Gauge("bench_devices", "Devices (GPUs or CPU slots) an agent offers.");
  Family& busy = out.Gauge("bench_devices_busy", "Devices held by running jobs.");
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
  Family& errors =
      out.Counter("bench_ingest_errors_total", "Samples rejected or not stored, by reason.");
  for (const auto& [reason, count] : counters.ingest_errors) {
    Families::Set(errors, {{"reason", reason}}, static_cast<double>(count));
  }
  Family& reports = out.Counter(
      "bench_rank_reports_rejected_total",
      "Rank summaries refused as implausible for their job (the rank still ends), by reason.");
  for (const auto& [reason, count] : counters.rank_reports_rejected) {
    Families::Set(reports, {{"reason", reason}}, static_cast<double>(count));
  }
}

// Every method with its OK count (0 before its first call), and each other code once it
// has been answered: at most 7 × 17 series.
void AddAgentRpcs(const AgentRpcCounters::Figures& figures, Families& out) {
  Family& calls = out.Counter("bench_agent_rpcs_total",
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
  Family& batches = out.Histogram(
      "bench_upload_batch_samples",
      "Samples per upload batch, by kind (iteration samples, GPU readings); a kind is observed "
      "only in the batches that carry it.");
  for (const auto& [kind, histogram] : {std::pair{"iteration", &figures.iteration_batches},
                                        std::pair{"gpu", &figures.gpu_batches}}) {
    std::array<std::pair<double, uint64_t>, AgentRpcCounters::kBatchBounds.size()> buckets;
    uint64_t cumulative = 0;
    for (size_t b = 0; b < buckets.size(); ++b) {
      cumulative += static_cast<uint64_t>(histogram->buckets[b]);
      buckets[b] = {static_cast<double>(AgentRpcCounters::kBatchBounds[b]), cumulative};
    }
    batches.AddHistogram(LabelText({{"kind", kind}}), static_cast<uint64_t>(histogram->count),
                         static_cast<double>(histogram->sum), buckets.data(), buckets.size());
  }
}

void AddJobs(const LiveMetrics::Snapshot& live, Families& out) {
  Family& job_rate =
      out.Gauge("bench_job_images_per_second",
                "Live images per second of a running job (each rank's last iterations, summed).");
  Family& measured_rate = out.Gauge(
      "bench_job_measured_images_per_second",
      "Measured throughput of a finished job: images after warm-up / the window's wall time.");
  Family& rank_rate = out.Gauge("bench_job_rank_images_per_second",
                                "Live images per second of one rank of a running job.");
  Family& energy = out.Gauge("bench_job_energy_per_image_joules",
                             "Energy per image of a finished job over its measured window.");
  Family& power =
      out.Gauge("bench_gpu_power_watts", "GPU power draw (instantaneous where NVML offers it).");
  Family& sm_clock = out.Gauge("bench_gpu_sm_clock_hertz", "GPU SM clock.");
  Family& memory_clock = out.Gauge("bench_gpu_memory_clock_hertz", "GPU memory clock.");
  Family& temperature = out.Gauge("bench_gpu_temperature_celsius", "GPU temperature.");
  Family& utilization =
      out.Gauge("bench_gpu_utilization_ratio", "GPU busy fraction over NVML's sample period.");
  Family& memory_used = out.Gauge("bench_gpu_memory_used_bytes", "GPU memory in use.");
  Family& throttle =
      out.Gauge("bench_gpu_throttle_reasons", "NVML clock throttle reasons (bit mask).");
  Family& gpu_energy =
      out.Counter("bench_gpu_energy_joules_total", "NVML total energy counter of the GPU.");
  for (const auto& [job_id, job] : live.jobs) {
    const std::string& precision = job.labels.precision;
    // A simulated job's every series says so (issue 26): simulated="true"; a real job's
    // series are as they were, without the label.
    auto labels = [&job](std::initializer_list<ExpositionLabel> pairs) {
      std::string text = LabelText(pairs);
      if (job.labels.simulated) AppendLabel(text, "simulated", "true");
      return text;
    };
    if (job.images_per_second) {
      (job.ended ? measured_rate : job_rate)
          .Add(labels({{"bench_job", job_id},
                       {"model", job.labels.model},
                       {"precision", precision},
                       {"batch_size", absl::StrCat(job.labels.batch_size)},
                       {"devices", absl::StrCat(job.labels.devices)}}),
               *job.images_per_second);
    }
    if (job.energy_per_image_j) {
      energy.Add(
          labels({{"bench_job", job_id}, {"model", job.labels.model}, {"precision", precision}}),
          *job.energy_per_image_j);
    }
    for (const auto& [rank, state] : job.ranks) {
      const std::string rank_text = absl::StrCat(rank);
      if (state.images_per_second) {
        rank_rate.Add(labels({{"bench_job", job_id},
                              {"rank", rank_text},
                              {"node", state.node},
                              {"model", job.labels.model},
                              {"precision", precision}}),
                      *state.images_per_second);
      }
      if (!state.gpu) continue;
      const GpuSample& g = *state.gpu;
      // The GPU's labels, written once for its every family.
      const std::string gpu = labels({{"node", state.node},
                                      {"gpu", absl::StrCat(g.gpu_index)},
                                      {"uuid", g.gpu_uuid},
                                      {"bench_job", job_id},
                                      {"rank", rank_text},
                                      {"model", job.labels.model},
                                      {"precision", precision}});
      std::optional<double> watts = g.power_w ? g.power_w : g.power_average_w;
      if (watts) power.Add(gpu, *watts);
      if (g.sm_clock_mhz) sm_clock.Add(gpu, *g.sm_clock_mhz * 1e6);
      if (g.memory_clock_mhz) memory_clock.Add(gpu, *g.memory_clock_mhz * 1e6);
      if (g.temperature_c) temperature.Add(gpu, *g.temperature_c);
      if (g.gpu_utilization_pct) utilization.Add(gpu, *g.gpu_utilization_pct / 100);
      if (g.memory_used_bytes) memory_used.Add(gpu, static_cast<double>(*g.memory_used_bytes));
      if (g.throttle_reasons) throttle.Add(gpu, static_cast<double>(*g.throttle_reasons));
      if (g.energy_j) gpu_energy.Add(gpu, *g.energy_j);
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
  return families.Text();
}

}  // namespace bench
