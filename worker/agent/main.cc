// bench-agent: the node agent. Reads flags and environment into AgentOptions, runs
// the Agent until SIGTERM or SIGINT, then shuts it down (no rank left running) and
// exits 0.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/internal/program_name.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/build_info.h"
#include "common/fault_scenario.h"
#include "common/grpc_credentials.h"
#include "common/log.h"
#include "common/openssl_exit.h"
#include "common/sd_notify.h"
#include "worker/agent/agent.h"
#include "worker/agent/data_path.h"
#include "worker/agent/labels.h"
#include "worker/agent/nvml_inventory.h"
#include "worker/agent/state_dir.h"

ABSL_FLAG(std::string, controller, "", "HOST:PORT of benchd (required)");
ABSL_FLAG(std::string, name, "", "agent name (default: the host name)");
ABSL_FLAG(std::string, tls_ca, "",
          "CA file verifying benchd: turns TLS on (with --tls-cert/--tls-key: mutual TLS)");
ABSL_FLAG(std::string, tls_cert, "",
          "this node's certificate (PEM; its URI SAN spiffe://benchfleet/agent/NAME must "
          "name --name); re-read when it changes");
ABSL_FLAG(std::string, tls_key, "", "the key of --tls-cert (PEM); re-read when it changes");
ABSL_FLAG(std::string, join_token_file, "",
          "a join token's file (benchctl join-token create), with --tls-ca and instead of "
          "--tls-cert/--tls-key: the agent makes its own key and gets its certificate from "
          "benchd (STATE_DIR/agent.key, agent.pem), renewing it before it expires");
ABSL_FLAG(int, cpu_slots, 0,
          "offer N CPU slots and no GPU (default: the GPUs NVML finds, else 1 CPU slot)");
ABSL_FLAG(std::string, address, "",
          "host other nodes use to reach this one for the rendezvous (default: 127.0.0.1 "
          "if the controller is on loopback, else the host name)");
ABSL_FLAG(std::string, bench_train, "",
          "trainer program (default: $BENCH_TRAIN, else bench-train next to this "
          "executable, else bench-train on PATH)");
ABSL_FLAG(std::string, nvml_library, "",
          "NVML library to dlopen (default: $BENCH_NVML_LIBRARY, else libnvidia-ml.so.1)");
ABSL_FLAG(double, gpu_sample_hz, 10,
          "NVML readings per second of each GPU that runs a rank (power, energy, clocks, "
          "temperature, utilisation, memory, throttle reasons); 0 turns sampling off");
ABSL_FLAG(std::vector<std::string>, label, {},
          "KEY=VALUE: a label of this node, for job constraints (repeatable: --label a=1 "
          "--label b=2)");
ABSL_FLAG(std::vector<std::string>, data_root, {},
          "DIR: a folder real-data jobs may read, with what is below it (repeatable: "
          "--data-root /data/imagenet --data-root /data/coco); a job's --data-path outside "
          "every one fails as if missing. Without it the agent runs synthetic-data jobs only");
ABSL_FLAG(std::string, state_dir, "",
          "where unacknowledged samples and reports are spooled and live ranks recorded "
          "(created if missing; default: $BENCH_AGENT_STATE_DIR, else "
          "/var/lib/bench-agent/NAME)");
ABSL_FLAG(uint64_t, spool_max_bytes, uint64_t{1} << 30,
          "bound of the on-disk sample spool; beyond it new samples are dropped (logged)");
ABSL_FLAG(bool, gpu_ranks_on_cpu, false,
          "for tests: offer NVML's GPUs (e.g. a fake libnvidia-ml) but run the ranks "
          "placed on them on the CPU, still sampling their GPUs");
ABSL_FLAG(std::string, fault_scenario, "",
          "for tests and demonstrations only: a fault scenario FILE (docs/agent.md) passed to "
          "every rank's trainer as --fault-scenario, planting slow ranks and data stalls; "
          "off by default");

namespace {

int signal_pipe[2] = {-1, -1};

void OnSignal(int signal) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(signal);
  (void)!write(signal_pipe[1], &byte, 1);
  errno = saved;
}

// Abseil spells flags with underscores; accept the dashed spelling (--cpu-slots) too.
std::vector<char*> NormalizeFlagNames(const std::vector<std::string>& argv,
                                      std::vector<std::string>* storage) {
  const int argc = static_cast<int>(argv.size());
  storage->reserve(argc);
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (i > 0 && arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
      size_t end = arg.find('=');
      if (end == std::string::npos) end = arg.size();
      for (size_t j = 2; j < end; ++j) {
        if (arg[j] == '-') arg[j] = '_';
      }
    }
    storage->push_back(std::move(arg));
    if (storage->back() == "--") {  // everything after "--" is left alone
      for (++i; i < argc; ++i) storage->push_back(argv[i]);
    }
  }
  std::vector<char*> out;
  for (auto& arg : *storage) out.push_back(arg.data());
  return out;
}

