#include "server/metrics/live_metrics.h"

#include <algorithm>
#include <vector>

#include "server/results/results.h"
#include "server/results/telemetry.h"

namespace bench {

LiveMetrics::LiveMetrics(absl::Duration retention) : retention_(retention) {}

void LiveMetrics::PruneLocked(absl::Time now) {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (it->second.state.ended && now - it->second.ended_at > retention_) {
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
}

void LiveMetrics::JobStarted(const std::string& job_id, JobLabels labels) {
  absl::MutexLock lock(&mu_);
  PruneLocked(absl::Now());  // bounded even when nobody scrapes
  Entry& entry = jobs_[job_id];
  entry = Entry{};
  entry.state.labels = std::move(labels);
}

std::optional<double> LiveMetrics::RateOf(const RankWindow& window) {
  if (window.recent.empty()) return std::nullopt;
  const WindowEntry& first = window.recent.front();
  double from = 0;
  int64_t images = 0;
  if (first.iteration == 1) {
    images += first.images;  // iteration 1 starts at elapsed 0
  } else {
    from = first.elapsed_s;
  }
  for (size_t i = 1; i < window.recent.size(); ++i) images += window.recent[i].images;
  double seconds = window.recent.back().elapsed_s - from;
  if (seconds <= 0 || images <= 0) return std::nullopt;
  return static_cast<double>(images) / seconds;
}

void LiveMetrics::AddToWindow(RankWindow& window, const IterationSample& sample) {
  auto& recent = window.recent;
  const WindowEntry entry{sample.iteration, sample.elapsed_s, sample.images};
  // Mostly the next iteration: at the end.
  auto at = recent.empty() || recent.back().iteration < sample.iteration
                ? recent.end()
                : std::lower_bound(recent.begin(), recent.end(), sample.iteration,
                                   [](const WindowEntry& e, int iteration) {
                                     return e.iteration < iteration;
                                   });
  if (at != recent.end() && at->iteration == sample.iteration) {
    *at = entry;
    return;
  }
  recent.insert(at, entry);
  if (recent.size() > static_cast<size_t>(kWindow) + 1) recent.erase(recent.begin());
}

void LiveMetrics::UpdateRate(Entry& entry, int rank) {
  entry.state.ranks[rank].images_per_second = RateOf(entry.windows[rank]);
}

std::optional<double> LiveMetrics::SumOfRanks(const JobState& state) {
  double total = 0;
  bool any = false;
  for (const auto& [index, rank] : state.ranks) {
    if (!rank.images_per_second) continue;
    total += *rank.images_per_second;
    any = true;
  }
  return any ? std::optional<double>(total) : std::nullopt;
}

void LiveMetrics::RecordIteration(const std::string& job_id, const std::string& node,
                                  const IterationSample& sample) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end() || it->second.state.ended) return;
  Entry& entry = it->second;
  AddToWindow(entry.windows[sample.rank], sample);
  entry.state.ranks[sample.rank].node = node;
  UpdateRate(entry, sample.rank);
}

void LiveMetrics::RecordIterations(const std::string& node,
                                   const std::vector<IterationSample>& samples) {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<Entry*, int>> touched;  // (job, rank): rates once, at the end
  const std::string* last_id = nullptr;
  Entry* entry = nullptr;
  for (const IterationSample& sample : samples) {
    if (last_id == nullptr || *last_id != sample.job_id) {
      last_id = &sample.job_id;
      auto it = jobs_.find(sample.job_id);
      entry = it == jobs_.end() || it->second.state.ended ? nullptr : &it->second;
    }
    if (entry == nullptr) continue;
    AddToWindow(entry->windows[sample.rank], sample);
    entry->state.ranks[sample.rank].node = node;
    if (touched.empty() || touched.back() != std::make_pair(entry, sample.rank)) {
      touched.emplace_back(entry, sample.rank);
    }
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (const auto& [job, rank] : touched) UpdateRate(*job, rank);
}

void LiveMetrics::RecordGpuSample(const std::string& job_id, const std::string& node,
                                  const GpuSample& sample) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end() || it->second.state.ended) return;
  RankState& rank = it->second.state.ranks[sample.rank];
  rank.node = node;
  if (!rank.gpu || rank.gpu->seq < sample.seq) rank.gpu = sample;
}

void LiveMetrics::RecordGpuSamples(const std::string& node, const std::vector<GpuSample>& samples) {
  // The latest of the batch per (job, rank) first: an agent's upload carries several
  // readings of each GPU, and only the latest is kept.
  std::map<std::pair<std::string_view, int>, const GpuSample*> latest;
  for (const GpuSample& sample : samples) {
    const GpuSample*& kept = latest[{sample.job_id, sample.rank}];
    if (kept == nullptr || kept->seq < sample.seq) kept = &sample;
  }
  absl::MutexLock lock(&mu_);
  for (const auto& [key, sample] : latest) {
    auto it = jobs_.find(sample->job_id);
    if (it == jobs_.end() || it->second.state.ended) continue;
    RankState& rank = it->second.state.ranks[sample->rank];
    rank.node = node;
    if (!rank.gpu || rank.gpu->seq < sample->seq) rank.gpu = *sample;
  }
}

