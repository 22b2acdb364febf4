#include "common/fault_scenario.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <type_traits>

namespace bench {
namespace {

struct ReasonName {
  uint64_t bit;
  const char* name;
};
constexpr ReasonName kReasonNames[] = {
    {throttle::kGpuIdle, "gpu_idle"},       {throttle::kApplicationsClocks, "applications_clocks"},
    {throttle::kSwPowerCap, "sw_power_cap"}, {throttle::kHwSlowdown, "hw_slowdown"},
    {throttle::kSyncBoost, "sync_boost"},   {throttle::kSwThermal, "sw_thermal"},
    {throttle::kHwThermal, "hw_thermal"},   {throttle::kHwPowerBrake, "hw_power_brake"},
};

std::optional<double> ParseDouble(const std::string& text) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<int64_t> ParseInt(const std::string& text) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

// "8%" -> 0.08; a percentage is required, so that 8 and 0.08 cannot be confused.
std::optional<double> ParsePercent(const std::string& text) {
  if (text.size() < 2 || text.back() != '%') return std::nullopt;
  std::optional<double> value = ParseDouble(text.substr(0, text.size() - 1));
  if (!value) return std::nullopt;
  return *value / 100.0;
}

// A 64-bit mix (splitmix64's finalizer): the same input gives the same draw everywhere.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t HashText(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return h;
}

template <typename T>
void Override(std::optional<T>& into, const std::optional<T>& from) {
  if (from) into = from;
}

class LineParser {
 public:
  explicit LineParser(int line) : line_(line) {}
  std::string Error(const std::string& what) const {
    return "line " + std::to_string(line_) + ": " + what;
  }

 private:
  int line_;
};

// Splits "key=value" tokens into a map; false (and *error) on a token without '=' or a
// key given twice.
bool SplitTokens(std::istringstream& in, const LineParser& at, std::map<std::string, std::string>* out,
                 std::string* error) {
  std::string token;
  while (in >> token) {
    if (token[0] == '#') break;
    size_t eq = token.find('=');
    if (eq == std::string::npos || eq == 0) {
      *error = at.Error("expected key=value, got '" + token + "'");
      return false;
    }
    std::string key = token.substr(0, eq);
    if (!out->emplace(key, token.substr(eq + 1)).second) {
      *error = at.Error("'" + key + "' given twice");
      return false;
    }
  }
  return true;
}

}  // namespace

std::string ThrottleReasonName(uint64_t bit) {
  for (const ReasonName& r : kReasonNames) {
    if (r.bit == bit) return r.name;
  }
  return "";
}

std::string ThrottleReasonNames(uint64_t mask) {
  if (mask == 0) return "none";
  std::string out;
  for (int i = 0; i < 64; ++i) {
    uint64_t bit = uint64_t{1} << i;
    if (!(mask & bit)) continue;
    std::string name = ThrottleReasonName(bit);
    if (name.empty()) {
      std::ostringstream hex;
      hex << "0x" << std::hex << bit;
      name = hex.str();
    }
    if (!out.empty()) out += '|';
    out += name;
  }
  return out;
}

