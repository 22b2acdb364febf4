#include "server/results/telemetry.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace bench {

namespace {

// Percentile of already sorted, non-empty values.
double PercentileOfSorted(const std::vector<double>& sorted, double q) {
  double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  size_t below = static_cast<size_t>(std::floor(position));
  size_t above = std::min(below + 1, sorted.size() - 1);
  double fraction = position - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

}  // namespace

std::optional<double> Percentile(std::vector<double> values, double q) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  return PercentileOfSorted(values, q);
}

Percentiles PercentilesOf(std::vector<double> values) {
  Percentiles p;
  p.count = static_cast<int64_t>(values.size());
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  p.p5 = PercentileOfSorted(values, 0.05);
  p.p50 = PercentileOfSorted(values, 0.50);
  p.p95 = PercentileOfSorted(values, 0.95);
  return p;
}

void LinearSignal::Add(double time, double value) {
  if (!times_.empty() && time <= times_.back()) return;  // keep times strictly increasing
  times_.push_back(time);
  values_.push_back(value);
}

bool LinearSignal::Covers(double from, double to) const {
  return !times_.empty() && times_.front() <= from && to <= times_.back() && from <= to;
}

std::optional<double> LinearSignal::At(double time) const {
  if (!Covers(time, time)) return std::nullopt;
  auto upper = std::lower_bound(times_.begin(), times_.end(), time);
  size_t i = static_cast<size_t>(upper - times_.begin());
  if (times_[i] == time) return values_[i];
  double t0 = times_[i - 1], t1 = times_[i];
  return values_[i - 1] + (values_[i] - values_[i - 1]) * (time - t0) / (t1 - t0);
}

std::optional<double> LinearSignal::MeanOver(double from, double to) const {
  if (!Covers(from, to)) return std::nullopt;
  if (to == from) return At(from);
  // Integrate the trapezoids between `from`, the sample times inside, and `to`.
  double area = 0;
  double previous_time = from;
  double previous_value = *At(from);
  auto it = std::upper_bound(times_.begin(), times_.end(), from);
  for (; it != times_.end() && *it < to; ++it) {
    double value = values_[static_cast<size_t>(it - times_.begin())];
    area += (value + previous_value) / 2 * (*it - previous_time);
    previous_time = *it;
    previous_value = value;
  }
  double end_value = *At(to);
  area += (end_value + previous_value) / 2 * (to - previous_time);
  return area / (to - from);
}

namespace {

constexpr double kNsPerSecond = 1e9;

struct RankWindow {
  double origin_s = 0;        // wall clock (s since epoch) of the rank's iteration 1 start
  double measured_from_s = 0;
  double measured_to_s = 0;
  int64_t measured_images = 0;  // counted from the iterations
};

// One rank's window from its iterations; nullopt if none carries a receive time.
std::optional<RankWindow> WindowOf(const std::vector<const IterationSample*>& iterations) {
  double origin = std::numeric_limits<double>::infinity();
  for (const IterationSample* s : iterations) {
    if (s->received_unix_ns <= 0) continue;
    origin = std::min(origin, s->received_unix_ns / kNsPerSecond - s->elapsed_s);
  }
  if (!std::isfinite(origin)) return std::nullopt;
  RankWindow window;
  window.origin_s = origin;
  double last_warmup_elapsed = 0;
  double last_elapsed = 0;
  for (const IterationSample* s : iterations) {
    if (s->warmup) {
      last_warmup_elapsed = std::max(last_warmup_elapsed, s->elapsed_s);
    } else {
      window.measured_images += s->images;
    }
    last_elapsed = std::max(last_elapsed, s->elapsed_s);
  }
  window.measured_from_s = origin + last_warmup_elapsed;
  window.measured_to_s = origin + last_elapsed;
  return window;
}

}  // namespace

PowerReading PowerReading::For(const std::vector<const GpuSample*>& readings) {
  return PowerReading(std::any_of(readings.begin(), readings.end(),
                                  [](const GpuSample* s) { return s->power_w.has_value(); }));
}

std::map<int, MeasuredWindow> MeasuredWindows(const std::vector<IterationSample>& samples) {
  std::map<int, std::vector<const IterationSample*>> by_rank;
  for (const IterationSample& s : samples) by_rank[s.rank].push_back(&s);
  std::map<int, MeasuredWindow> windows;
  for (const auto& [rank, iterations] : by_rank) {
    if (std::optional<RankWindow> w = WindowOf(iterations)) {
      windows[rank] = MeasuredWindow{w->measured_from_s, w->measured_to_s};
    }
  }
  return windows;
}

