#include "tests/e2e/cluster.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "common/free_port.h"

namespace bench::testing {
namespace {

std::string ExeOf(pid_t pid) {
  std::error_code error;
  std::filesystem::path exe =
      std::filesystem::read_symlink(absl::StrCat("/proc/", pid, "/exe"), error);
  return error ? "" : exe.string();
}

// Live processes whose parent is `parent` (from /proc/PID/stat).
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return children;
  while (dirent* entry = readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    size_t paren = stat.rfind(')');  // the command may hold spaces and parentheses
    if (paren == std::string::npos || paren + 4 >= stat.size()) continue;
    char state = stat[paren + 2];
    int ppid = 0;
    std::string rest = stat.substr(paren + 4);
    if (state == 'Z' || !absl::SimpleAtoi(rest.substr(0, rest.find(' ')), &ppid)) continue;
    if (ppid == parent) children.push_back(pid);
  }
  closedir(proc);
  return children;
}

}  // namespace

int CountOccurrences(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
    ++count;
  }
  return count;
}

LoopbackCluster::LoopbackCluster() {
  char pattern[] = "/tmp/benchfleet_e2e_XXXXXX";
  dir_ = mkdtemp(pattern);
  db_path_ = dir_ + "/bench.db";
}

LoopbackCluster::~LoopbackCluster() {
  for (auto& [name, agent] : agents_) {
    agent->SignalGroup(SIGCONT);
    agent->SignalGroup(SIGTERM);
    agent->Wait();
  }
  for (const auto& [pid, exe] : orphans_) {
    if (!exe.empty() && ExeOf(pid) == exe) kill(-pid, SIGKILL);  // each rank leads its group
  }
  if (benchd_) {
    benchd_->SignalGroup(SIGCONT);
    benchd_->SignalGroup(SIGTERM);
    benchd_->Wait();
  }
  if (getenv("BENCH_E2E_KEEP") == nullptr) std::filesystem::remove_all(dir_);
}

std::string LoopbackCluster::server() const { return absl::StrCat("127.0.0.1:", grpc_port_); }

int LoopbackCluster::StopBenchd() {
  if (!benchd_) return -1;
  benchd_->SignalGroup(SIGTERM);
  int code = benchd_->Wait();
  benchd_.reset();
  return code;
}

int LoopbackCluster::KillBenchd() {
  if (!benchd_) return -1;
  benchd_->SignalGroup(SIGKILL);
  int code = benchd_->Wait();
  benchd_.reset();
  return code;
}

bool LoopbackCluster::BenchdAlive() { return benchd_ && !benchd_->TryWait().has_value(); }

pid_t LoopbackCluster::benchd_pid() const { return benchd_ ? benchd_->pid() : -1; }

absl::Status LoopbackCluster::StartBenchd(const std::vector<std::string>& flags) {
  set_benchd_flags(flags);
  return StartBenchd();
}

std::string LoopbackCluster::agent_state_dir(const std::string& name) const {
  return absl::StrCat(dir_, "/state-", name);
}

Subprocess* LoopbackCluster::FindAgent(const std::string& name) {
  for (auto it = agents_.rbegin(); it != agents_.rend(); ++it) {
    if (it->first == name) return it->second.get();
  }
  return nullptr;
}

pid_t LoopbackCluster::agent_pid(const std::string& name) {
  Subprocess* agent = FindAgent(name);
  return agent == nullptr || agent->TryWait().has_value() ? -1 : agent->pid();
}

std::vector<pid_t> LoopbackCluster::AgentChildren(const std::string& name) {
  pid_t pid = agent_pid(name);
  return pid < 0 ? std::vector<pid_t>{} : ChildrenOf(pid);
}

int LoopbackCluster::KillAgent(const std::string& name) {
  Subprocess* agent = FindAgent(name);
  if (agent == nullptr) return -1;
  for (pid_t child : AgentChildren(name)) orphans_.emplace_back(child, ExeOf(child));
  // Only the agent: kill(2) on its pid, not its group (its ranks lead groups of their own).
  if (!agent->TryWait().has_value()) kill(agent->pid(), SIGKILL);
  return agent->Wait();
}

void LoopbackCluster::SignalAgent(const std::string& name, int signal) {
  pid_t pid = agent_pid(name);
  if (pid > 0) kill(pid, signal);
}

