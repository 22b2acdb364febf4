#include "worker/sim/sim_run.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "common/fault_scenario.h"
#include "common/log.h"
#include "common/trainer_contract.h"
#include "worker/sim/rendezvous.h"
#include "worker/sim/sim_events.h"
#include "worker/sim/sim_model.h"

namespace bench::sim {
namespace {

namespace contract = bench::trainer_contract;

bool IntFromEnv(const char* name, int minimum, int* out, std::string* error) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return true;
  errno = 0;
  char* end = nullptr;
  long parsed = std::strtol(value, &end, 10);
  if (errno != 0 || *end != '\0' || parsed < minimum || parsed > 1000000) {
    *error = std::string(name) + "=" + value + ": not an integer >= " + std::to_string(minimum);
    return false;
  }
  *out = static_cast<int>(parsed);
  return true;
}

// The scenario, re-read when its file's modification time or size changes.
class ScenarioFile {
 public:
  explicit ScenarioFile(std::string path) : path_(std::move(path)) {}

  // The first read: false with *error when the file cannot be read or parsed.
  bool Load(std::string* error) {
    if (path_.empty()) return true;
    Stamp(&stamp_);
    auto loaded = FaultScenario::Load(path_, error);
    if (!loaded) return false;
    scenario_ = std::move(*loaded);
    return true;
  }

  // Re-reads a changed file; a file that no longer parses keeps the last good scenario.
  void Refresh() {
    if (path_.empty()) return;
    std::pair<int64_t, int64_t> now;
    if (!Stamp(&now) || now == stamp_) return;
    stamp_ = now;
    std::string error;
    auto loaded = FaultScenario::Load(path_, &error);
    if (!loaded) {
      Log("warning: keeping the last scenario: ", error);
      return;
    }
    scenario_ = std::move(*loaded);
  }

  const FaultScenario& get() const { return scenario_; }

 private:
  bool Stamp(std::pair<int64_t, int64_t>* out) const {
    struct stat info {};
    if (::stat(path_.c_str(), &info) != 0) return false;
    *out = {static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec,
            static_cast<int64_t>(info.st_size)};
    return true;
  }

  std::string path_;
  std::pair<int64_t, int64_t> stamp_{-1, -1};
  FaultScenario scenario_ = NoFaults();

  static FaultScenario NoFaults() {
    std::string unused;
    return *FaultScenario::Parse("benchfleet-scenario 1\n", &unused);
  }
};

void SleepUntilUnix(double unix_s) {
  using namespace std::chrono;
  const auto when =
      system_clock::time_point(duration_cast<system_clock::duration>(duration<double>(unix_s)));
  std::this_thread::sleep_until(when);
}

int64_t MaxRssBytes() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace

bool SimEnvFromEnvironment(SimEnv* env, std::string* error) {
  if (!IntFromEnv(contract::kEnvRank, 0, &env->rank, error) ||
      !IntFromEnv(contract::kEnvWorldSize, 1, &env->world_size, error) ||
      !IntFromEnv(contract::kEnvLocalRank, 0, &env->local_rank, error) ||
      !IntFromEnv(contract::kEnvMasterPort, 1, &env->master_port, error)) {
    return false;
  }
  if (env->rank >= env->world_size) {
    *error = "RANK=" + std::to_string(env->rank) +
             " is not below WORLD_SIZE=" + std::to_string(env->world_size);
    return false;
  }
  if (const char* addr = std::getenv(contract::kEnvMasterAddr); addr != nullptr && *addr) {
    env->master_addr = addr;
  }
  if (const char* node = std::getenv(contract::kEnvNodeName); node != nullptr && *node) {
    env->node = node;
  } else {
    char host[256] = {};
    env->node = ::gethostname(host, sizeof(host) - 1) == 0 && host[0] ? host : "localhost";
  }
  return true;
}

int RunSimRank(const SimOptions& options, const SimEnv& env, std::ostream& events) {
  auto emit = [&events](const std::string& line) { events << line << '\n' << std::flush; };
  ScenarioFile scenario(options.fault_scenario);
  std::string error;
  if (!scenario.Load(&error)) {
    Log("--fault-scenario ", error);
    emit(ErrorEvent(env.rank, "--fault-scenario " + error));
    return 1;
  }
  RankPlace self;
  self.node = env.node;
  self.gpu = CudaIndex(options.device).value_or(env.local_rank);
  RendezvousResult world;
  if (!Rendezvous(env.rank, env.world_size, env.master_addr, env.master_port, self,
                  options.rendezvous_timeout_s, &world, &error)) {
    Log("rendezvous: ", error);
    emit(ErrorEvent(env.rank, "rendezvous: " + error));
    return 1;
  }
  emit(StartEvent(options, env.rank, env.world_size, env.local_rank));

  SimParams params;
  params.step_s = options.step_s;
  params.noise_fraction = options.noise_fraction;
  std::vector<RankStep> measured;
  double offset = 0;  // seconds from the common start to this iteration's start
  for (int iteration = 1; iteration <= options.iterations; ++iteration) {
    scenario.Refresh();
    const FaultScenario& now = scenario.get();
    const double iteration_start = world.start_unix_s + offset;
    const double t = iteration_start - now.epoch_unix_s().value_or(world.start_unix_s);
    const std::vector<RankStep> steps = SimulateIteration(now, world.places, params, iteration, t);
    const RankStep& mine = steps[static_cast<size_t>(env.rank)];
    offset += mine.step_s;
    SleepUntilUnix(world.start_unix_s + offset);
    emit(IterEvent(options, env.rank, iteration, mine, offset));
    if (iteration > options.warmup) measured.push_back(mine);
  }
  emit(SummaryEvent(options, env.rank, measured, MaxRssBytes()));
  return 0;
}

}  // namespace bench::sim