JoinedTelemetry JoinTelemetry(const std::vector<IterationSample>& samples,
                              const std::vector<GpuSample>& gpu_samples,
                              const std::map<int, RankSummary>& summaries,
                              const std::map<int, std::string>& agent_by_rank,
                              bool expect_gpus) {
  JoinedTelemetry joined;
  std::map<int, std::vector<const IterationSample*>> iterations_by_rank;
  for (const IterationSample& s : samples) iterations_by_rank[s.rank].push_back(&s);
  std::map<int, std::vector<const GpuSample*>> gpu_by_rank;
  for (const GpuSample& s : gpu_samples) gpu_by_rank[s.rank].push_back(&s);

  std::vector<std::string> problems;
  std::vector<int> without_gpu_samples;
  for (auto& [rank, iterations] : iterations_by_rank) {
    std::sort(iterations.begin(), iterations.end(),
              [](const IterationSample* a, const IterationSample* b) {
                return a->iteration < b->iteration;
              });
    auto gpu_it = gpu_by_rank.find(rank);
    if (gpu_it == gpu_by_rank.end()) {
      without_gpu_samples.push_back(rank);
      continue;
    }
    std::vector<const GpuSample*>& readings = gpu_it->second;
    std::sort(readings.begin(), readings.end(), [](const GpuSample* a, const GpuSample* b) {
      return a->time_unix_ns < b->time_unix_ns;
    });

    // Where the rank's iterations lie on the wall clock.
    std::optional<RankWindow> found = WindowOf(iterations);
    if (!found) {
      problems.push_back(absl::StrCat("rank ", rank, ": iterations carry no receive time"));
      continue;
    }
    RankWindow window = *found;
    double origin = window.origin_s;
    auto summary = summaries.find(rank);
    if (summary != summaries.end()) window.measured_images = summary->second.measured_images;

    LinearSignal power, clock, energy;
    GpuTelemetry gpu;
    gpu.rank = rank;
    auto agent = agent_by_rank.find(rank);
    if (agent != agent_by_rank.end()) gpu.agent = agent->second;
    gpu.gpu_index = readings.front()->gpu_index;
    gpu.gpu_uuid = readings.front()->gpu_uuid;
    const PowerReading power_reading = PowerReading::For(readings);
    const bool covered = readings.front()->time_unix_ns / kNsPerSecond <= window.measured_from_s &&
                         readings.back()->time_unix_ns / kNsPerSecond >= window.measured_to_s;
    const bool measured = window.measured_to_s > window.measured_from_s;
    std::vector<double> power_in, clock_in, temperature_in;
    for (const GpuSample* s : readings) {
      double t = s->time_unix_ns / kNsPerSecond;
      std::optional<double> watts = power_reading.Of(*s);
      if (watts) power.Add(t, *watts);
      if (s->sm_clock_mhz) clock.Add(t, *s->sm_clock_mhz);
      if (s->energy_j) energy.Add(t, *s->energy_j);
      if (t < window.measured_from_s || t > window.measured_to_s) continue;
      ++gpu.samples;
      if (watts) power_in.push_back(*watts);
      if (s->sm_clock_mhz) clock_in.push_back(*s->sm_clock_mhz);
      if (s->temperature_c) temperature_in.push_back(*s->temperature_c);
      if (s->throttle_reasons) gpu.throttle_reasons |= *s->throttle_reasons;
    }
    if (!measured) {
      problems.push_back(absl::StrCat("rank ", rank, ": no measured iterations"));
    } else if (!covered) {
      // Percentiles of part of the window would pass for the whole: none at all.
      problems.push_back(absl::StrCat("rank ", rank,
                                      ": GPU samples do not cover the measured window"));
    } else {
      gpu.power_w = PercentilesOf(std::move(power_in));
      gpu.sm_clock_mhz = PercentilesOf(std::move(clock_in));
      gpu.temperature_c = PercentilesOf(std::move(temperature_in));
      std::optional<double> start = energy.At(window.measured_from_s);
      std::optional<double> end = energy.At(window.measured_to_s);
      if (energy.empty()) {
        problems.push_back(absl::StrCat("rank ", rank, ": the GPU has no energy counter"));
      } else if (!start || !end) {
        problems.push_back(absl::StrCat(
            "rank ", rank, ": energy readings do not cover the measured window"));
      } else if (*end < *start) {
        problems.push_back(absl::StrCat(
            "rank ", rank, ": the energy counter went backwards (driver reloaded?)"));
      } else {
        gpu.energy_j = *end - *start;
        if (window.measured_images > 0 && *gpu.energy_j > 0) {
          gpu.energy_per_image_j = *gpu.energy_j / static_cast<double>(window.measured_images);
          gpu.images_per_second_per_watt =
              static_cast<double>(window.measured_images) / *gpu.energy_j;
        }
      }
    }
    joined.gpus.push_back(std::move(gpu));

    double previous_elapsed = 0;
    for (const IterationSample* s : iterations) {
      IterationTelemetry it;
      it.rank = rank;
      it.iteration = s->iteration;
      double from = origin + previous_elapsed;
      double to = origin + s->elapsed_s;
      previous_elapsed = s->elapsed_s;
      it.power_w_mean = power.MeanOver(from, to);
      it.sm_clock_mhz_mean = clock.MeanOver(from, to);
      if (it.power_w_mean || it.sm_clock_mhz_mean) joined.iterations.push_back(it);
    }
  }
  if (expect_gpus && !without_gpu_samples.empty()) {
    problems.insert(problems.begin(),
                    absl::StrCat("no GPU samples for rank",
                                 without_gpu_samples.size() > 1 ? "s " : " ",
                                 absl::StrJoin(without_gpu_samples, ", ")));
  }
  joined.note = absl::StrJoin(problems, "; ");
  return joined;
}

std::optional<double> JobEnergyPerImage(const Job& job) {
  if (job.gpu_telemetry.empty() ||
      static_cast<int>(job.gpu_telemetry.size()) != job.spec.devices) {
    return std::nullopt;
  }
  double energy = 0;
  double images = 0;
  for (const GpuTelemetry& gpu : job.gpu_telemetry) {
    auto summary = job.summaries.find(gpu.rank);
    if (!gpu.energy_j || summary == job.summaries.end()) return std::nullopt;
    energy += *gpu.energy_j;
    images += static_cast<double>(summary->second.measured_images);
  }
  if (images <= 0) return std::nullopt;
  return energy / images;
}

}  // namespace bench
