#include "server/rpc/proto_convert.h"

#include "absl/strings/str_cat.h"
#include "common/names.h"
#include "server/results/environment.h"
#include "server/results/results.h"
#include "server/results/telemetry.h"

namespace bench {
namespace v1 = benchfleet::v1;
namespace {

Precision FromProto(v1::Precision precision) {
  switch (precision) {
    case v1::PRECISION_FP32: return Precision::kFp32;
    case v1::PRECISION_AMP: return Precision::kAmp;
    case v1::PRECISION_TF32: return Precision::kTf32;
    case v1::PRECISION_BF16: return Precision::kBf16;
    default: return Precision::kUnspecified;
  }
}

v1::Precision ToProto(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return v1::PRECISION_FP32;
    case Precision::kAmp: return v1::PRECISION_AMP;
    case Precision::kTf32: return v1::PRECISION_TF32;
    case Precision::kBf16: return v1::PRECISION_BF16;
    case Precision::kUnspecified: break;
  }
  return v1::PRECISION_UNSPECIFIED;
}

v1::JobState ToProto(JobState state) {
  switch (state) {
    case JobState::kQueued: return v1::JOB_STATE_QUEUED;
    case JobState::kRunning: return v1::JOB_STATE_RUNNING;
    case JobState::kSucceeded: return v1::JOB_STATE_SUCCEEDED;
    case JobState::kFailed: return v1::JOB_STATE_FAILED;
    case JobState::kCancelled: return v1::JOB_STATE_CANCELLED;
  }
  return v1::JOB_STATE_UNSPECIFIED;
}

void ToProto(const Percentiles& in, v1::Percentiles* out) {
  out->set_count(in.count);
  out->set_p5(in.p5);
  out->set_p50(in.p50);
  out->set_p95(in.p95);
}

void ToProto(const BaselineComparison& in, v1::BaselineComparison* out) {
  switch (in.verdict) {
    case BaselineVerdict::kWithin: out->set_verdict(v1::BASELINE_VERDICT_WITHIN); break;
    case BaselineVerdict::kBelow: out->set_verdict(v1::BASELINE_VERDICT_BELOW); break;
    case BaselineVerdict::kAbove: out->set_verdict(v1::BASELINE_VERDICT_ABOVE); break;
  }
  out->set_baseline_job_id(in.baseline_job_id);
  out->set_baseline_images_per_second(in.baseline_images_per_second);
  out->set_ratio(in.ratio);
}

}  // namespace

JobSpec FromProto(const v1::JobSpec& proto) {
  JobSpec spec;
  spec.model = proto.model();
  spec.devices = proto.devices();
  spec.precision = FromProto(proto.precision());
  spec.batch_size = proto.batch_size();
  spec.iterations = proto.iterations();
  spec.warmup_iterations = proto.warmup_iterations();
  spec.image_size = proto.image_size();
  switch (proto.data()) {
    case v1::DATA_SOURCE_UNSPECIFIED:
    case v1::DATA_SOURCE_SYNTHETIC: spec.data = kDataSynthetic; break;
    case v1::DATA_SOURCE_IMAGEFOLDER: spec.data = kDataImageFolder; break;
    case v1::DATA_SOURCE_COCO: spec.data = kDataCoco; break;
    default:  // a newer client's source: validation refuses it by its number
      spec.data = absl::StrCat("data source ", static_cast<int>(proto.data()));
      break;
  }
  spec.data_path = proto.data_path();
  spec.loader_threads = proto.loader_threads();
  spec.data_vs_compute = proto.data_vs_compute();
  spec.name = proto.name();
  spec.labels.insert(proto.labels().begin(), proto.labels().end());
  spec.request_id = proto.request_id();
  spec.nodes = proto.nodes();
  spec.devices_per_node = proto.devices_per_node();
  spec.allowed_nodes.assign(proto.allowed_nodes().begin(), proto.allowed_nodes().end());
  spec.node_labels.insert(proto.node_labels().begin(), proto.node_labels().end());
  spec.wall_time_limit_s = proto.wall_time_limit_s();
  spec.hang_timeout_s = proto.hang_timeout_s();
  return spec;
}

