#include "server/diagnosis/diagnosis_test_support.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "server/diagnosis/robust_stats.h"

namespace bench::diagnosis::testing {
namespace {

constexpr int64_t kStartNs = 1'800'000'000'000'000'000;  // 2027-01-15, an arbitrary origin

int64_t Ns(double seconds) { return static_cast<int64_t>(seconds * 1e9); }

GpuReading FullClockReading(int64_t time_ns) {
  GpuReading r;
  r.time_unix_ns = time_ns;
  r.sm_clock_mhz = kMaxSmClockMhz;
  r.max_sm_clock_mhz = kMaxSmClockMhz;
  r.memory_clock_mhz = kMaxMemoryClockMhz;
  r.max_memory_clock_mhz = kMaxMemoryClockMhz;
  r.power_w = 450;
  r.power_limit_w = 700;
  r.temperature_c = 60;
  r.throttle_reasons = 0;
  r.pcie_gen = 5;
  r.pcie_gen_max = 5;
  r.pcie_width = 16;
  r.pcie_width_max = 16;
  r.ecc_corrected = 0;
  r.ecc_uncorrected = 0;
  r.xid_errors = 0;
  return r;
}

}  // namespace

JobInputs MakeJob(const JobPlan& plan) {
  std::mt19937_64 rng(plan.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  auto noisy = [&](double value) { return value * std::max(0.5, 1 + plan.noise * normal(rng)); };

  JobInputs job;
  job.job_id = "j-" + std::to_string(plan.seed);
  job.device_kind = plan.gpu ? DeviceKind::kCuda : DeviceKind::kCpu;
  job.requested_precision = Precision::kFp32;
  job.effective_precision = Precision::kFp32;
  job.iterations_asked = plan.iterations + plan.warmup;
  job.warmup_asked = plan.warmup;
  job.skipped_steps = 0;
  for (int r = 0; r < plan.ranks; ++r) {
    RankInputs rank;
    rank.rank = r;
    rank.node = "n" + std::to_string(r / 8);
    rank.gpu_index = plan.gpu ? r % 8 : -1;
    rank.gpu_uuid = plan.gpu ? "GPU-" + std::to_string(1000 + r) : "";
    job.ranks.push_back(std::move(rank));
  }
  // Per rank, the GPU event in effect at each iteration (index into gpu_events, -1: none),
  // and each iteration's start, for the readings.
  const int total = plan.warmup + plan.iterations;
  std::vector<std::vector<int>> event_at(plan.ranks, std::vector<int>(total, -1));
  std::vector<int64_t> starts;
  double t = 0;
  std::vector<double> data(plan.ranks), fb(plan.ranks), opt(plan.ranks);
  for (int k = 0; k < total; ++k) {
    const bool warmup = k < plan.warmup;
    const int iteration = k;  // measured iterations are numbered from plan.warmup
    for (int r = 0; r < plan.ranks; ++r) {
      data[r] = noisy(plan.data_s);
      fb[r] = noisy(plan.compute_s) * (warmup ? 3 : 1);
      opt[r] = noisy(plan.optimizer_s);
      for (const auto& e : plan.extra_compute) {
        if (e.rank == r && iteration >= e.first && iteration <= e.last) fb[r] *= 1 + e.fraction;
      }
      for (const auto& s : plan.data_stalls) {
        if ((s.rank < 0 || s.rank == r) && iteration >= s.first && iteration <= s.last) {
          data[r] += s.seconds;
        }
      }
      for (size_t e = 0; e < plan.gpu_events.size(); ++e) {
        const auto& g = plan.gpu_events[e];
        if (g.rank == r && iteration >= g.first && iteration <= g.last) {
          event_at[r][k] = static_cast<int>(e);
          if (g.sm_clock_mhz) fb[r] *= kMaxSmClockMhz / *g.sm_clock_mhz;
        }
      }
    }
    double ready = 0;
    for (int r = 0; r < plan.ranks; ++r) ready = std::max(ready, data[r] + fb[r]);
    starts.push_back(kStartNs + Ns(t));
    double longest = 0;
    for (int r = 0; r < plan.ranks; ++r) {
      const double wait = plan.ranks > 1 ? ready - (data[r] + fb[r]) : 0;
      IterationTiming it;
      it.iteration = iteration;
      it.data_time_s = data[r];
      it.forward_backward_time_s = fb[r];
      it.allreduce_wait_time_s = wait;
      it.optimizer_time_s = opt[r];
      it.step_time_s = data[r] + fb[r] + wait + opt[r];
      it.compute_time_s = it.step_time_s - data[r];
      it.end_unix_ns = kStartNs + Ns(t + it.step_time_s);
      it.warmup = warmup;
      job.ranks[r].iterations.push_back(it);
      longest = std::max(longest, it.step_time_s);
    }
    t += longest;
  }
  if (plan.gpu) {
    for (int r = 0; r < plan.ranks; ++r) {
      for (double s = 0; s <= t; s += plan.reading_period_s) {
        const int64_t time = kStartNs + Ns(s);
        GpuReading reading = FullClockReading(time);
        const int k = static_cast<int>(std::upper_bound(starts.begin(), starts.end(), time) -
                                       starts.begin()) -
                      1;
        const int e = k >= 0 ? event_at[r][k] : -1;
        if (e >= 0) {
          const auto& g = plan.gpu_events[e];
          reading.throttle_reasons = g.reasons;
          if (g.sm_clock_mhz) reading.sm_clock_mhz = *g.sm_clock_mhz;
          if (g.reasons & (kReasonHwThermal | kReasonSwThermal)) reading.temperature_c = 93;
          if (g.reasons & kReasonSwPowerCap) reading.power_w = 690;
        }
        job.ranks[r].readings.push_back(reading);
      }
    }
  }
  return job;
}

double WindowStepSeconds(const JobInputs& job) {
  std::vector<int> iterations;
  for (const auto& it : job.ranks.front().iterations) {
    if (!it.warmup) iterations.push_back(it.iteration);
  }
  double total = 0;
  for (size_t k = 0; k < iterations.size(); ++k) {
    std::vector<double> steps;
    for (const auto& rank : job.ranks) {
      for (const auto& it : rank.iterations) {
        if (it.iteration == iterations[k]) steps.push_back(it.step_time_s);
      }
    }
    total += MedianOf(steps);
  }
  return total;
}

std::vector<ScreenedGpu> MakeFleet(const FleetPlan& plan) {
  std::mt19937_64 rng(plan.seed);
  std::uniform_real_distribution<double> speed(1 - plan.spread / 2, 1 + plan.spread / 2);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<ScreenedGpu> fleet;
  ConfigurationKey key;
  key.model = "resnet50";
  key.devices = 1;
  key.precision = Precision::kAmp;
  key.batch_size = 64;
  key.device_kind = DeviceKind::kCuda;
  key.gpu_model = "NVIDIA H100 80GB HBM3";
  key.image_size = 224;
  for (int n = 0; n < plan.nodes; ++n) {
    char node[16];
    std::snprintf(node, sizeof node, "n%03d", n);
    for (int g = 0; g < plan.gpus_per_node; ++g) {
      ScreenedGpu gpu;
      gpu.job_id = "s-" + std::to_string(n * plan.gpus_per_node + g);
      gpu.node = node;
      gpu.gpu_index = g;
      gpu.gpu_uuid = "GPU-" + std::to_string(n) + "-" + std::to_string(g);
      gpu.gpu_name = key.gpu_model;
      gpu.configuration = key;
      gpu.succeeded = true;
      const double base = plan.step_s / speed(rng);
      for (int i = 0; i < plan.iterations; ++i) {
        gpu.step_times_s.push_back(base * std::max(0.5, 1 + plan.noise * normal(rng)));
      }
      for (int k = 0; k < plan.readings; ++k) {
        gpu.readings.push_back(FullClockReading(kStartNs + Ns(0.1 * k)));
      }
      fleet.push_back(std::move(gpu));
    }
  }
  return fleet;
}

ScreenedGpu& GpuAt(std::vector<ScreenedGpu>& fleet, const std::string& node, int gpu_index) {
  for (ScreenedGpu& g : fleet) {
    if (g.node == node && g.gpu_index == gpu_index) return g;
  }
  std::abort();
}

void PlantSlowSilicon(ScreenedGpu& gpu, double speed) {
  for (double& s : gpu.step_times_s) s /= speed;
}

void PlantThrottle(ScreenedGpu& gpu, uint64_t reasons, double sm_clock_mhz) {
  for (double& s : gpu.step_times_s) s *= kMaxSmClockMhz / sm_clock_mhz;
  for (GpuReading& r : gpu.readings) {
    r.throttle_reasons = reasons;
    r.sm_clock_mhz = sm_clock_mhz;
    if (reasons & (kReasonHwThermal | kReasonSwThermal)) r.temperature_c = 93;
  }
}

void PlantPcie(ScreenedGpu& gpu, int gen, int gen_max, int width, int width_max) {
  for (GpuReading& r : gpu.readings) {
    r.pcie_gen = gen;
    r.pcie_gen_max = gen_max;
    r.pcie_width = width;
    r.pcie_width_max = width_max;
  }
}

void PlantXid(ScreenedGpu& gpu, int64_t xid_errors) {
  for (GpuReading& r : gpu.readings) r.xid_errors = xid_errors;
}

}  // namespace bench::diagnosis::testing
