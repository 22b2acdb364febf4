// bench-sim-train as the agent runs it: real processes meeting on loopback, their events
// read with the agent's own parser (worker/agent/trainer_event_parser.h).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "worker/agent/trainer_event_parser.h"

namespace {

using bench::agent::ParseTrainerEvent;
using bench::agent::TrainerEvent;

int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  return ok ? ntohs(addr.sin_port) : -1;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "/simXXXXXX";
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Rank {
  pid_t pid = -1;
  std::string stdout_path;
  int exit_code = -1;
  std::vector<std::string> lines;
};

// Starts one rank of `world` with `args`, its stdout in DIR/rank<R>.out.
Rank Start(const std::string& dir, int rank, int world, int port, const std::string& node,
           const std::vector<std::string>& args) {
  Rank out;
  out.stdout_path = dir + "/rank" + std::to_string(rank) + ".out";
  std::vector<std::string> argv = {BENCH_SIM_TRAIN_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env = {"RANK=" + std::to_string(rank),
                                  "WORLD_SIZE=" + std::to_string(world),
                                  "LOCAL_RANK=" + std::to_string(rank % 2),
                                  "LOCAL_WORLD_SIZE=2",
                                  "MASTER_ADDR=127.0.0.1",
                                  "MASTER_PORT=" + std::to_string(port),
                                  "BENCH_NODE_NAME=" + node};
  out.pid = ::fork();
  if (out.pid == 0) {
    int fd = ::open(out.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 1);
    std::vector<char*> cargv, cenv;
    for (auto& a : argv) cargv.push_back(a.data());
    for (auto& e : env) cenv.push_back(e.data());
    cargv.push_back(nullptr);
    cenv.push_back(nullptr);
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  return out;
}

void Finish(Rank* rank) {
  int status = 0;
  ASSERT_EQ(::waitpid(rank->pid, &status, 0), rank->pid);
  rank->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(rank->stdout_path);
  for (std::string line; std::getline(in, line);) rank->lines.push_back(line);
}

// Runs `world` ranks (two per node: n1, n2, ...) to their end.
std::vector<Rank> RunJob(const std::string& dir, int world, const std::vector<std::string>& args) {
  const int port = FreeLoopbackPort();
  std::vector<Rank> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.push_back(Start(dir, r, world, port, "n" + std::to_string(r / 2 + 1), args));
  }
  for (Rank& rank : ranks) Finish(&rank);
  return ranks;
}

// A number field of one event line (the split, which the parser leaves to the store).
double NumberField(const std::string& line, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const size_t at = line.find(key);
  if (at == std::string::npos) return -1;
  return std::strtod(line.c_str() + at + key.size(), nullptr);
}

std::vector<TrainerEvent> Parse(const Rank& rank) {
  std::vector<TrainerEvent> events;
  for (const std::string& line : rank.lines) {
    auto event = ParseTrainerEvent(line);
    EXPECT_TRUE(event.ok()) << line << ": " << event.status();
    if (event.ok()) events.push_back(*event);
  }
  return events;
}

TEST(SimRunTest, FourRanksOnLoopbackAgreeOnEveryStepTime) {
  TempDir dir;
  const std::string scenario = dir.path() + "/scenario.txt";
  std::ofstream(scenario) << "benchfleet-scenario 1\nseed 3\n"
                             "rank rank=2 iterations=4-5 extra_compute=50%\n";
  const auto ranks =
      RunJob(dir.path(), 4,
             {"--model", "resnet50", "--bs", "8", "--iters", "8", "--warmup", "2", "--device",
              "cpu", "--sim-step-s", "0.01", "--fault-scenario", scenario});
  std::vector<std::vector<double>> steps(4);
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(ranks[r].exit_code, 0) << "rank " << r;
    const auto events = Parse(ranks[r]);
    ASSERT_EQ(events.size(), 10u) << "rank " << r;  // start, 8 iter, summary
    EXPECT_EQ(events[0].kind, TrainerEvent::Kind::kStart);
    EXPECT_EQ(events[0].rank, r);
    EXPECT_EQ(events[0].device, "cpu");
    EXPECT_NE(ranks[r].lines[0].find("\"simulated\":true"), std::string::npos);
    for (int i = 1; i <= 8; ++i) {
      const TrainerEvent& iter = events[static_cast<size_t>(i)];
      ASSERT_EQ(iter.kind, TrainerEvent::Kind::kIter);
      EXPECT_EQ(iter.sample.iteration(), i);
      EXPECT_EQ(iter.sample.warmup(), i <= 2);
      EXPECT_EQ(iter.sample.images(), 8);
      steps[r].push_back(iter.sample.step_time_s());
      for (const char* field : {"\"forward_backward_time_s\":", "\"allreduce_wait_time_s\":",
                                "\"optimizer_time_s\":", "\"compute_time_s\":"}) {
        EXPECT_NE(ranks[r].lines[static_cast<size_t>(i)].find(field), std::string::npos) << field;
      }
    }
    EXPECT_EQ(events[9].kind, TrainerEvent::Kind::kSummary);
    EXPECT_EQ(events[9].summary.measured_iterations(), 6);
    EXPECT_EQ(events[9].summary.measured_images(), 48);
  }
  for (int r = 1; r < 4; ++r) EXPECT_EQ(steps[r], steps[0]) << "rank " << r;
  // Rank 2's planted 50 % shows in everyone's iterations 4 and 5.
  EXPECT_GT(steps[0][3], steps[0][2] * 1.3);
  EXPECT_GT(steps[0][4], steps[0][5] * 1.3);
}

TEST(SimRunTest, GpuRulesSelectTheNodeFromBenchNodeName) {
  TempDir dir;
  const std::string scenario = dir.path() + "/scenario.txt";
  // Node n2's first GPU (rank 2's, --device cpu: its LOCAL_RANK 0) at half speed from the
  // epoch, long past: every iteration waits for it.
  std::ofstream(scenario) << "benchfleet-scenario 1\nepoch 1000\n"
                             "gpu node=n2 gpu=0 speed=0.5\n";
  const auto ranks = RunJob(dir.path(), 4,
                            {"--iters", "3", "--warmup", "1", "--sim-step-s", "0.01", "--sim-noise",
                             "0%", "--fault-scenario", scenario});
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(ranks[r].exit_code, 0) << "rank " << r;
    const auto events = Parse(ranks[r]);
    ASSERT_EQ(events.size(), 5u);
    // 0.0002 data + 0.02 compute + 0.0004 comm + 0.0002 optimizer.
    EXPECT_NEAR(events[1].sample.step_time_s(), 0.0208, 1e-9) << "rank " << r;
  }
  // The slow rank waits for the all-reduce itself only; the others wait for it too.
  EXPECT_NEAR(NumberField(ranks[2].lines[1], "allreduce_wait_time_s"), 0.0004, 1e-9);
  EXPECT_NEAR(NumberField(ranks[0].lines[1], "allreduce_wait_time_s"), 0.0104, 1e-9);
  EXPECT_NEAR(NumberField(ranks[2].lines[1], "forward_backward_time_s"), 0.02, 1e-9);
}

