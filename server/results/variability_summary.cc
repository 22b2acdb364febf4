#include "server/results/variability_summary.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/results/statistics.h"
#include "server/results/telemetry.h"

namespace bench {
namespace {

ValueCounts CountsOf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  ValueCounts counts;
  for (double v : values) {
    if (!counts.empty() && counts.back().first == v) {
      ++counts.back().second;
    } else {
      counts.emplace_back(v, 1);
    }
  }
  return counts;
}

void MergeInto(ValueCounts& into, const ValueCounts& more) {
  if (more.empty()) return;
  if (into.empty()) {  // a GPU's first job in a configuration: nothing to merge
    into = more;
    return;
  }
  ValueCounts merged;
  merged.reserve(into.size() + more.size());
  size_t a = 0, b = 0;
  while (a < into.size() || b < more.size()) {
    if (b == more.size() || (a < into.size() && into[a].first < more[b].first)) {
      merged.push_back(into[a++]);
    } else if (a == into.size() || more[b].first < into[a].first) {
      merged.push_back(more[b++]);
    } else {
      merged.emplace_back(into[a].first, into[a].second + more[b].second);
      ++a;
      ++b;
    }
  }
  into = std::move(merged);
}

// The i-th smallest value (0-based) of the multiset.
double NthValue(const ValueCounts& counts, int64_t i) {
  for (const auto& [value, n] : counts) {
    if (i < n) return value;
    i -= n;
  }
  return counts.back().first;
}

// telemetry.h's PercentilesOf over the multiset, number for number.
Percentiles PercentilesOfCounts(const ValueCounts& counts) {
  Percentiles p;
  for (const auto& entry : counts) p.count += entry.second;
  if (p.count == 0) return p;
  auto at = [&](double q) {
    double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(p.count - 1);
    int64_t below = static_cast<int64_t>(std::floor(position));
    int64_t above = std::min(below + 1, p.count - 1);
    double fraction = position - static_cast<double>(below);
    double low = NthValue(counts, below);
    double high = NthValue(counts, above);
    return low + (high - low) * fraction;
  };
  p.p5 = at(0.05);
  p.p50 = at(0.50);
  p.p95 = at(0.95);
  return p;
}

// Merges (n, mean, m2) of one set of values into another's (Chan et al.).
void MergeMoments(int64_t& n, double& mean, double& m2, int64_t n_b, double mean_b, double m2_b) {
  if (n_b == 0) return;
  if (n == 0) {
    n = n_b;
    mean = mean_b;
    m2 = m2_b;
    return;
  }
  const int64_t total = n + n_b;
  const double delta = mean_b - mean;
  mean += delta * static_cast<double>(n_b) / static_cast<double>(total);
  m2 += m2_b + delta * delta * static_cast<double>(n) * static_cast<double>(n_b) /
                   static_cast<double>(total);
  n = total;
}

// Bytes: little-endian fixed-width numbers, strings length-prefixed.
class Writer {
 public:
  void U32(uint32_t v) { Raw(&v, sizeof v); }
  void I64(int64_t v) { Raw(&v, sizeof v); }
  void F64(double v) { Raw(&v, sizeof v); }
  void Str(const std::string& s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  void Counts(const ValueCounts& counts) {
    U32(static_cast<uint32_t>(counts.size()));
    for (const auto& [value, n] : counts) {
      F64(value);
      I64(n);
    }
  }
  std::string Take() { return std::move(out_); }

 private:
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class Reader {
 public:
  explicit Reader(absl::string_view in) : in_(in) {}
  bool U32(uint32_t& v) { return Raw(&v, sizeof v); }
  bool I64(int64_t& v) { return Raw(&v, sizeof v); }
  bool F64(double& v) { return Raw(&v, sizeof v); }
  bool I32(int& v) {
    uint32_t u = 0;
    if (!U32(u)) return false;
    v = static_cast<int>(u);
    return true;
  }
  bool Str(std::string& s) {
    uint32_t n = 0;
    if (!U32(n) || n > in_.size()) return false;
    s.assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  bool Counts(ValueCounts& counts) {
    uint32_t n = 0;
    if (!U32(n) || n > in_.size() / 16) return false;
    counts.resize(n);
    for (auto& [value, count] : counts) {
      if (!F64(value) || !I64(count) || count <= 0) return false;
    }
    return true;
  }
  bool Done() const { return in_.empty(); }

 private:
  bool Raw(void* p, size_t n) {
    if (in_.size() < n) return false;
    std::memcpy(p, in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  absl::string_view in_;
};

constexpr uint32_t kFormat = 1;

}  // namespace

bool CountsForVariability(const Job& job) {
  return job.state == JobState::kSucceeded &&
         VariabilityConfigurations().Matches(ConfigurationOf(job));
}

JobVariability VariabilityOf(const Job& job, const std::vector<IterationSample>& samples,
                             const std::vector<GpuSample>& gpu_samples) {
  JobVariability summary;
  if (!CountsForVariability(job)) return summary;
  const std::map<int, RankDevice> devices = RankDevicesOf(job, gpu_samples);
  std::map<int, std::vector<double>> measured;  // by rank
  for (const IterationSample& s : samples) {
    if (!s.warmup) measured[s.rank].push_back(s.step_time_s);
  }
  std::map<int, MeasuredWindow> windows = MeasuredWindows(samples);
  std::map<int, std::vector<const GpuSample*>> readings_by_rank;
  for (const GpuSample& s : gpu_samples) readings_by_rank[s.rank].push_back(&s);

  for (const auto& [rank, device] : devices) {
    if (device.gpu_uuid.empty()) continue;
    RankVariability& out = summary.ranks.emplace_back();
    out.device = device;
    auto summary_of_rank = job.summaries.find(rank);
    if (summary_of_rank != job.summaries.end()) {
      out.step_time_median_s = summary_of_rank->second.step_time_median_s;
    }
    auto steps = measured.find(rank);
    if (steps != measured.end() && !steps->second.empty()) {
      if (out.step_time_median_s <= 0) out.step_time_median_s = Median(steps->second);
      out.iterations = static_cast<int64_t>(steps->second.size());
      double sum = 0;
      for (double step : steps->second) sum += step;
      out.step_time_mean_s = sum / static_cast<double>(out.iterations);
      for (double step : steps->second) {
        out.step_time_m2 += (step - out.step_time_mean_s) * (step - out.step_time_mean_s);
      }
    }
    auto window = windows.find(rank);
    auto readings = readings_by_rank.find(rank);
    if (window == windows.end() || readings == readings_by_rank.end()) continue;
    const PowerReading power_reading = PowerReading::For(readings->second);
    std::vector<double> clock, power, temperature;
    for (const GpuSample* s : readings->second) {
      double t = static_cast<double>(s->time_unix_ns) / 1e9;
      if (t < window->second.from_s || t > window->second.to_s) continue;
      if (s->sm_clock_mhz) clock.push_back(*s->sm_clock_mhz);
      if (std::optional<double> watts = power_reading.Of(*s)) power.push_back(*watts);
      if (s->temperature_c) temperature.push_back(*s->temperature_c);
    }
    out.sm_clock_mhz = CountsOf(std::move(clock));
    out.power_w = CountsOf(std::move(power));
    out.temperature_c = CountsOf(std::move(temperature));
  }
  return summary;
}

std::string EncodeJobVariability(const JobVariability& summary) {
  Writer w;
  w.U32(kFormat);
  w.U32(static_cast<uint32_t>(summary.ranks.size()));
  for (const RankVariability& r : summary.ranks) {
    w.U32(static_cast<uint32_t>(r.device.rank));
    w.Str(r.device.agent);
    w.Str(r.device.hostname);
    w.U32(static_cast<uint32_t>(r.device.device_index));
    w.Str(r.device.gpu_uuid);
    w.Str(r.device.gpu_name);
    w.F64(r.step_time_median_s);
    w.I64(r.iterations);
    w.F64(r.step_time_mean_s);
    w.F64(r.step_time_m2);
    w.Counts(r.sm_clock_mhz);
    w.Counts(r.power_w);
    w.Counts(r.temperature_c);
  }
  return w.Take();
}

absl::StatusOr<JobVariability> DecodeJobVariability(absl::string_view bytes) {
  Reader r(bytes);
  uint32_t format = 0, ranks = 0;
  if (!r.U32(format) || format != kFormat) {
    return absl::DataLossError(
        absl::StrCat("variability summary: format ", format, " is not ", kFormat));
  }
  if (!r.U32(ranks) || ranks > bytes.size()) {
    return absl::DataLossError("variability summary: bad rank count");
  }
  JobVariability summary;
  summary.ranks.resize(ranks);
  for (uint32_t i = 0; i < ranks; ++i) {
    RankVariability& v = summary.ranks[i];
    if (!r.I32(v.device.rank) || !r.Str(v.device.agent) || !r.Str(v.device.hostname) ||
        !r.I32(v.device.device_index) || !r.Str(v.device.gpu_uuid) || !r.Str(v.device.gpu_name) ||
        !r.F64(v.step_time_median_s) || !r.I64(v.iterations) || !r.F64(v.step_time_mean_s) ||
        !r.F64(v.step_time_m2) || !r.Counts(v.sm_clock_mhz) || !r.Counts(v.power_w) ||
        !r.Counts(v.temperature_c)) {
      return absl::DataLossError(
          absl::StrCat("variability summary: rank entry ", i, " is truncated or malformed"));
    }
  }
  if (!r.Done()) return absl::DataLossError("variability summary: trailing bytes");
  return summary;
}

void VariabilityAggregate::Add(const Job& job, const JobVariability& summary) {
  const ConfigurationKey config = ConfigurationOf(job);
  for (const RankVariability& rank : summary.ranks) {
    PerConfig& gpu = gpus_[rank.device.gpu_uuid][config];
    if (rank.step_time_median_s > 0) gpu.medians.push_back(rank.step_time_median_s);
    gpu.jobs.insert(job.id);
    MergeMoments(gpu.iterations, gpu.mean, gpu.m2, rank.iterations, rank.step_time_mean_s,
                 rank.step_time_m2);
    if (job.seq >= gpu.last_seq) {
      gpu.last_seq = job.seq;
      gpu.last_device = rank.device;
    }
    MergeInto(gpu.sm_clock_mhz, rank.sm_clock_mhz);
    MergeInto(gpu.power_w, rank.power_w);
    MergeInto(gpu.temperature_c, rank.temperature_c);
  }
}

std::vector<GpuVariability> VariabilityAggregate::Finish(double threshold_pct,
                                                         const std::string& model) const {
  auto counted = [&model](const ConfigurationKey& config) {
    return model.empty() || config.model == model;
  };
  std::map<ConfigurationKey, std::vector<double>> fleet;
  for (const auto& [uuid, configs] : gpus_) {
    for (const auto& [config, gpu] : configs) {
      if (!counted(config)) continue;
      std::vector<double>& into = fleet[config];
      into.insert(into.end(), gpu.medians.begin(), gpu.medians.end());
    }
  }
  std::map<ConfigurationKey, double> fleet_median;
  for (const auto& [config, medians] : fleet) {
    if (!medians.empty()) fleet_median[config] = Median(medians);
  }

  std::vector<GpuVariability> out;
  for (const auto& [uuid, configs] : gpus_) {
    std::vector<double> ratios;
    GpuVariability v;
    v.gpu_uuid = uuid;
    int64_t last_seq = -1;
    int64_t n = 0;
    double mean = 0, m2 = 0;
    std::vector<const PerConfig*> matching;
    for (const auto& [config, gpu] : configs) {
      if (!counted(config)) continue;
      matching.push_back(&gpu);
      for (double median : gpu.medians) ratios.push_back(median / fleet_median.at(config));
      v.jobs += static_cast<int>(gpu.jobs.size());
      v.iterations += gpu.iterations;
      if (gpu.last_seq >= last_seq) {
        last_seq = gpu.last_seq;
        v.gpu_name = gpu.last_device.gpu_name;
        v.agent = gpu.last_device.agent;
        v.hostname = gpu.last_device.hostname;
        v.gpu_index = gpu.last_device.device_index;
      }
      auto fleet_of = fleet_median.find(config);
      if (fleet_of != fleet_median.end() && gpu.iterations > 0) {
        const double m = fleet_of->second;
        MergeMoments(n, mean, m2, gpu.iterations, gpu.mean / m, gpu.m2 / (m * m));
      }
    }
    if (ratios.empty()) continue;
    v.normalized_step_time = Median(ratios);
    if (n >= 2 && mean != 0) {
      v.step_time_cv = std::sqrt(m2 / static_cast<double>(n - 1)) / std::abs(mean);
    }
    if (matching.size() == 1) {  // no merged copy needed
      v.sm_clock_mhz = PercentilesOfCounts(matching[0]->sm_clock_mhz);
      v.power_w = PercentilesOfCounts(matching[0]->power_w);
      v.temperature_c = PercentilesOfCounts(matching[0]->temperature_c);
    } else {
      ValueCounts clock, power, temperature;
      for (const PerConfig* gpu : matching) {
        MergeInto(clock, gpu->sm_clock_mhz);
        MergeInto(power, gpu->power_w);
        MergeInto(temperature, gpu->temperature_c);
      }
      v.sm_clock_mhz = PercentilesOfCounts(clock);
      v.power_w = PercentilesOfCounts(power);
      v.temperature_c = PercentilesOfCounts(temperature);
    }
    v.outlier = v.normalized_step_time > 1 + threshold_pct / 100;
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [](const GpuVariability& a, const GpuVariability& b) {
    if (a.normalized_step_time != b.normalized_step_time) {
      return a.normalized_step_time > b.normalized_step_time;
    }
    return a.gpu_uuid < b.gpu_uuid;
  });
  return out;
}

}  // namespace bench