AgentInventory FromProto(const v1::AgentInventory& proto) {
  AgentInventory inventory;
  inventory.name = proto.name();
  inventory.address = proto.address();
  inventory.hostname = proto.hostname();
  inventory.instance_id = proto.instance_id();
  inventory.cpu_slots = proto.cpu_slots();
  for (const v1::Gpu& gpu : proto.gpus()) {
    inventory.gpus.push_back({gpu.index(), gpu.name(), gpu.uuid(), gpu.memory_bytes()});
  }
  inventory.versions.insert(proto.versions().begin(), proto.versions().end());
  inventory.labels.insert(proto.labels().begin(), proto.labels().end());
  return inventory;
}

IterationSample FromProto(const v1::IterationSample& proto) {
  IterationSample sample;
  sample.job_id = proto.job_id();
  sample.attempt = proto.attempt();
  sample.rank = proto.rank();
  sample.iteration = proto.iteration();
  sample.step_time_s = proto.step_time_s();
  sample.images = proto.images();
  sample.loss = proto.loss();
  sample.data_time_s = proto.data_time_s();
  sample.elapsed_s = proto.elapsed_s();
  sample.warmup = proto.warmup();
  sample.received_unix_ns = proto.received_unix_ns();
  if (proto.has_compute_time_s()) sample.compute_time_s = proto.compute_time_s();
  if (proto.has_forward_backward_time_s()) {
    sample.forward_backward_time_s = proto.forward_backward_time_s();
  }
  if (proto.has_allreduce_wait_time_s()) {
    sample.allreduce_wait_time_s = proto.allreduce_wait_time_s();
  }
  if (proto.has_optimizer_time_s()) sample.optimizer_time_s = proto.optimizer_time_s();
  return sample;
}

GpuSample FromProto(const v1::GpuSample& proto) {
  GpuSample sample;
  sample.job_id = proto.job_id();
  sample.attempt = proto.attempt();
  sample.rank = proto.rank();
  sample.seq = proto.seq();
  sample.gpu_uuid = proto.gpu_uuid();
  sample.gpu_index = proto.gpu_index();
  sample.time_unix_ns = proto.time_unix_ns();
  if (proto.has_power_w()) sample.power_w = proto.power_w();
  if (proto.has_power_average_w()) sample.power_average_w = proto.power_average_w();
  if (proto.has_energy_j()) sample.energy_j = proto.energy_j();
  if (proto.has_sm_clock_mhz()) sample.sm_clock_mhz = proto.sm_clock_mhz();
  if (proto.has_memory_clock_mhz()) sample.memory_clock_mhz = proto.memory_clock_mhz();
  if (proto.has_temperature_c()) sample.temperature_c = proto.temperature_c();
  if (proto.has_gpu_utilization_pct()) sample.gpu_utilization_pct = proto.gpu_utilization_pct();
  if (proto.has_memory_utilization_pct()) {
    sample.memory_utilization_pct = proto.memory_utilization_pct();
  }
  if (proto.has_memory_used_bytes()) sample.memory_used_bytes = proto.memory_used_bytes();
  if (proto.has_throttle_reasons()) sample.throttle_reasons = proto.throttle_reasons();
  if (proto.has_pcie_gen()) sample.pcie_gen = proto.pcie_gen();
  if (proto.has_pcie_gen_max()) sample.pcie_gen_max = proto.pcie_gen_max();
  if (proto.has_pcie_width()) sample.pcie_width = proto.pcie_width();
  if (proto.has_pcie_width_max()) sample.pcie_width_max = proto.pcie_width_max();
  if (proto.has_max_sm_clock_mhz()) sample.max_sm_clock_mhz = proto.max_sm_clock_mhz();
  if (proto.has_max_memory_clock_mhz()) {
    sample.max_memory_clock_mhz = proto.max_memory_clock_mhz();
  }
  if (proto.has_power_limit_w()) sample.power_limit_w = proto.power_limit_w();
  if (proto.has_ecc_corrected()) sample.ecc_corrected = proto.ecc_corrected();
  if (proto.has_ecc_uncorrected()) sample.ecc_uncorrected = proto.ecc_uncorrected();
  if (proto.has_xid_errors()) sample.xid_errors = proto.xid_errors();
  return sample;
}