void LiveMetrics::RankEnded(const std::string& job_id, int rank) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  auto r = it->second.state.ranks.find(rank);
  if (r != it->second.state.ranks.end()) r->second.gpu.reset();
}

void LiveMetrics::JobEnded(const std::string& job_id, std::optional<double> images_per_second,
                           absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  Entry& entry = it->second;
  entry.state.ended = true;
  entry.ended_at = now;
  entry.state.images_per_second = images_per_second;
  // An ended job's series are its own (measured rate, energy): its ranks have none left,
  // so none is kept through the retention (nor copied by each Take).
  entry.state.ranks.clear();
  entry.windows.clear();
}

void LiveMetrics::SetEnergyPerImage(const std::string& job_id, double joules) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it != jobs_.end()) it->second.state.energy_per_image_j = joules;
}

void LiveMetrics::CountStored(int64_t samples, int64_t gpu_samples, int64_t duplicates) {
  absl::MutexLock lock(&mu_);
  counters_.samples_ingested += samples;
  counters_.gpu_samples_ingested += gpu_samples;
  counters_.duplicates += duplicates;
}

void LiveMetrics::CountIngestErrors(const std::string& reason, int64_t count) {
  absl::MutexLock lock(&mu_);
  counters_.ingest_errors[reason] += count;
}

void LiveMetrics::CountRankReportRejected(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  counters_.rank_reports_rejected[reason] += 1;
}

void LiveMetrics::OnStateChanged(const Job& job) {
  if (job.state == bench::JobState::kRunning) {
    JobStarted(job.id, {job.spec.model, PrecisionText(job.spec.precision), job.spec.batch_size,
                        job.spec.devices, job.simulated});
  } else if (IsTerminal(job.state) && job.attempt > 0) {
    std::optional<double> throughput;
    if (job.state == bench::JobState::kSucceeded) {
      throughput = ThroughputOf(job);
    }
    JobEnded(job.id, throughput, job.history.empty() ? absl::Now() : job.history.back().time);
  }
}

void LiveMetrics::OnRankEnded(const Job& job, int rank) { RankEnded(job.id, rank); }

void LiveMetrics::MarkSimulated(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it != jobs_.end()) it->second.state.labels.simulated = true;
}

void LiveMetrics::OnSimulated(const Job& job) { MarkSimulated(job.id); }

void LiveMetrics::OnRankReportRefused(const std::string& /*job_id*/, std::string_view reason) {
  CountRankReportRejected(std::string(reason));
}

void LiveMetrics::OnSamplesScreened(const std::string& agent, const ScreenedSamples& screened) {
  RecordIterations(agent, screened.iterations);
  RecordGpuSamples(agent, screened.gpu_samples);
  // Every sample not stored is counted by reason (bench_ingest_errors_total).
  for (const auto& [reason, count] : screened.rejected) {
    CountIngestErrors(std::string(reason), count);
  }
}

void LiveMetrics::OnSamplesStored(int64_t samples, int64_t gpu_samples, int64_t duplicates) {
  CountStored(samples, gpu_samples, duplicates);
}

void LiveMetrics::OnSamplesNotStored(int64_t count) { CountIngestErrors("store_failed", count); }

void LiveMetrics::OnTelemetryJoined(const Job& job) {
  if (std::optional<double> energy = JobEnergyPerImage(job)) SetEnergyPerImage(job.id, *energy);
}

LiveMetrics::Snapshot LiveMetrics::Take(absl::Time now) {
  absl::MutexLock lock(&mu_);
  Snapshot snapshot;
  PruneLocked(now);
  for (const auto& [id, entry] : jobs_) {
    JobState& state = snapshot.jobs.emplace(id, entry.state).first->second;
    if (!state.ended) state.images_per_second = SumOfRanks(state);
  }
  snapshot.counters = counters_;
  snapshot.agent_rpcs = agent_rpcs_.Read();
  return snapshot;
}

void LiveMetrics::VisitLatestGpu(
    absl::Time now,
    absl::FunctionRef<void(const std::string&, int, const std::string&, const GpuSample&)> visit) {
  absl::MutexLock lock(&mu_);
  PruneLocked(now);
  for (const auto& [id, entry] : jobs_) {
    if (entry.state.ended) continue;
    for (const auto& [rank, state] : entry.state.ranks) {
      if (state.gpu) visit(id, rank, state.node, *state.gpu);
    }
  }
}

}  // namespace bench
