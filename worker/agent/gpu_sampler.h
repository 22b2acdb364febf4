// Samples the GPUs that ranks run on, on one thread, at a fixed rate.
//
// A rank registers its GPU when it is spawned and unregisters it when it exits. Every
// period the sampler reads each registered GPU (GpuReader: NVML in production) and
// hands a GpuSample to the sink: tied to (job, attempt, rank, GPU UUID), numbered seq
// 1, 2, ... per (job, attempt, rank), and stamped with the wall clock in the middle of
// the NVML calls (which can take milliseconds). Unregister takes a final reading
// first, so that a rank's window is covered to its end. Ticks run at start + k *
// period; ticks missed while a tick overran are skipped, not bunched. The thread
// sleeps while nothing is registered.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "benchfleet/v1/types.pb.h"
#include "worker/agent/nvml.h"
#include "worker/agent/sinks.h"

namespace bench::agent {

struct GpuSamplerOptions {
  absl::Duration period = absl::Milliseconds(100);  // 10 Hz; must be > 0
  // The time stamp of each sample (tests inject a fake). Default: absl::Now().
  std::function<absl::Time()> now;
};

// The sampling period for `hz` readings per second; zero (sampling off) for hz <= 0.
absl::Duration GpuSamplePeriod(double hz);

// Copies the readings that are set into `sample` (the others stay unset).
void FillGpuSample(const GpuReading& reading, benchfleet::v1::GpuSample* sample);

// Thread-safe. `reader` and `sink` are not owned and must outlive the sampler.
class GpuSampler {
 public:
  GpuSampler(GpuReader* reader, GpuSampleSink* sink, GpuSamplerOptions options = {});
  ~GpuSampler();  // Shutdown()
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;

  // Starts sampling GPU `gpu_index` (UUID `gpu_uuid`) for (job_id, attempt, rank); the
  // first reading is taken at the next tick. Registering the same (job, attempt, rank)
  // again replaces its GPU and keeps its seq.
  void Register(const std::string& job_id, int attempt, int rank, int gpu_index,
                const std::string& gpu_uuid);
  // Takes a final reading of the rank's GPU and stops sampling it. Returns the sink's
  // ticket of that final sample (0 if the rank was not registered or the sampler is
  // shut down), for SampleSink::WaitDelivered.
  uint64_t Unregister(const std::string& job_id, int attempt, int rank);

  // Stops the thread; later Register/Unregister calls take no readings. Idempotent.
  void Shutdown();

  absl::Duration period() const { return options_.period; }

 private:
  using Key = std::tuple<std::string, int, int>;  // (job, attempt, rank)
  struct Target {
    int gpu_index = 0;
    std::string gpu_uuid;
    int64_t next_seq = 1;
  };

  void Run();
  // Reads `target`'s GPU and hands the sample to the sink; returns the ticket.
  uint64_t SampleLocked(const Key& key, Target* target) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  GpuReader* const reader_;
  GpuSampleSink* const sink_;
  const GpuSamplerOptions options_;

  // Held while reading, so that a rank's samples reach the sink in seq order.
  absl::Mutex mu_;
  absl::CondVar cv_;
  std::map<Key, Target> targets_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// An agent's GPU telemetry: an NVML session and a sampler feeding a sink, or, where
// they cannot be had, the note that its GPU ranks' reports carry instead.
struct GpuTelemetrySession {
  std::unique_ptr<Nvml> nvml;
  std::unique_ptr<GpuSampler> sampler;  // null: GPUs are not sampled, see note
  std::string note;  // e.g. "no GPU telemetry: cannot load libnvidia-ml.so.1: ..."
};

// Opens `nvml_library` and starts a sampler at `hz` readings per second feeding `sink`
// (not owned, must outlive the session). hz <= 0 turns sampling off (with a note).
GpuTelemetrySession StartGpuTelemetry(const std::string& nvml_library, double hz,
                                      GpuSampleSink* sink);

}  // namespace bench::agent