ResultsFilter FromProto(const v1::ResultsRequest& proto) {
  ResultsFilter filter;
  // "" is unset on the wire: any model, any GPU model.
  if (!proto.model().empty()) filter.configuration.model = proto.model();
  if (!proto.gpu_model().empty()) filter.configuration.gpu_model = proto.gpu_model();
  filter.node = proto.node();
  if (proto.since_unix_ms() != 0) filter.since = absl::FromUnixMillis(proto.since_unix_ms());
  if (proto.until_unix_ms() != 0) filter.until = absl::FromUnixMillis(proto.until_unix_ms());
  filter.labels.insert(proto.labels().begin(), proto.labels().end());
  filter.configuration.simulated = proto.simulated();
  filter.strict = proto.strict();
  return filter;
}

RankReport FromProto(const v1::RankReport& proto) {
  RankReport report;
  report.rank = proto.rank();
  switch (proto.state()) {
    case v1::RANK_STATE_SUCCEEDED: report.outcome = RankOutcome::kSucceeded; break;
    case v1::RANK_STATE_FAILED: report.outcome = RankOutcome::kFailed; break;
    case v1::RANK_STATE_CANCELLED: report.outcome = RankOutcome::kCancelled; break;
    default: report.outcome = RankOutcome::kStarted; break;
  }
  report.exit_code = proto.exit_code();
  report.message = proto.message();
  report.stderr_tail = proto.stderr_tail();
  report.parameters = proto.parameters();
  report.telemetry_note = proto.telemetry_note();
  report.versions.insert(proto.versions().begin(), proto.versions().end());
  report.precision = proto.precision();
  report.simulated = proto.simulated();
  if (proto.has_summary()) {
    RankSummary summary;
    summary.rank = proto.rank();
    summary.measured_iterations = proto.summary().measured_iterations();
    summary.measured_images = proto.summary().measured_images();
    summary.window_s = proto.summary().window_s();
    summary.step_time_median_s = proto.summary().step_time_median_s();
    summary.skipped_steps = proto.summary().skipped_steps();
    summary.nonfinite_losses = proto.summary().nonfinite_losses();
    summary.synthetic_images_per_second = proto.summary().synthetic_images_per_second();
    report.summary = summary;
  }
  return report;
}

void ToProto(const JobSpec& spec, v1::JobSpec* proto) {
  proto->set_model(spec.model);
  proto->set_devices(spec.devices);
  proto->set_precision(ToProto(spec.precision));
  proto->set_batch_size(spec.batch_size);
  proto->set_iterations(spec.iterations);
  proto->set_warmup_iterations(spec.warmup_iterations);
  proto->set_image_size(spec.image_size);
  proto->set_data(spec.data == kDataImageFolder ? v1::DATA_SOURCE_IMAGEFOLDER
                  : spec.data == kDataCoco      ? v1::DATA_SOURCE_COCO
                                                : v1::DATA_SOURCE_SYNTHETIC);
  proto->set_data_path(spec.data_path);
  proto->set_loader_threads(spec.loader_threads);
  proto->set_data_vs_compute(spec.data_vs_compute);
  proto->set_name(spec.name);
  proto->mutable_labels()->insert(spec.labels.begin(), spec.labels.end());
  proto->set_request_id(spec.request_id);
  proto->set_nodes(spec.nodes);
  proto->set_devices_per_node(spec.devices_per_node);
  for (const std::string& node : spec.allowed_nodes) proto->add_allowed_nodes(node);
  proto->mutable_node_labels()->insert(spec.node_labels.begin(), spec.node_labels.end());
  proto->set_wall_time_limit_s(spec.wall_time_limit_s);
  proto->set_hang_timeout_s(spec.hang_timeout_s);
}

