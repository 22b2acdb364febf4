// A fault scenario: one text file that plants faults for tests and demonstrations. The
// fake NVML (tests/fake_nvml) reads its GPU rules, bench-train's --fault-scenario and the
// simulated trainer its rank rules, so that one file drives telemetry and timings alike.
// The format (docs/diagnosis.md "Planted faults"):
//
//   benchfleet-scenario 1              first non-comment line: the format and its version
//   seed 42                            the seed of every random draw (default 1)
//   epoch 1795000000.5                 optional: GPU rule times count from this Unix time
//   gpu node=n1 gpu=2 from=30 to=end throttle=hw_thermal sm_clock_mhz=1200
//   gpu node=* gpu=* speed_spread=8%
//   rank rank=5 iterations=200-300 extra_compute=8%
//   rank rank=* iterations=50-60 data_stall_s=0.2
//
// `#` starts a comment; blank lines are ignored; a rule is its kind and `key=value` tokens.
// GPU rules select node (name or *) and gpu (index or *), and a time range in seconds
// (from=, default 0; to=, a number or `end`, the default) since the scenario's epoch, or,
// without one, since the reader first read the file (the fake NVML: its nvmlInit). A test
// that must place a fault inside a running job rewrites the file with an epoch; readers
// that run long re-read the file when it changes. Rank
// rules select rank (global rank or *) and iterations (A-B inclusive, A, or *). Where
// several rules set a field, the later one wins. Standard library only: bench-train and the
// fake NVML (a shared library of its own) link it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bench {

// NVML's clock-event ("throttle") reason bits, nvmlClocksEventReasons.
namespace throttle {
inline constexpr uint64_t kGpuIdle = 0x1;
inline constexpr uint64_t kApplicationsClocks = 0x2;
inline constexpr uint64_t kSwPowerCap = 0x4;
inline constexpr uint64_t kHwSlowdown = 0x8;
inline constexpr uint64_t kSyncBoost = 0x10;
inline constexpr uint64_t kSwThermal = 0x20;
inline constexpr uint64_t kHwThermal = 0x40;
inline constexpr uint64_t kHwPowerBrake = 0x80;
}  // namespace throttle

// The reason's scenario name ("hw_thermal"), or "" for a bit without one.
std::string ThrottleReasonName(uint64_t bit);
// The mask's names joined by '|', lowest bit first; "none" for 0; unknown bits as hex.
std::string ThrottleReasonNames(uint64_t mask);
// Parses "hw_thermal|sw_power_cap" or "none"; nullopt for an unknown name.
std::optional<uint64_t> ParseThrottleReasons(const std::string& names);

// What a GPU shows at one moment; a field no rule sets is unset.
struct GpuState {
  std::optional<double> sm_clock_mhz, max_sm_clock_mhz;
  std::optional<double> memory_clock_mhz, max_memory_clock_mhz;
  std::optional<double> power_w, power_limit_w, temperature_c;
  std::optional<uint64_t> throttle_reasons;
  std::optional<int> pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
  std::optional<int64_t> ecc_corrected, ecc_uncorrected, xid_errors;
  std::optional<double> speed;         // silicon speed, 1 = nominal (simulated devices)
  std::optional<double> speed_spread;  // natural spread, a fraction (0.08 for 8%)
};

// What a rank's rules do to one of its iterations.
struct RankEffect {
  double extra_compute_fraction = 0;  // forward+backward this much longer (0.08: 8 % longer)
  double data_stall_s = 0;            // this much more waiting for data
};

class FaultScenario {
 public:
  // nullopt on a malformed text, with *error saying "line N: what is wrong".
  static std::optional<FaultScenario> Parse(const std::string& text, std::string* error);
  // Reads and parses a file; an error names it: "PATH: line N: ...", "PATH: cannot read".
  static std::optional<FaultScenario> Load(const std::string& path, std::string* error);

  uint64_t seed() const { return seed_; }
  // The `epoch` line's Unix time in seconds; unset without one.
  std::optional<double> epoch_unix_s() const { return epoch_unix_s_; }
  bool has_gpu_rules() const { return !gpu_rules_.empty(); }
  bool has_rank_rules() const { return !rank_rules_.empty(); }

  // GPU `gpu` of node `node`, `seconds` after its first reading: the rules that match it
  // and are active then, later ones overriding earlier ones field by field.
  GpuState GpuAt(const std::string& node, int gpu, double seconds) const;
  // Its silicon speed then: `speed` (1 where unset) times a draw, fixed by (seed, node,
  // gpu), uniform in [1 - spread/2, 1 + spread/2] for its `speed_spread` (none where unset).
  double SpeedOf(const std::string& node, int gpu, double seconds) const;
  // Iteration `iteration` (1-based) of global rank `rank`.
  RankEffect RankAt(int rank, int iteration) const;

 private:
  struct GpuRule {
    std::string node;  // "*" for any
    int gpu = -1;      // -1 for any
    double from_s = 0;
    std::optional<double> to_s;  // unset: to the end
    GpuState set;
  };
  struct RankRule {
    int rank = -1;  // -1 for any
    int first_iteration = 1;
    int last_iteration = -1;  // -1: to the end
    std::optional<double> extra_compute_fraction, data_stall_s;
  };
  uint64_t seed_ = 1;
  std::optional<double> epoch_unix_s_;
  std::vector<GpuRule> gpu_rules_;
  std::vector<RankRule> rank_rules_;
};

}  // namespace bench
