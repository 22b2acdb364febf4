// bench-sim-train's command line: every flag bench-agent launches bench-train with
// (common/trainer_contract.h kLaunchFlags), --fault-scenario, and the simulator's own
// --sim-step-s, --sim-noise and --sim-rendezvous-timeout-s. `--flag value` and
// `--flag=value` both work. Standard library only.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace bench::sim {

struct SimOptions {
  std::string model = "resnet50";
  std::string precision = "fp32";
  int batch_size = 64;
  int iterations = 100;  // warm-up included
  int warmup = 10;
  int image_size = 0;  // 0: the model's default
  std::string data = "synthetic";
  std::string data_dir;
  int loader_threads = 0;
  bool data_vs_compute = false;  // accepted; the simulator has no second run
  std::string device = "cpu";
  int threads = 1;
  std::string fault_scenario;    // empty: no faults
  double step_s = 0.05;          // --sim-step-s
  double noise_fraction = 0.01;  // --sim-noise 1%
  double rendezvous_timeout_s = 60;
  bool help = false;
};

// nullopt with *error naming the flag and what is wrong with it.
std::optional<SimOptions> ParseSimFlags(const std::vector<std::string>& args, std::string* error);

// The --help text.
std::string SimUsage();

// --device's GPU index ("cuda:3" -> 3); nullopt for "cpu".
std::optional<int> CudaIndex(const std::string& device);

}  // namespace bench::sim