void ToProto(const JobView& view, v1::JobStatus* proto) {
  const Job& job = view.job;
  proto->set_id(job.id);
  ToProto(job.spec, proto->mutable_spec());
  proto->set_submitted_by(job.submitted_by);
  proto->set_state(ToProto(job.state));
  proto->set_reason(job.reason);
  for (const StateTransition& t : job.history) {
    v1::StateTransition* out = proto->add_history();
    out->set_state(ToProto(t.state));
    out->set_reason(t.reason);
    out->set_time_unix_ms(absl::ToUnixMillis(t.time));
  }
  for (const Placement& p : job.placements) {
    v1::Placement* out = proto->add_placements();
    out->set_agent(p.agent);
    out->mutable_ranks()->Add(p.ranks.begin(), p.ranks.end());
    out->mutable_device_indices()->Add(p.device_indices.begin(), p.device_indices.end());
  }
  proto->set_created_unix_ms(absl::ToUnixMillis(job.created));
  proto->set_attempt(job.attempt);
  proto->set_iterations_done(view.iterations_done);
  proto->set_samples_stored(view.samples_stored);
  proto->set_has_throughput(view.images_per_second.has_value());
  if (view.images_per_second) proto->set_images_per_second(*view.images_per_second);
  if (std::optional<double> synthetic = SyntheticThroughput(job);
      synthetic && view.images_per_second) {
    proto->set_synthetic_images_per_second(*synthetic);
    proto->set_data_vs_compute(*view.images_per_second / *synthetic);
  }
  proto->set_parameters(job.parameters);
  proto->set_simulated(job.simulated);
  proto->set_device_kind(DeviceKindText(job.device_kind));
  for (const GpuTelemetry& gpu : job.gpu_telemetry) ToProto(gpu, proto->add_gpu_telemetry());
  proto->set_telemetry_note(job.telemetry_note);
  if (std::optional<double> energy = JobEnergyPerImage(job)) {
    proto->set_energy_per_image_j(*energy);
    if (*energy > 0) proto->set_images_per_second_per_watt(1 / *energy);
  }
  Environment environment = MergeEnvironment(job);
  proto->mutable_environment()->mutable_versions()->insert(environment.versions.begin(),
                                                           environment.versions.end());
  for (const std::string& host : environment.hostnames) {
    proto->mutable_environment()->add_hostnames(host);
  }
  for (const RankDevice& device : job.rank_devices) {
    v1::RankDevice* out = proto->add_rank_devices();
    out->set_rank(device.rank);
    out->set_agent(device.agent);
    out->set_hostname(device.hostname);
    out->set_device_index(device.device_index);
    out->set_gpu_uuid(device.gpu_uuid);
    out->set_gpu_name(device.gpu_name);
    auto precision = job.rank_precisions.find(device.rank);
    if (precision != job.rank_precisions.end()) out->set_precision(precision->second);
  }
  EffectivePrecision precision = MergePrecision(job);
  proto->set_effective_precision(precision.in_effect);
  proto->set_precision_mismatch(precision.mismatch);
  proto->set_nonfinite_losses(view.nonfinite_losses);
  int64_t skipped = 0;
  for (const auto& [rank, summary] : job.summaries) skipped += summary.skipped_steps;
  proto->set_skipped_steps(skipped);
  proto->set_ranks_summarized(static_cast<int>(job.summaries.size()));
  if (view.baseline) ToProto(*view.baseline, proto->mutable_baseline());
  proto->set_requeues(job.requeues);
  proto->set_queue_position(view.queue_position);
  if (!job.allocation.id.empty()) {
    v1::Allocation* allocation = proto->mutable_allocation();
    allocation->set_system(job.allocation.system);
    allocation->set_id(job.allocation.id);
    allocation->set_state(job.allocation.state);
    allocation->set_reason(job.allocation.reason);
    allocation->set_nodes(job.allocation.nodes);
    allocation->set_ended(job.allocation.ended);
  }
  if (job.diagnosis != nullptr) ToProto(*job.diagnosis, proto->mutable_diagnosis());
}

