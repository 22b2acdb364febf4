// An NVML session: libnvidia-ml loaded at run time (dlopen, so the agent builds and runs
// without the NVIDIA driver), initialised once, shut down and unloaded at destruction.
// The inventory needs a few entry points (required); telemetry readings use others
// that older drivers or GPUs may lack (optional: a reading NVML cannot give is unset).
// XID errors come as NVML events: the session registers every GPU for
// nvmlEventTypeXidCriticalError at open and counts the events per GPU at each Read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/gpu_info.h"

namespace bench::agent {

inline constexpr char kDefaultNvmlLibrary[] = "libnvidia-ml.so.1";

// ListGpus's type: one GPU as common/gpu_info.h has it, the type benchd keeps it in too.
using ::bench::GpuInfo;

// One reading of one GPU. A field is unset where NVML cannot give it (entry point
// absent, NVML_ERROR_NOT_SUPPORTED, any other error).
struct GpuReading {
  std::optional<double> power_w;          // instantaneous (field NVML_FI_DEV_POWER_INSTANT)
  std::optional<double> power_average_w;  // nvmlDeviceGetPowerUsage (driver-averaged)
  std::optional<double> energy_j;         // nvmlDeviceGetTotalEnergyConsumption
  std::optional<double> sm_clock_mhz;
  std::optional<double> memory_clock_mhz;
  std::optional<double> temperature_c;
  std::optional<double> gpu_utilization_pct;
  std::optional<double> memory_utilization_pct;
  std::optional<int64_t> memory_used_bytes;
  std::optional<uint64_t> throttle_reasons;  // nvmlClocksThrottleReasons bit mask
  // PCIe link generation and width (lanes): nvmlDeviceGetCurr/MaxPcieLink{Generation,Width}.
  std::optional<int> pcie_gen;
  std::optional<int> pcie_gen_max;
  std::optional<int> pcie_width;
  std::optional<int> pcie_width_max;
  std::optional<double> max_sm_clock_mhz;  // nvmlDeviceGetMaxClockInfo
  std::optional<double> max_memory_clock_mhz;
  std::optional<double> power_limit_w;  // nvmlDeviceGetEnforcedPowerLimit
  // nvmlDeviceGetTotalEccErrors(NVML_VOLATILE_ECC): since the driver loaded.
  std::optional<int64_t> ecc_corrected;
  std::optional<int64_t> ecc_uncorrected;
  // XID critical-error events on this GPU since this session opened (unset where the GPU
  // cannot be registered for them).
  std::optional<int64_t> xid_errors;
};

// Reads one GPU by its NVML index. Implementations are thread-safe.
class GpuReader {
 public:
  virtual ~GpuReader() = default;
  virtual GpuReading Read(int gpu_index) = 0;
};

// Thread-safe (NVML serialises itself); owns the library handle and one nvmlInit_v2.
class Nvml : public GpuReader {
 public:
  // dlopen()s `library` (a file name searched the usual way, or a path) and calls
  // nvmlInit_v2. NOT_FOUND if the library or a required symbol is missing
  // ("cannot load <library>: <dlerror>"); UNAVAILABLE if nvmlInit_v2 fails (e.g. no
  // driver).
  static absl::StatusOr<std::unique_ptr<Nvml>> Open(const std::string& library);
  ~Nvml() override;  // nvmlShutdown, dlclose
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // The GPUs NVML sees (index order, which is PCI bus order). UNAVAILABLE on an NVML
  // error; empty if there is no GPU.
  absl::StatusOr<std::vector<GpuInfo>> ListGpus() const;
  // The system's versions where NVML gives them: "driver" (nvmlSystemGetDriverVersion),
  // "nvml" (nvmlSystemGetNVMLVersion), "cuda_driver" ("12.4", from
  // nvmlSystemGetCudaDriverVersion). Absent keys: not offered.
  std::map<std::string, std::string> SystemVersions() const;
  // Every reading NVML offers for GPU `gpu_index`; all unset if there is no such GPU.
  // First drains the XID events that arrived since the last Read (nvmlEventSetWait_v2
  // with timeout 0: never blocks) into the per-GPU counts.
  GpuReading Read(int gpu_index) override;

  const std::string& library() const { return library_; }

 private:
  struct Api;
  Nvml(std::string library, void* handle, std::unique_ptr<Api> api);
  // Creates the XID event set and registers every GPU that supports it.
  void RegisterXidEvents();
  // Counts the XID events waiting in the set (non-blocking).
  void DrainXidEventsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(xid_mu_);

  const std::string library_;
  void* const handle_;
  const std::unique_ptr<Api> api_;
  absl::Mutex xid_mu_;
  void* xid_events_ = nullptr;  // nvmlEventSet_t; null where events are not offered
  // GPU handle -> its index, for the GPUs registered for XID events; their counts.
  std::map<const void*, int> xid_devices_;
  std::map<int, int64_t> xid_counts_ ABSL_GUARDED_BY(xid_mu_);
};

}  // namespace bench::agent
