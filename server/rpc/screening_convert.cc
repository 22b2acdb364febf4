#include "server/rpc/screening_convert.h"

#include <algorithm>
#include <tuple>

#include "absl/status/statusor.h"
#include "common/spec_names.h"

namespace bench {
namespace v1 = benchfleet::v1;
namespace {

// 0: failed, 1: fault, 2: slow, 3: ok.
int VerdictRank(const diagnosis::GpuVerdict& gpu) {
  if (gpu.failed) return 0;
  if (gpu.fault) return 1;
  if (gpu.slow) return 2;
  return 3;
}

v1::Precision PrecisionOf(Precision precision) {
  absl::StatusOr<v1::Precision> parsed = ParsePrecision(PrecisionText(precision));
  return parsed.ok() ? *parsed : v1::PRECISION_UNSPECIFIED;
}

void ToProto(const diagnosis::ConfigurationSummary& summary, v1::ScreeningConfiguration* proto) {
  const ConfigurationKey& key = summary.configuration;
  proto->set_model(key.model);
  proto->set_devices(key.devices);
  proto->set_precision(PrecisionOf(key.precision));
  proto->set_batch_size(key.batch_size);
  proto->set_device_kind(DeviceKindText(key.device_kind));
  proto->set_gpu_model(key.gpu_model);
  proto->set_image_size(key.image_size);
  proto->set_gpus(summary.gpus);
  proto->set_fleet_median_step_s(summary.fleet_median_step_s);
  proto->set_spread_mad_pct(summary.spread_mad_pct);
  proto->set_threshold_pct(summary.threshold_pct);
  proto->set_flagged(summary.flagged);
}

}  // namespace

const char* ScreenVerdictName(const diagnosis::GpuVerdict& gpu) {
  switch (VerdictRank(gpu)) {
    case 0: return "failed";
    case 1: return "fault";
    case 2: return "slow";
    default: return "ok";
  }
}

void ToProto(const ScreeningView& view, v1::ScreeningReport* proto) {
  const diagnosis::ScreeningReport& report = view.report;
  proto->set_screening_id(view.id);
  proto->set_jobs(view.jobs);
  proto->set_pending(view.pending);
  proto->set_created_unix_ms(absl::ToUnixMillis(view.created));
  proto->set_any_flagged(report.any_flagged);
  for (const diagnosis::ConfigurationSummary& summary : report.configurations) {
    ToProto(summary, proto->add_configurations());
  }
  std::vector<const diagnosis::GpuVerdict*> order;
  for (const diagnosis::GpuVerdict& gpu : report.gpus) order.push_back(&gpu);
  std::stable_sort(order.begin(), order.end(),
                   [](const diagnosis::GpuVerdict* a, const diagnosis::GpuVerdict* b) {
                     return std::make_tuple(VerdictRank(*a) == 3, VerdictRank(*a), a->node,
                                            a->gpu_index, a->job_id) <
                            std::make_tuple(VerdictRank(*b) == 3, VerdictRank(*b), b->node,
                                            b->gpu_index, b->job_id);
                   });
  for (const diagnosis::GpuVerdict* gpu : order) {
    v1::ScreeningGpuVerdict* out = proto->add_gpus();
    out->set_job_id(gpu->job_id);
    out->set_node(gpu->node);
    out->set_gpu_index(gpu->gpu_index);
    out->set_gpu_uuid(gpu->gpu_uuid);
    out->set_gpu_name(gpu->gpu_name);
    out->set_verdict(ScreenVerdictName(*gpu));
    out->set_flagged(gpu->flagged);
    out->set_slow(gpu->slow);
    out->set_fault(gpu->fault);
    out->set_failed(gpu->failed);
    out->set_failure_reason(gpu->failure_reason);
    if (gpu->median_step_s) out->set_median_step_s(*gpu->median_step_s);
    out->set_slow_pct(gpu->slow_pct);
    for (diagnosis::ScreenCause cause : gpu->causes) {
      out->add_causes(diagnosis::ScreenCauseName(cause));
      out->add_cause_descriptions(diagnosis::ScreenCauseDescription(cause));
    }
    out->set_evidence(gpu->evidence);
    for (size_t i = 0; i < report.configurations.size(); ++i) {
      if (report.configurations[i].configuration == gpu->configuration) {
        out->set_configuration(static_cast<int>(i));
      }
    }
  }
  for (const diagnosis::NodeVerdict& node : report.nodes) {
    v1::ScreeningNodeVerdict* out = proto->add_nodes();
    out->set_node(node.node);
    out->set_gpus(node.gpus);
    out->set_ok(node.ok);
    for (int index : node.flagged_gpu_indexes) out->add_flagged_gpu_indexes(index);
  }
}

void ToProto(const ScreeningListEntry& entry, v1::ScreeningSummary* proto) {
  proto->set_screening_id(entry.id);
  proto->set_created_unix_ms(absl::ToUnixMillis(entry.created));
  proto->set_jobs(entry.jobs);
  proto->set_pending(entry.pending);
  proto->set_succeeded(entry.succeeded);
  proto->set_failed(entry.failed);
  for (const std::string& node : entry.nodes) proto->add_nodes(node);
}

}  // namespace bench