void ToProto(const GpuTelemetry& gpu, v1::GpuTelemetry* proto) {
  proto->set_rank(gpu.rank);
  proto->set_agent(gpu.agent);
  proto->set_gpu_index(gpu.gpu_index);
  proto->set_gpu_uuid(gpu.gpu_uuid);
  proto->set_samples(gpu.samples);
  if (gpu.energy_j) proto->set_energy_j(*gpu.energy_j);
  if (gpu.energy_per_image_j) proto->set_energy_per_image_j(*gpu.energy_per_image_j);
  if (gpu.images_per_second_per_watt) {
    proto->set_images_per_second_per_watt(*gpu.images_per_second_per_watt);
  }
  ToProto(gpu.power_w, proto->mutable_power_w());
  ToProto(gpu.sm_clock_mhz, proto->mutable_sm_clock_mhz());
  ToProto(gpu.temperature_c, proto->mutable_temperature_c());
  proto->set_throttle_reasons(gpu.throttle_reasons);
}

void ToProto(const AgentView& view, v1::AgentStatus* proto) {
  v1::AgentInventory* inventory = proto->mutable_inventory();
  inventory->set_name(view.inventory.name);
  inventory->set_address(view.inventory.address);
  inventory->set_hostname(view.inventory.hostname);
  inventory->set_instance_id(view.inventory.instance_id);
  inventory->set_cpu_slots(view.inventory.cpu_slots);
  inventory->mutable_versions()->insert(view.inventory.versions.begin(),
                                        view.inventory.versions.end());
  inventory->mutable_labels()->insert(view.inventory.labels.begin(),
                                      view.inventory.labels.end());
  for (const Gpu& gpu : view.inventory.gpus) {
    v1::Gpu* out = inventory->add_gpus();
    out->set_index(gpu.index);
    out->set_name(gpu.name);
    out->set_uuid(gpu.uuid);
    out->set_memory_bytes(gpu.memory_bytes);
  }
  proto->set_connected(view.connected);
  proto->set_last_seen_unix_ms(absl::ToUnixMillis(view.last_seen));
  for (const std::string& job : view.running_jobs) proto->add_running_jobs(job);
  proto->set_devices_total(view.inventory.device_count());
  proto->set_devices_busy(view.devices_busy);
}