TEST(SimRunTest, APeerThatNeverComesIsAClearErrorAndExitOne) {
  TempDir dir;
  const int port = FreeLoopbackPort();
  Rank host = Start(dir.path(), 0, 2, port, "n1",
                    {"--iters", "3", "--warmup", "1", "--sim-rendezvous-timeout-s", "0.5"});
  Finish(&host);
  EXPECT_EQ(host.exit_code, 1);
  ASSERT_FALSE(host.lines.empty());
  auto error = ParseTrainerEvent(host.lines.back());
  ASSERT_TRUE(error.ok());
  EXPECT_EQ(error->kind, TrainerEvent::Kind::kError);
  EXPECT_NE(error->message.find("rank(s) 1 of 2 did not come to 127.0.0.1:"), std::string::npos)
      << error->message;

  Rank lonely = Start(dir.path(), 1, 2, port, "n1",
                      {"--iters", "3", "--warmup", "1", "--sim-rendezvous-timeout-s", "0.5"});
  Finish(&lonely);
  EXPECT_EQ(lonely.exit_code, 1);
  ASSERT_FALSE(lonely.lines.empty());
  EXPECT_NE(lonely.lines.back().find("could not reach rank 0 at 127.0.0.1:"), std::string::npos)
      << lonely.lines.back();
}

TEST(SimRunTest, BadFlagsAndAnUnreadableScenarioAreErrorEvents) {
  TempDir dir;
  Rank bad = Start(dir.path(), 0, 1, 1, "n1", {"--model", "vgg"});
  Finish(&bad);
  EXPECT_EQ(bad.exit_code, 2);
  ASSERT_EQ(bad.lines.size(), 1u);
  EXPECT_NE(bad.lines[0].find("--model vgg: not a model"), std::string::npos) << bad.lines[0];

  Rank missing = Start(dir.path(), 0, 1, 1, "n1", {"--fault-scenario", "/no/such/scenario"});
  Finish(&missing);
  EXPECT_EQ(missing.exit_code, 1);
  ASSERT_EQ(missing.lines.size(), 1u);
  EXPECT_NE(missing.lines[0].find("/no/such/scenario"), std::string::npos) << missing.lines[0];
}

}  // namespace