absl::Status LoopbackCluster::StartBenchd() {
  if (grpc_port_ == 0) {
    absl::StatusOr<int> port = PickFreePort("127.0.0.1");
    if (!port.ok()) return port.status();
    grpc_port_ = *port;
    absl::StatusOr<int> http = PickFreePort("127.0.0.1");
    if (!http.ok()) return http.status();
    http_port_ = *http;
  }
  SubprocessOptions options;
  options.argv = {BENCHD_PATH, "--listen", server(), "--http",
                  absl::StrCat("127.0.0.1:", http_port_), "--db", db_path_};
  options.argv.insert(options.argv.end(), benchd_flags_.begin(), benchd_flags_.end());
  options.stdout_mode = SubprocessOptions::Output::kFile;
  options.stderr_mode = SubprocessOptions::Output::kFile;
  options.stdout_path = options.stderr_path = dir_ + "/benchd.log";
  auto process = Subprocess::Start(options);
  if (!process.ok()) return process.status();
  benchd_ = std::move(*process);
  // Ready when benchctl can list jobs.
  for (int i = 0; i < 200; ++i) {
    if (Benchctl({"list"}, 10).exit_code == 0) return absl::OkStatus();
    if (benchd_->TryWait().has_value()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::UnavailableError(absl::StrCat("benchd did not come up:\n", Log("benchd.log")));
}

absl::StatusOr<CommandOutput> LoopbackCluster::RunSecondBenchd() {
  absl::StatusOr<int> grpc_port = PickFreePort("127.0.0.1");
  if (!grpc_port.ok()) return grpc_port.status();
  absl::StatusOr<int> http_port = PickFreePort("127.0.0.1");
  if (!http_port.ok()) return http_port.status();
  return RunCommand({BENCHD_PATH, "--listen", absl::StrCat("127.0.0.1:", *grpc_port), "--http",
                     absl::StrCat("127.0.0.1:", *http_port), "--db", db_path_},
                    absl::Seconds(60));
}

absl::Status LoopbackCluster::StartAgent(const std::string& name, int cpu_slots) {
  return StartAgent(name, cpu_slots, {});
}

absl::Status LoopbackCluster::StartAgent(
    const std::string& name, int cpu_slots, const std::vector<std::string>& extra_args,
    const std::vector<std::pair<std::string, std::string>>& env) {
  SubprocessOptions options;
  options.env = env;
  options.argv = {BENCH_AGENT_PATH, "--controller", server(), "--name", name, "--address",
                  "127.0.0.1", "--bench-train", BENCH_TRAIN_PATH};
  if (cpu_slots > 0) {
    options.argv.push_back("--cpu-slots");
    options.argv.push_back(absl::StrCat(cpu_slots));
  }
  if (agent_state_dirs_) {
    std::filesystem::create_directories(agent_state_dir(name));
    options.argv.push_back("--state-dir");
    options.argv.push_back(agent_state_dir(name));
  }
  options.argv.insert(options.argv.end(), extra_args.begin(), extra_args.end());
  options.stdout_mode = SubprocessOptions::Output::kFile;
  options.stderr_mode = SubprocessOptions::Output::kFile;
  options.stdout_path = options.stderr_path = absl::StrCat(dir_, "/agent-", name, ".log");
  auto process = Subprocess::Start(options);
  if (!process.ok()) return process.status();
  agents_.emplace_back(name, std::move(*process));
  return absl::OkStatus();
}

absl::Status LoopbackCluster::WaitForAgents(int count, int timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    CommandResult result = Benchctl({"agents", "--format", "json"}, 10);
    last = result.output;
    if (CountOccurrences(result.stdout_text, "\"connected\":true") >= count) {
      return absl::OkStatus();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::DeadlineExceededError(absl::StrCat("agents did not connect; last listing:\n",
                                                  last, "\nbenchd log:\n", Log("benchd.log")));
}

CommandResult LoopbackCluster::Benchctl(const std::vector<std::string>& args, int timeout_s) {
  return BenchctlAs(benchctl_env_, args, timeout_s);
}

CommandResult LoopbackCluster::BenchctlAs(
    const std::vector<std::pair<std::string, std::string>>& env,
    const std::vector<std::string>& args, int timeout_s) {
  SubprocessOptions options;
  options.argv = {BENCHCTL_PATH};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.env = {{"BENCH_SERVER", server()}};
  options.env.insert(options.env.end(), env.begin(), env.end());
  CommandResult result;
  auto process = Subprocess::Start(options);
  if (!process.ok()) {
    result.output = std::string(process.status().message());
    return result;
  }
  // Drain both pipes until they close or the time is up.
  pollfd fds[2] = {{(*process)->stdout_fd(), POLLIN, 0}, {(*process)->stderr_fd(), POLLIN, 0}};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int open_fds = 2;
  char buffer[4096];
  while (open_fds > 0 && std::chrono::steady_clock::now() < deadline) {
    if (poll(fds, 2, 200) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
      ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n <= 0) {
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      result.output.append(buffer, static_cast<size_t>(n));
      if (i == 0) result.stdout_text.append(buffer, static_cast<size_t>(n));
    }
  }
  if (open_fds > 0) (*process)->SignalGroup(SIGKILL);
  result.exit_code = (*process)->Wait();
  return result;
}

std::string LoopbackCluster::Log(const std::string& file) const {
  std::ifstream in(dir_ + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  return all.size() > 6000 ? all.substr(all.size() - 6000) : all;
}

int64_t QueryInt(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return -1;
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* stmt = nullptr;
  int64_t value = -1;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    value = sqlite3_column_int64(stmt, 0);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

}  // namespace bench::testing