std::optional<uint64_t> ParseThrottleReasons(const std::string& names) {
  if (names == "none") return 0;
  uint64_t mask = 0;
  size_t start = 0;
  while (start <= names.size()) {
    size_t bar = names.find('|', start);
    std::string name = names.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    bool known = false;
    for (const ReasonName& r : kReasonNames) {
      if (name == r.name) {
        mask |= r.bit;
        known = true;
      }
    }
    if (!known) return std::nullopt;
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return mask;
}

std::optional<FaultScenario> FaultScenario::Parse(const std::string& text, std::string* error) {
  FaultScenario scenario;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  bool seen_header = false;
  while (std::getline(lines, line)) {
    ++number;
    LineParser at(number);
    std::istringstream in(line);
    std::string kind;
    if (!(in >> kind) || kind[0] == '#') continue;
    if (!seen_header) {
      std::string version;
      if (kind != "benchfleet-scenario" || !(in >> version)) {
        *error = at.Error("expected 'benchfleet-scenario 1' first");
        return std::nullopt;
      }
      if (version != "1") {
        *error = at.Error("scenario format version " + version + " is not supported (1 is)");
        return std::nullopt;
      }
      seen_header = true;
      continue;
    }
    if (kind == "seed") {
      std::string value;
      std::optional<int64_t> seed;
      if (!(in >> value) || !(seed = ParseInt(value)) || *seed < 0) {
        *error = at.Error("seed takes a non-negative integer");
        return std::nullopt;
      }
      scenario.seed_ = static_cast<uint64_t>(*seed);
      continue;
    }
    if (kind == "epoch") {
      std::string value;
      std::optional<double> epoch;
      if (!(in >> value) || !(epoch = ParseDouble(value)) || *epoch < 0) {
        *error = at.Error("epoch takes a Unix time in seconds");
        return std::nullopt;
      }
      scenario.epoch_unix_s_ = epoch;
      continue;
    }
    if (kind != "gpu" && kind != "rank") {
      *error = at.Error("unknown rule '" + kind + "' (gpu, rank, seed or epoch)");
      return std::nullopt;
    }
    std::map<std::string, std::string> tokens;
    if (!SplitTokens(in, at, &tokens, error)) return std::nullopt;
    auto bad = [&](const std::string& key, const std::string& what) {
      *error = at.Error(key + "=" + tokens[key] + ": " + what);
      return std::nullopt;
    };
    if (kind == "gpu") {
      GpuRule rule;
      for (const auto& [key, token] : tokens) {
        // A plain reference: clang before 16 cannot capture a structured binding.
        const std::string& value = token;
        GpuState& s = rule.set;
        auto real = [&](std::optional<double>& into) {
          into = ParseDouble(value);
          return into.has_value();
        };
        auto whole = [&](auto& into) {
          std::optional<int64_t> v = ParseInt(value);
          if (!v || *v < 0) return false;
          into = static_cast<typename std::remove_reference_t<decltype(into)>::value_type>(*v);
          return true;
        };
        bool ok = true;
        if (key == "node") {
          rule.node = value;
          ok = !value.empty();
        } else if (key == "gpu") {
          std::optional<int64_t> v = value == "*" ? std::optional<int64_t>(-1) : ParseInt(value);
          ok = v && *v >= -1;
          if (ok) rule.gpu = static_cast<int>(*v);
        } else if (key == "from") {
          std::optional<double> v = ParseDouble(value);
          ok = v && *v >= 0;
          if (ok) rule.from_s = *v;
        } else if (key == "to") {
          if (value != "end") {
            ok = real(rule.to_s) && *rule.to_s >= 0;
          }
        } else if (key == "sm_clock_mhz") {
          ok = real(s.sm_clock_mhz);
        } else if (key == "max_sm_clock_mhz") {
          ok = real(s.max_sm_clock_mhz);
        } else if (key == "memory_clock_mhz") {
          ok = real(s.memory_clock_mhz);
        } else if (key == "max_memory_clock_mhz") {
          ok = real(s.max_memory_clock_mhz);
        } else if (key == "power_w") {
          ok = real(s.power_w);
        } else if (key == "power_limit_w") {
          ok = real(s.power_limit_w);
        } else if (key == "temperature_c") {
          ok = real(s.temperature_c);
        } else if (key == "throttle") {
          s.throttle_reasons = ParseThrottleReasons(value);
          if (!s.throttle_reasons) {
            return bad(key, "unknown reason (known: gpu_idle, applications_clocks, sw_power_cap, "
                            "hw_slowdown, sync_boost, sw_thermal, hw_thermal, hw_power_brake, none)");
          }
        } else if (key == "pcie_gen") {
          ok = whole(s.pcie_gen);
        } else if (key == "pcie_gen_max") {
          ok = whole(s.pcie_gen_max);
        } else if (key == "pcie_width") {
          ok = whole(s.pcie_width);
        } else if (key == "pcie_width_max") {
          ok = whole(s.pcie_width_max);
        } else if (key == "ecc_corrected") {
          ok = whole(s.ecc_corrected);
        } else if (key == "ecc_uncorrected") {
          ok = whole(s.ecc_uncorrected);
        } else if (key == "xid_errors") {
          ok = whole(s.xid_errors);
        } else if (key == "speed") {
          ok = real(s.speed) && *s.speed > 0;
        } else if (key == "speed_spread") {
          s.speed_spread = ParsePercent(value);
          ok = s.speed_spread && *s.speed_spread >= 0 && *s.speed_spread < 1;
          if (!ok) return bad(key, "a percentage in [0%, 100%), e.g. 8%");
        } else {
          *error = at.Error("gpu rule: unknown key '" + key + "'");
          return std::nullopt;
        }
        if (!ok) return bad(key, "not a valid value");
      }
      if (rule.node.empty()) {
        *error = at.Error("gpu rule needs node= (a name or *)");
        return std::nullopt;
      }
      if (!tokens.count("gpu")) {
        *error = at.Error("gpu rule needs gpu= (an index or *)");
        return std::nullopt;
      }
      if (rule.to_s && *rule.to_s < rule.from_s) {
        *error = at.Error("to= is before from=");
        return std::nullopt;
      }
      scenario.gpu_rules_.push_back(std::move(rule));
    } else if (kind == "rank") {
      RankRule rule;
      if (!tokens.count("rank")) {
        *error = at.Error("rank rule needs rank= (a global rank or *)");
        return std::nullopt;
      }
      for (const auto& [key, value] : tokens) {
        if (key == "rank") {
          std::optional<int64_t> v = value == "*" ? std::optional<int64_t>(-1) : ParseInt(value);
          if (!v || *v < -1) return bad(key, "a rank (0, 1, ...) or *");
          rule.rank = static_cast<int>(*v);
        } else if (key == "iterations") {
          if (value == "*") continue;
          size_t dash = value.find('-');
          std::optional<int64_t> first = ParseInt(value.substr(0, dash));
          std::optional<int64_t> last =
              dash == std::string::npos ? first : ParseInt(value.substr(dash + 1));
          if (!first || !last || *first < 1 || *last < *first) {
            return bad(key, "A-B with 1 <= A <= B, A, or *");
          }
          rule.first_iteration = static_cast<int>(*first);
          rule.last_iteration = static_cast<int>(*last);
        } else if (key == "extra_compute") {
          rule.extra_compute_fraction = ParsePercent(value);
          if (!rule.extra_compute_fraction || *rule.extra_compute_fraction < 0) {
            return bad(key, "a non-negative percentage, e.g. 8%");
          }
        } else if (key == "data_stall_s") {
          rule.data_stall_s = ParseDouble(value);
          if (!rule.data_stall_s || *rule.data_stall_s < 0) return bad(key, "seconds, >= 0");
        } else {
          *error = at.Error("rank rule: unknown key '" + key + "'");
          return std::nullopt;
        }
      }
      scenario.rank_rules_.push_back(rule);
    }
  }
  if (!seen_header) {
    *error = "line " + std::to_string(number + 1) + ": expected 'benchfleet-scenario 1' first";
    return std::nullopt;
  }
  return scenario;
}

std::optional<FaultScenario> FaultScenario::Load(const std::string& path, std::string* error) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    *error = path + ": cannot read";
    return std::nullopt;
  }
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) {
    *error = path + ": cannot read";
    return std::nullopt;
  }
  std::optional<FaultScenario> scenario = Parse(text.str(), error);
  if (!scenario) *error = path + ": " + *error;
  return scenario;
}