void ToProto(const ResultCell& cell, v1::ResultCell* proto) {
  proto->set_model(cell.key.model);
  proto->set_devices(cell.key.devices);
  proto->set_precision(ToProto(cell.key.precision));
  proto->set_batch_size(cell.key.batch_size);
  proto->set_image_size(cell.key.image_size);
  if (cell.runs() > 0) {  // else no figure at all: "no data", never a 0
    proto->set_median_images_per_second(cell.median_images_per_second);
    proto->set_min_images_per_second(cell.min_images_per_second);
    proto->set_max_images_per_second(cell.max_images_per_second);
  }
  proto->set_runs(cell.runs());
  for (const std::string& id : cell.job_ids) proto->add_job_ids(id);
  proto->set_device_kind(DeviceKindText(cell.key.device_kind));
  proto->set_gpu_model(cell.key.gpu_model);
  proto->set_simulated(cell.key.simulated);
  // The wire has no field for finished jobs without a figure: they are failed
  // measurements (results.h).
  proto->set_failed_runs(cell.failed_runs + cell.unmeasured_runs);
  proto->set_pending_runs(cell.pending_runs);
  if (cell.ci95) {
    proto->set_ci95_low_images_per_second(cell.ci95->low);
    proto->set_ci95_high_images_per_second(cell.ci95->high);
  }
  if (cell.cv) proto->set_cv(*cell.cv);
  if (cell.baseline) ToProto(*cell.baseline, proto->mutable_baseline());
  if (cell.median_energy_per_image_j) {
    proto->set_median_energy_per_image_j(*cell.median_energy_per_image_j);
  }
  if (cell.median_images_per_second_per_watt) {
    proto->set_median_images_per_second_per_watt(*cell.median_images_per_second_per_watt);
  }
  if (cell.median_power_w) proto->set_median_power_w(*cell.median_power_w);
  if (cell.median_sm_clock_mhz) proto->set_median_sm_clock_mhz(*cell.median_sm_clock_mhz);
  if (cell.median_temperature_c) proto->set_median_temperature_c(*cell.median_temperature_c);
  proto->set_failing_check_runs(cell.failing_check_runs);
}

void ToProto(const AssignmentMessage& assignment, v1::Assignment* proto) {
  proto->set_job_id(assignment.job_id);
  proto->set_attempt(assignment.attempt);
  ToProto(assignment.spec, proto->mutable_spec());
  proto->mutable_ranks()->Add(assignment.ranks.begin(), assignment.ranks.end());
  proto->mutable_device_indices()->Add(assignment.device_indices.begin(),
                                       assignment.device_indices.end());
  proto->set_device_kind(DeviceKindText(assignment.device_kind));
  proto->set_world_size(assignment.world_size);
  proto->set_master_addr(assignment.master_addr);
  proto->set_master_port(assignment.master_port);
}

void ToProto(const CancelMessage& cancel, v1::CancelAssignment* proto) {
  proto->set_job_id(cancel.job_id);
  proto->set_attempt(cancel.attempt);
  proto->set_reason(cancel.reason);
}

void ToProto(const Baseline& baseline, v1::Baseline* proto) {
  const ConfigurationKey& c = baseline.configuration;
  proto->set_model(c.model);
  proto->set_precision(ToProto(c.precision));
  proto->set_batch_size(c.batch_size);
  proto->set_devices(c.devices);
  proto->set_gpu_model(c.gpu_model);
  proto->set_device_kind(DeviceKindText(c.device_kind));
  proto->set_image_size(c.image_size);
  proto->set_job_id(baseline.job_id);
  proto->set_images_per_second(baseline.images_per_second);
  proto->set_lower_tolerance_pct(baseline.lower_tolerance_pct);
  proto->set_upper_tolerance_pct(baseline.upper_tolerance_pct);
  proto->set_set_unix_ms(absl::ToUnixMillis(baseline.set));
}

void ToProto(const GpuVariability& gpu, v1::GpuVariability* proto) {
  proto->set_gpu_uuid(gpu.gpu_uuid);
  proto->set_gpu_name(gpu.gpu_name);
  proto->set_agent(gpu.agent);
  proto->set_hostname(gpu.hostname);
  proto->set_gpu_index(gpu.gpu_index);
  proto->set_jobs(gpu.jobs);
  proto->set_iterations(gpu.iterations);
  proto->set_normalized_step_time(gpu.normalized_step_time);
  if (gpu.step_time_cv) proto->set_step_time_cv(*gpu.step_time_cv);
  ToProto(gpu.sm_clock_mhz, proto->mutable_sm_clock_mhz());
  ToProto(gpu.power_w, proto->mutable_power_w());
  ToProto(gpu.temperature_c, proto->mutable_temperature_c());
  proto->set_outlier(gpu.outlier);
}

