// bench-sim-train: a simulated bench-train for tests and demonstrations (sim_run.h). Exit
// status: 0; 1 for a failure; 2 for a usage error. Every non-zero exit follows an `error`
// event on stdout, as bench-train's.
#include <iostream>
#include <string>
#include <vector>

#include "common/log.h"
#include "worker/sim/sim_events.h"
#include "worker/sim/sim_flags.h"
#include "worker/sim/sim_run.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bench::sim::SimEnv env;
  std::string error;
  const bool env_ok = bench::sim::SimEnvFromEnvironment(&env, &error);
  bench::SetLogComponent("bench-sim-train rank " + std::to_string(env.rank));
  if (!env_ok) {
    std::cout << bench::sim::ErrorEvent(env.rank, error) << std::endl;
    bench::Log(error);
    return 2;
  }
  auto options = bench::sim::ParseSimFlags(args, &error);
  if (!options) {
    std::cout << bench::sim::ErrorEvent(env.rank, error) << std::endl;
    bench::Log(error);
    return 2;
  }
  if (options->help) {
    std::cout << bench::sim::SimUsage();
    return 0;
  }
  return bench::sim::RunSimRank(*options, env, std::cout);
}
