#include "worker/sim/sim_flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "common/names.h"
#include "common/trainer_contract.h"

namespace bench::sim {
namespace {

namespace contract = bench::trainer_contract;

bool ParseInt(const std::string& text, int* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || value < -1000000000L || value > 1000000000L) return false;
  *out = static_cast<int>(value);
  return true;
}

bool ParseDouble(const std::string& text, double* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(value)) return false;
  *out = value;
  return true;
}

template <size_t N>
bool OneOf(const std::string& value, const char* const (&names)[N]) {
  for (const char* name : names) {
    if (value == name) return true;
  }
  return false;
}

template <size_t N>
std::string Join(const char* const (&names)[N]) {
  std::string out;
  for (const char* name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace

std::optional<int> CudaIndex(const std::string& device) {
  const std::string prefix = contract::kDeviceCudaPrefix;
  if (device.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  int index = -1;
  if (!ParseInt(device.substr(prefix.size()), &index) || index < 0) return std::nullopt;
  return index;
}

std::string SimUsage() {
  return std::string(
             "bench-sim-train: a simulated bench-train for tests and demonstrations. It\n"
             "writes bench-train's events (docs/trainer-events.md) with \"simulated\": true\n"
             "for one synchronous data-parallel job whose timings come from a model\n"
             "(docs/diagnosis.md \"Simulated devices\") and a fault scenario; it uses no\n"
             "GPU and trains nothing. Ranks meet at MASTER_ADDR:MASTER_PORT (torchrun's\n"
             "environment); BENCH_NODE_NAME names the rank's node.\n\n"
             "bench-train's flags (accepted; --model, --precision, --bs, --iters, --warmup,\n"
             "--image-size and --device shape the events): ") +
         Join(contract::kLaunchFlags) +
         "\n"
         "  --fault-scenario FILE      a scenario file (common/fault_scenario.h): its GPU\n"
         "                             rules set each GPU's speed and clock, its rank rules\n"
         "                             add compute or data time; off by default\n"
         "  --sim-step-s S             nominal forward+backward time of one step (0.05)\n"
         "  --sim-noise P%             width of each step's noise draw (1%)\n"
         "  --sim-rendezvous-timeout-s S   how long ranks wait for each other (60)\n"
         "  --help                     this text\n";
}

std::optional<SimOptions> ParseSimFlags(const std::vector<std::string>& args, std::string* error) {
  SimOptions options;
  auto fail = [error](const std::string& message) {
    *error = message;
    return std::nullopt;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> inline_value;
    if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    if (flag == "--help" || flag == "-h") {
      options.help = true;
      continue;
    }
    if (flag == contract::kFlagDataVsCompute) {
      if (inline_value) return fail(flag + " takes no value");
      options.data_vs_compute = true;
      continue;
    }
    std::string value;
    if (inline_value) {
      value = *inline_value;
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return fail(flag.rfind("--", 0) == 0 ? flag + " needs a value"
                                           : "unexpected argument '" + flag + "'");
    }
    auto positive_int = [&](int* out, int minimum) -> bool {
      return ParseInt(value, out) && *out >= minimum;
    };
    if (flag == contract::kFlagModel) {
      if (!OneOf(value, kModelNames)) {
        return fail("--model " + value + ": not a model (" + Join(kModelNames) + ")");
      }
      options.model = value;
    } else if (flag == contract::kFlagPrecision) {
      if (!OneOf(value, kPrecisionNames)) {
        return fail("--precision " + value + ": not a precision (" + Join(kPrecisionNames) + ")");
      }
      options.precision = value;
    } else if (flag == contract::kFlagBatchSize) {
      if (!positive_int(&options.batch_size, 1))
        return fail("--bs " + value + ": not a positive integer");
    } else if (flag == contract::kFlagIterations) {
      if (!positive_int(&options.iterations, 1))
        return fail("--iters " + value + ": not a positive integer");
    } else if (flag == contract::kFlagWarmup) {
      if (!positive_int(&options.warmup, 0))
        return fail("--warmup " + value + ": not a non-negative integer");
    } else if (flag == contract::kFlagImageSize) {
      if (!positive_int(&options.image_size, 1))
        return fail("--image-size " + value + ": not a positive integer");
    } else if (flag == contract::kFlagData) {
      if (!OneOf(value, kDataNames)) {
        return fail("--data " + value + ": not a data source (" + Join(kDataNames) + ")");
      }
      options.data = value;
    } else if (flag == contract::kFlagDataDir) {
      options.data_dir = value;
    } else if (flag == contract::kFlagLoaderThreads) {
      if (!positive_int(&options.loader_threads, 0))
        return fail("--loader-threads " + value + ": not a non-negative integer");
    } else if (flag == contract::kFlagDevice) {
      if (value != contract::kDeviceCpu && !CudaIndex(value)) {
        return fail("--device " + value + ": not cpu or cuda:N");
      }
      options.device = value;
    } else if (flag == contract::kFlagThreads) {
      if (!positive_int(&options.threads, 1))
        return fail("--threads " + value + ": not a positive integer");
    } else if (flag == contract::kFlagFaultScenario) {
      if (value.empty()) return fail("--fault-scenario needs a file");
      options.fault_scenario = value;
    } else if (flag == "--sim-step-s") {
      if (!ParseDouble(value, &options.step_s) || !(options.step_s > 0)) {
        return fail("--sim-step-s " + value + ": not a positive number of seconds");
      }
    } else if (flag == "--sim-noise") {
      std::string number = value;
      if (!number.empty() && number.back() == '%') number.pop_back();
      double percent = 0;
      if (!ParseDouble(number, &percent) || percent < 0 || percent >= 100) {
        return fail("--sim-noise " + value + ": not a percentage in [0, 100)");
      }
      options.noise_fraction = percent / 100;
    } else if (flag == "--sim-rendezvous-timeout-s") {
      if (!ParseDouble(value, &options.rendezvous_timeout_s) ||
          !(options.rendezvous_timeout_s > 0)) {
        return fail("--sim-rendezvous-timeout-s " + value + ": not a positive number of seconds");
      }
    } else {
      return fail("unknown flag " + flag + " (--help lists them)");
    }
  }
  if (options.warmup >= options.iterations) {
    return fail("--warmup " + std::to_string(options.warmup) + " must be below --iters " +
                std::to_string(options.iterations));
  }
  return options;
}

}  // namespace bench::sim