void ToProto(const IterationSample& sample, v1::IterationSample* proto) {
  proto->set_job_id(sample.job_id);
  proto->set_attempt(sample.attempt);
  proto->set_rank(sample.rank);
  proto->set_iteration(sample.iteration);
  proto->set_step_time_s(sample.step_time_s);
  proto->set_images(sample.images);
  proto->set_loss(sample.loss);
  proto->set_data_time_s(sample.data_time_s);
  proto->set_elapsed_s(sample.elapsed_s);
  proto->set_warmup(sample.warmup);
  proto->set_received_unix_ns(sample.received_unix_ns);
  if (sample.compute_time_s) proto->set_compute_time_s(*sample.compute_time_s);
  if (sample.forward_backward_time_s) {
    proto->set_forward_backward_time_s(*sample.forward_backward_time_s);
  }
  if (sample.allreduce_wait_time_s) {
    proto->set_allreduce_wait_time_s(*sample.allreduce_wait_time_s);
  }
  if (sample.optimizer_time_s) proto->set_optimizer_time_s(*sample.optimizer_time_s);
}

void ToProto(const GpuSample& s, v1::GpuSample* p) {
  p->set_job_id(s.job_id);
  p->set_attempt(s.attempt);
  p->set_rank(s.rank);
  p->set_seq(s.seq);
  p->set_gpu_uuid(s.gpu_uuid);
  p->set_gpu_index(s.gpu_index);
  p->set_time_unix_ns(s.time_unix_ns);
  if (s.power_w) p->set_power_w(*s.power_w);
  if (s.power_average_w) p->set_power_average_w(*s.power_average_w);
  if (s.energy_j) p->set_energy_j(*s.energy_j);
  if (s.sm_clock_mhz) p->set_sm_clock_mhz(*s.sm_clock_mhz);
  if (s.memory_clock_mhz) p->set_memory_clock_mhz(*s.memory_clock_mhz);
  if (s.temperature_c) p->set_temperature_c(*s.temperature_c);
  if (s.gpu_utilization_pct) p->set_gpu_utilization_pct(*s.gpu_utilization_pct);
  if (s.memory_utilization_pct) p->set_memory_utilization_pct(*s.memory_utilization_pct);
  if (s.memory_used_bytes) p->set_memory_used_bytes(*s.memory_used_bytes);
  if (s.throttle_reasons) p->set_throttle_reasons(*s.throttle_reasons);
  if (s.pcie_gen) p->set_pcie_gen(*s.pcie_gen);
  if (s.pcie_gen_max) p->set_pcie_gen_max(*s.pcie_gen_max);
  if (s.pcie_width) p->set_pcie_width(*s.pcie_width);
  if (s.pcie_width_max) p->set_pcie_width_max(*s.pcie_width_max);
  if (s.max_sm_clock_mhz) p->set_max_sm_clock_mhz(*s.max_sm_clock_mhz);
  if (s.max_memory_clock_mhz) p->set_max_memory_clock_mhz(*s.max_memory_clock_mhz);
  if (s.power_limit_w) p->set_power_limit_w(*s.power_limit_w);
  if (s.ecc_corrected) p->set_ecc_corrected(*s.ecc_corrected);
  if (s.ecc_uncorrected) p->set_ecc_uncorrected(*s.ecc_uncorrected);
  if (s.xid_errors) p->set_xid_errors(*s.xid_errors);
}

void ToProto(const JoinTokenRecord& token, v1::JoinToken* proto) {
  proto->set_id(token.id);
  proto->set_description(token.description);
  proto->set_uses(token.uses);
  proto->set_used(token.used);
  proto->set_created_unix_seconds(absl::ToUnixSeconds(token.created));
  proto->set_expires_unix_seconds(absl::ToUnixSeconds(token.expires));
  proto->set_allow_replace(token.allow_replace);
  proto->set_revoked(token.revoked);
}

}  // namespace bench
