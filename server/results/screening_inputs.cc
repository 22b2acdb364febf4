#include "server/results/screening_inputs.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace bench {

std::string ScreeningIdOf(const Job& job) {
  auto it = job.spec.labels.find(kScreeningLabel);
  return it == job.spec.labels.end() ? std::string() : it->second;
}

absl::Status ValidateScreeningId(const std::string& id) {
  if (id.empty() || id.size() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("screening id \"", id, "\": expected 1 to 64 characters"));
  }
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "screening id \"", id, "\": only letters, digits, '.', '_' and '-' are allowed"));
    }
  }
  return absl::OkStatus();
}

diagnosis::GpuReading GpuReadingOf(const GpuSample& s) {
  diagnosis::GpuReading r;
  r.time_unix_ns = s.time_unix_ns;
  r.sm_clock_mhz = s.sm_clock_mhz;
  r.max_sm_clock_mhz = s.max_sm_clock_mhz;
  r.memory_clock_mhz = s.memory_clock_mhz;
  r.max_memory_clock_mhz = s.max_memory_clock_mhz;
  r.power_w = s.power_w;
  r.power_limit_w = s.power_limit_w;
  r.temperature_c = s.temperature_c;
  r.throttle_reasons = s.throttle_reasons;
  r.pcie_gen = s.pcie_gen;
  r.pcie_gen_max = s.pcie_gen_max;
  r.pcie_width = s.pcie_width;
  r.pcie_width_max = s.pcie_width_max;
  r.ecc_corrected = s.ecc_corrected;
  r.ecc_uncorrected = s.ecc_uncorrected;
  r.xid_errors = s.xid_errors;
  return r;
}

diagnosis::ScreenedGpu ScreenedGpuOfMeasured(const Job& job, std::vector<double> step_times_s,
                                             std::vector<diagnosis::GpuReading> readings) {
  diagnosis::ScreenedGpu gpu;
  gpu.job_id = job.id;
  gpu.configuration = ConfigurationOf(job);
  for (const RankDevice& device : job.rank_devices) {
    if (device.rank != 0) continue;
    gpu.node = device.agent;
    gpu.gpu_index = device.device_index;
    gpu.gpu_uuid = device.gpu_uuid;
    gpu.gpu_name = device.gpu_name;
  }
  if (gpu.node.empty() && !job.spec.allowed_nodes.empty()) {
    gpu.node = job.spec.allowed_nodes.front();  // never placed: the node it was meant for
  }
  gpu.succeeded = job.state == JobState::kSucceeded;
  if (!gpu.succeeded) {
    gpu.failure_reason =
        job.reason.empty() ? std::string(job.state == JobState::kCancelled ? "cancelled" : "failed")
                           : job.reason;
  }
  gpu.step_times_s = std::move(step_times_s);
  gpu.readings = std::move(readings);
  return gpu;
}

diagnosis::ScreenedGpu ScreenedGpuOf(const Job& job, const std::vector<IterationSample>& samples,
                                     const std::vector<GpuSample>& gpu_samples) {
  std::vector<const IterationSample*> measured;
  for (const IterationSample& sample : samples) {
    if (sample.rank == 0 && !sample.warmup) measured.push_back(&sample);
  }
  std::sort(measured.begin(), measured.end(),
            [](const IterationSample* a, const IterationSample* b) {
              return a->iteration < b->iteration;
            });
  std::vector<double> step_times_s;
  step_times_s.reserve(measured.size());
  for (const IterationSample* sample : measured) step_times_s.push_back(sample->step_time_s);
  std::vector<diagnosis::GpuReading> readings;
  for (const GpuSample& sample : gpu_samples) {
    if (sample.rank == 0) readings.push_back(GpuReadingOf(sample));
  }
  return ScreenedGpuOfMeasured(job, std::move(step_times_s), std::move(readings));
}

std::vector<ScreeningListEntry> ListScreeningsOf(const std::vector<Job>& jobs) {
  std::map<std::string, ScreeningListEntry> by_id;
  std::map<std::string, std::set<std::string>> nodes;
  for (const Job& job : jobs) {
    const std::string id = ScreeningIdOf(job);
    if (id.empty()) continue;
    ScreeningListEntry& entry = by_id[id];
    if (entry.jobs == 0 || job.created < entry.created) entry.created = job.created;
    entry.id = id;
    ++entry.jobs;
    switch (job.state) {
      case JobState::kQueued:
      case JobState::kRunning: ++entry.pending; break;
      case JobState::kSucceeded: ++entry.succeeded; break;
      case JobState::kFailed:
      case JobState::kCancelled: ++entry.failed; break;
    }
    nodes[id].insert(job.spec.allowed_nodes.begin(), job.spec.allowed_nodes.end());
  }
  std::vector<ScreeningListEntry> list;
  for (auto& [id, entry] : by_id) {
    entry.nodes.assign(nodes[id].begin(), nodes[id].end());
    list.push_back(std::move(entry));
  }
  std::sort(list.begin(), list.end(), [](const ScreeningListEntry& a, const ScreeningListEntry& b) {
    return std::tie(b.created, a.id) < std::tie(a.created, b.id);
  });
  return list;
}

}  // namespace bench