std::string FromFlagOrEnv(const std::string& flag, const char* env, std::string fallback) {
  if (!flag.empty()) return flag;
  const char* value = std::getenv(env);
  if (value != nullptr && *value != '\0') return value;
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  bench::InitOpenSslWithoutExitCleanup();  // before gRPC: common/openssl_exit.h
  bench::SetLogComponent("bench-agent");
  absl::SetProgramUsageMessage(
      "bench-agent --controller HOST:PORT [--name NAME] [--cpu-slots N] [--address HOST] "
      "[--bench-train PATH] [--nvml-library PATH] [--gpu-sample-hz HZ] [--gpu-ranks-on-cpu] "
      "[--label KEY=VALUE]... [--data-root DIR]... [--state-dir DIR] [--spool-max-bytes N] "
      "[--tls-ca FILE (--tls-cert FILE --tls-key FILE | --join-token-file FILE)]");
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view path) {
    return absl::EndsWith(path, "worker/agent/main.cc");
  };
  usage_config.contains_helpshort_flags = usage_config.contains_help_flags;
  usage_config.version_string = [] { return bench::VersionLine("bench-agent") + "\n"; };
  absl::SetFlagsUsageConfig(usage_config);
  // Abseil prints --help and then exits 1; asked-for help is a success here (exit 0), so
  // the same text is printed here (with Abseil's own functions) before Abseil parses.
  for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-help" || arg == "-h") {
      absl::flags_internal::SetProgramInvocationName(argv[0]);
      absl::flags_internal::FlagsHelp(std::cout, "worker/agent/main.cc",
                                      absl::flags_internal::HelpFormat::kHumanReadable,
                                      absl::ProgramUsageMessage());
      return 0;
    }
  }
  // --label repeats, which absl flags cannot express: taken out before they parse.
  std::vector<std::string> raw(argv, argv + argc);
  auto label_specs = bench::agent::ExtractRepeatedFlag("label", &raw);
  if (!label_specs.ok()) {
    std::fprintf(stderr, "bench-agent: %s\n", std::string(label_specs.status().message()).c_str());
    return 2;
  }
  auto labels = bench::agent::ParseLabels(*label_specs);
  if (!labels.ok()) {
    std::fprintf(stderr, "bench-agent: %s\n", std::string(labels.status().message()).c_str());
    return 2;
  }
  // --data-root repeats too (either spelling).
  std::vector<std::string> data_roots;
  for (const char* name : {"data-root", "data_root"}) {
    auto roots = bench::agent::ExtractRepeatedFlag(name, &raw);
    if (!roots.ok()) {
      std::fprintf(stderr, "bench-agent: %s\n", std::string(roots.status().message()).c_str());
      return 2;
    }
    data_roots.insert(data_roots.end(), roots->begin(), roots->end());
  }
  if (absl::Status valid = bench::agent::CheckDataRoots(data_roots); !valid.ok()) {
    std::fprintf(stderr, "bench-agent: %s\n", std::string(valid.message()).c_str());
    return 2;
  }
  std::vector<std::string> storage;
  std::vector<char*> args = NormalizeFlagNames(raw, &storage);
  std::vector<char*> positional = absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  if (positional.size() > 1) {
    std::fprintf(stderr, "bench-agent: unexpected argument '%s'\n", positional[1]);
    return 2;
  }

  bench::agent::AgentOptions options;
  options.controller = absl::GetFlag(FLAGS_controller);
  options.name = absl::GetFlag(FLAGS_name);
  options.credentials.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  options.credentials.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  options.credentials.tls_key = absl::GetFlag(FLAGS_tls_key);
  options.join_token_file = absl::GetFlag(FLAGS_join_token_file);
  options.cpu_slots = absl::GetFlag(FLAGS_cpu_slots);
  options.address = absl::GetFlag(FLAGS_address);
  options.bench_train = FromFlagOrEnv(absl::GetFlag(FLAGS_bench_train), "BENCH_TRAIN",
                                      bench::agent::DefaultBenchTrainPath());
  options.nvml_library = FromFlagOrEnv(absl::GetFlag(FLAGS_nvml_library),
                                       "BENCH_NVML_LIBRARY", bench::agent::kDefaultNvmlLibrary);
  options.gpu_sample_hz = absl::GetFlag(FLAGS_gpu_sample_hz);
  options.gpu_ranks_on_cpu = absl::GetFlag(FLAGS_gpu_ranks_on_cpu);
  options.fault_scenario = absl::GetFlag(FLAGS_fault_scenario);
  if (!options.fault_scenario.empty()) {
    // Checked now, so that a typo fails the agent, not every job; absolute, because the
    // ranks may not share the agent's working directory.
    std::string error;
    if (!bench::FaultScenario::Load(options.fault_scenario, &error)) {
      std::fprintf(stderr, "bench-agent: --fault-scenario %s\n", error.c_str());
      return 2;
    }
    if (char* absolute = ::realpath(options.fault_scenario.c_str(), nullptr)) {
      options.fault_scenario = absolute;
      std::free(absolute);
    }
  }
  options.labels = std::move(*labels);
  options.data_roots = std::move(data_roots);
  options.state_dir = absl::GetFlag(FLAGS_state_dir);
  if (options.state_dir.empty()) {
    options.state_dir = bench::agent::DefaultStateDir(
        options.name.empty() ? bench::agent::HostName() : options.name);
  }
  options.spool_max_bytes = absl::GetFlag(FLAGS_spool_max_bytes);
  if (options.spool_max_bytes < 4096) {
    std::fprintf(stderr, "bench-agent: --spool-max-bytes must be at least 4096\n");
    return 2;
  }
  if (!(options.gpu_sample_hz >= 0) || options.gpu_sample_hz > 1000) {
    std::fprintf(stderr, "bench-agent: --gpu-sample-hz must be between 0 and 1000\n");
    return 2;
  }
  if (options.controller.empty()) {
    std::fprintf(stderr, "bench-agent: --controller HOST:PORT is required\n");
    return 2;
  }
  if (options.cpu_slots < 0) {
    std::fprintf(stderr, "bench-agent: --cpu-slots must be >= 0\n");
    return 2;
  }
  if (!options.join_token_file.empty()) {
    if (options.credentials.tls_ca.empty()) {
      std::fprintf(stderr,
                   "bench-agent: --join-token-file needs --tls-ca (the token is only "
                   "sent over TLS)\n");
      return 2;
    }
    if (!options.credentials.tls_cert.empty() || !options.credentials.tls_key.empty()) {
      std::fprintf(stderr,
                   "bench-agent: --join-token-file and --tls-cert/--tls-key exclude each "
                   "other (with a token the agent makes its own key)\n");
      return 2;
    }
    absl::StatusOr<std::string> token =
        bench::ReadTokenFile(options.join_token_file, "--join-token-file");
    if (!token.ok()) {
      std::fprintf(stderr, "bench-agent: %s\n", std::string(token.status().message()).c_str());
      return 2;
    }
  }
  if (!options.credentials.tls_ca.empty() || !options.credentials.tls_cert.empty() ||
      !options.credentials.tls_key.empty()) {
    // Checked here, before anything starts, so a bad path is a usage error (exit 2).
    absl::StatusOr<std::shared_ptr<grpc::Channel>> probe =
        bench::DialChannel(options.controller, options.credentials, grpc::ChannelArguments());
    if (!probe.ok()) {
      std::fprintf(stderr, "bench-agent: %s\n", std::string(probe.status().message()).c_str());
      return 2;
    }
  }

  // Handlers, not a blocked mask: a blocked mask would be inherited by the trainers
  // (and our SIGTERM to them would wait for the SIGKILL); handlers reset on exec.
  if (pipe2(signal_pipe, O_CLOEXEC) != 0) {
    std::perror("bench-agent: pipe");
    return 1;
  }
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);

  absl::Status writable = bench::agent::MakeWritableDirectory(options.state_dir);
  if (!writable.ok()) {
    std::fprintf(stderr, "bench-agent: --state-dir: %s\n",
                 std::string(writable.message()).c_str());
    return 2;
  }

  bench::agent::Agent agent(options);
  absl::Status status = agent.Start();
  if (!status.ok()) {
    std::fprintf(stderr, "bench-agent: %s\n", status.ToString().c_str());
    return 1;
  }
  // systemd (Type=notify, docs/deploy-systemd.md): no-ops unless it runs us.
  bench::SdNotifyOrLog(absl::StrCat("READY=1\nSTATUS=running; controller ", options.controller,
                                    ", state in ", options.state_dir));
  unsigned char received = 0;
  while (read(signal_pipe[0], &received, 1) < 0 && errno == EINTR) {
  }
  bench::SdNotifyOrLog("STOPPING=1\nSTATUS=stopping its ranks and reporting them");
  const char* signal_name = received == SIGTERM  ? "SIGTERM"
                            : received == SIGINT ? "SIGINT"
                                                 : "a signal";
  bench::Log("received ", signal_name);
  agent.Shutdown(signal_name);
  return 0;
}
