// Whether a sample or a rank summary an agent sends is plausible for its job (docs/limits.md,
// "Agent inventories and samples"). Each check returns the reason it refuses the value, one
// of a bounded set used as the `reason` label of /metrics' bench_ingest_errors_total and
// bench_rank_reports_rejected_total, or nullopt when the value may be stored. Pure.
//
// An iteration sample: finite, non-negative step, data and elapsed times and, each where
// present, step split times (compute, forward-backward, all-reduce wait, optimizer)
// (kBadTime), below kMaxSampleSeconds; 0 < images <= the spec's per-device batch
// (kBadImages); 1 <= iteration <= the spec's iterations (kBadIteration). Its loss is not checked: a non-finite loss is
// data (stored and counted).
// A GPU reading: only for a rank on a CUDA device (kGpuOnCpuRank), only of the GPU that
// rank holds on the sending agent, by index and UUID from its registered inventory
// (kGpuNotHeld), and each reading present finite and within physical bounds
// (kBadGpuReading).
// A rank summary: finite, non-negative figures, measured iterations within the job, images
// within iterations x batch, a window no shorter than half its iterations' median step, and,
// when it claims measured images, a measured sample of the rank stored (an agent sends the
// summary after the samples) and a throughput (measured images / window, the figure
// results.cc's JobThroughput sums) at most twice a full batch per the fastest stored
// measured step (kBadSummary).
#pragma once

#include <optional>
#include <string_view>

#include "server/core/job.h"

namespace bench {

// Samples that match no rank placed on the sender (checked by the JobManager).
inline constexpr std::string_view kUnknownJob = "unknown_job";
inline constexpr std::string_view kStaleAttempt = "stale_attempt";
inline constexpr std::string_view kRankNotOnAgent = "rank_not_on_agent";
inline constexpr std::string_view kFencedAgent = "fenced";
inline constexpr std::string_view kBadSequence = "bad_sequence";  // a GPU reading's seq < 1
// Samples or summaries implausible for their job (checked here).
inline constexpr std::string_view kBadTime = "bad_time";
inline constexpr std::string_view kBadImages = "bad_images";
inline constexpr std::string_view kBadIteration = "bad_iteration";
inline constexpr std::string_view kGpuOnCpuRank = "gpu_on_cpu_rank";
inline constexpr std::string_view kGpuNotHeld = "gpu_not_held";
inline constexpr std::string_view kBadGpuReading = "bad_gpu_reading";
inline constexpr std::string_view kBadSummary = "bad_summary";

// No step, data or elapsed time above this (a year) is plausible.
inline constexpr double kMaxSampleSeconds = 365.0 * 24 * 3600;
inline constexpr double kMaxGpuTemperatureC = 200;
inline constexpr double kMaxGpuPowerW = 10000;
inline constexpr double kMaxGpuEnergyJ = 1e15;
inline constexpr double kMaxGpuClockMhz = 100000;

std::optional<std::string_view> IterationSampleRejection(const IterationSample& sample,
                                                         const JobSpec& spec);
// `held`: the GPU of the sender's inventory that the reading's rank holds (the device
// index its placement gives it on that agent); null when there is none.
std::optional<std::string_view> GpuSampleRejection(const GpuSample& sample, DeviceKind rank_device,
                                                   const Gpu* held);
// `fastest_step_s`: the rank's fastest stored measured step time; nullopt when none is stored.
std::optional<std::string_view> SummaryRejection(const RankSummary& summary, const JobSpec& spec,
                                                 std::optional<double> fastest_step_s);

}  // namespace bench
