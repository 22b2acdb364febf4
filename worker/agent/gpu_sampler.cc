#include "worker/agent/gpu_sampler.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace bench::agent {

absl::Duration GpuSamplePeriod(double hz) {
  if (!(hz > 0) || !std::isfinite(hz)) return absl::ZeroDuration();
  return absl::Seconds(1) / hz;
}

void FillGpuSample(const GpuReading& reading, benchfleet::v1::GpuSample* sample) {
  if (reading.power_w) sample->set_power_w(*reading.power_w);
  if (reading.power_average_w) sample->set_power_average_w(*reading.power_average_w);
  if (reading.energy_j) sample->set_energy_j(*reading.energy_j);
  if (reading.sm_clock_mhz) sample->set_sm_clock_mhz(*reading.sm_clock_mhz);
  if (reading.memory_clock_mhz) sample->set_memory_clock_mhz(*reading.memory_clock_mhz);
  if (reading.temperature_c) sample->set_temperature_c(*reading.temperature_c);
  if (reading.gpu_utilization_pct) {
    sample->set_gpu_utilization_pct(*reading.gpu_utilization_pct);
  }
  if (reading.memory_utilization_pct) {
    sample->set_memory_utilization_pct(*reading.memory_utilization_pct);
  }
  if (reading.memory_used_bytes) sample->set_memory_used_bytes(*reading.memory_used_bytes);
  if (reading.throttle_reasons) sample->set_throttle_reasons(*reading.throttle_reasons);
  if (reading.pcie_gen) sample->set_pcie_gen(*reading.pcie_gen);
  if (reading.pcie_gen_max) sample->set_pcie_gen_max(*reading.pcie_gen_max);
  if (reading.pcie_width) sample->set_pcie_width(*reading.pcie_width);
  if (reading.pcie_width_max) sample->set_pcie_width_max(*reading.pcie_width_max);
  if (reading.max_sm_clock_mhz) sample->set_max_sm_clock_mhz(*reading.max_sm_clock_mhz);
  if (reading.max_memory_clock_mhz) {
    sample->set_max_memory_clock_mhz(*reading.max_memory_clock_mhz);
  }
  if (reading.power_limit_w) sample->set_power_limit_w(*reading.power_limit_w);
  if (reading.ecc_corrected) sample->set_ecc_corrected(*reading.ecc_corrected);
  if (reading.ecc_uncorrected) sample->set_ecc_uncorrected(*reading.ecc_uncorrected);
  if (reading.xid_errors) sample->set_xid_errors(*reading.xid_errors);
}

GpuTelemetrySession StartGpuTelemetry(const std::string& nvml_library, double hz,
                                      GpuSampleSink* sink) {
  GpuTelemetrySession session;
  absl::Duration period = GpuSamplePeriod(hz);
  if (period <= absl::ZeroDuration()) {
    session.note = "no GPU telemetry: sampling is off (--gpu-sample-hz 0)";
    return session;
  }
  auto nvml = Nvml::Open(nvml_library);
  if (!nvml.ok()) {
    session.note = absl::StrCat("no GPU telemetry: ", nvml.status().message());
    return session;
  }
  session.nvml = std::move(*nvml);
  GpuSamplerOptions options;
  options.period = period;
  session.sampler = std::make_unique<GpuSampler>(session.nvml.get(), sink, options);
  return session;
}

GpuSampler::GpuSampler(GpuReader* reader, GpuSampleSink* sink, GpuSamplerOptions options)
    : reader_(reader), sink_(sink), options_(std::move(options)) {
  thread_ = std::thread([this] { Run(); });
}

GpuSampler::~GpuSampler() { Shutdown(); }

void GpuSampler::Register(const std::string& job_id, int attempt, int rank, int gpu_index,
                          const std::string& gpu_uuid) {
  absl::MutexLock lock(&mu_);
  Target& target = targets_[Key(job_id, attempt, rank)];
  target.gpu_index = gpu_index;
  target.gpu_uuid = gpu_uuid;
  cv_.SignalAll();
}

uint64_t GpuSampler::Unregister(const std::string& job_id, int attempt, int rank) {
  absl::MutexLock lock(&mu_);
  auto it = targets_.find(Key(job_id, attempt, rank));
  if (it == targets_.end()) return 0;
  uint64_t ticket = stopping_ ? 0 : SampleLocked(it->first, &it->second);
  targets_.erase(it);
  return ticket;
}

void GpuSampler::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

uint64_t GpuSampler::SampleLocked(const Key& key, Target* target) {
  auto now = [this] { return options_.now ? options_.now() : absl::Now(); };
  absl::Time before = now();
  GpuReading reading = reader_->Read(target->gpu_index);
  absl::Time after = now();
  benchfleet::v1::GpuSample sample;
  sample.set_job_id(std::get<0>(key));
  sample.set_attempt(std::get<1>(key));
  sample.set_rank(std::get<2>(key));
  sample.set_seq(target->next_seq++);
  sample.set_gpu_uuid(target->gpu_uuid);
  sample.set_gpu_index(target->gpu_index);
  sample.set_time_unix_ns(absl::ToUnixNanos(before + (after - before) / 2));
  FillGpuSample(reading, &sample);
  return sink_->AddGpuSample(std::move(sample));
}

void GpuSampler::Run() {
  const absl::Duration period =
      options_.period > absl::ZeroDuration() ? options_.period : absl::Milliseconds(100);
  absl::MutexLock lock(&mu_);
  absl::Time next = absl::InfinitePast();
  while (!stopping_) {
    if (targets_.empty()) {
      cv_.Wait(&mu_);
      next = absl::InfinitePast();
      continue;
    }
    if (next == absl::InfinitePast()) next = absl::Now() + period;
    if (absl::Now() < next) {
      cv_.WaitWithDeadline(&mu_, next);
      continue;
    }
    for (auto& [key, target] : targets_) SampleLocked(key, &target);
    absl::Time now = absl::Now();
    next += period;
    while (next <= now) next += period;
  }
}

}  // namespace bench::agent