GpuState FaultScenario::GpuAt(const std::string& node, int gpu, double seconds) const {
  GpuState state;
  for (const GpuRule& rule : gpu_rules_) {
    if (rule.node != "*" && rule.node != node) continue;
    if (rule.gpu != -1 && rule.gpu != gpu) continue;
    if (seconds < rule.from_s || (rule.to_s && seconds > *rule.to_s)) continue;
    const GpuState& s = rule.set;
    Override(state.sm_clock_mhz, s.sm_clock_mhz);
    Override(state.max_sm_clock_mhz, s.max_sm_clock_mhz);
    Override(state.memory_clock_mhz, s.memory_clock_mhz);
    Override(state.max_memory_clock_mhz, s.max_memory_clock_mhz);
    Override(state.power_w, s.power_w);
    Override(state.power_limit_w, s.power_limit_w);
    Override(state.temperature_c, s.temperature_c);
    Override(state.throttle_reasons, s.throttle_reasons);
    Override(state.pcie_gen, s.pcie_gen);
    Override(state.pcie_gen_max, s.pcie_gen_max);
    Override(state.pcie_width, s.pcie_width);
    Override(state.pcie_width_max, s.pcie_width_max);
    Override(state.ecc_corrected, s.ecc_corrected);
    Override(state.ecc_uncorrected, s.ecc_uncorrected);
    Override(state.xid_errors, s.xid_errors);
    Override(state.speed, s.speed);
    Override(state.speed_spread, s.speed_spread);
  }
  return state;
}

double FaultScenario::SpeedOf(const std::string& node, int gpu, double seconds) const {
  GpuState state = GpuAt(node, gpu, seconds);
  double speed = state.speed.value_or(1.0);
  if (state.speed_spread && *state.speed_spread > 0) {
    uint64_t draw = Mix(seed_ ^ Mix(HashText(node) ^ Mix(static_cast<uint64_t>(gpu) + 1)));
    double unit = static_cast<double>(draw >> 11) * 0x1.0p-53;  // [0, 1)
    speed *= 1.0 + (unit - 0.5) * *state.speed_spread;
  }
  return speed;
}

RankEffect FaultScenario::RankAt(int rank, int iteration) const {
  RankEffect effect;
  for (const RankRule& rule : rank_rules_) {
    if (rule.rank != -1 && rule.rank != rank) continue;
    if (iteration < rule.first_iteration) continue;
    if (rule.last_iteration != -1 && iteration > rule.last_iteration) continue;
    if (rule.extra_compute_fraction) effect.extra_compute_fraction = *rule.extra_compute_fraction;
    if (rule.data_stall_s) effect.data_stall_s = *rule.data_stall_s;
  }
  return effect;
}

}  // namespace bench
