// Submit latency beside one agent offering many CPU slots (run by hand; docs/PERFORMANCE.md).
// Capacity is counted, not enumerated (server/core/scheduler.h FreeDevices), so a submit must
// not cost time in proportion to the slots an agent offers.
//
//   build/bin/wide_agent_submit [SLOTS] [SUBMITS]    defaults: 20000000 slots, 20 submits
//
// One JobManager on a fresh SQLite file in a temporary directory; one agent registers
// SLOTS CPU slots and attaches a stream that drops its messages; then SUBMITS two-slot
// jobs are submitted one after another, each timed from Submit until its answer (after
// the commit). Prints the registration time and the submit latencies (min, median, max).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "server/core/job_manager.h"
#include "server/store/store.h"

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

class DroppingChannel : public bench::AgentChannel {
 public:
  void SendAssignment(const bench::AssignmentMessage&) override {}
  void SendCancel(const bench::CancelMessage&) override {}
  void Close(const absl::Status&) override {}
};

int Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "wide_agent_submit: %s: %s\n", what.c_str(),
               status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const long slots = argc > 1 ? std::atol(argv[1]) : 20000000;
  const int submits = argc > 2 ? std::atoi(argv[2]) : 20;
  if (slots < 2 || slots > 2000000000 || submits < 1) {
    std::fprintf(stderr, "usage: wide_agent_submit [SLOTS>=2] [SUBMITS>=1]\n");
    return 2;
  }
  char pattern[] = "/tmp/wide_agent_submit_XXXXXX";
  if (mkdtemp(pattern) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = pattern;
  int rc = 0;
  {
    auto store = bench::Store::Open(dir + "/bench.db");
    if (!store.ok()) return Fail("open the store", store.status());
    bench::JobManager manager(store->get(), bench::JobManagerOptions{});
    if (absl::Status recovered = manager.Recover(); !recovered.ok()) {
      return Fail("recover", recovered);
    }

    bench::AgentInventory inventory;
    inventory.name = "wide-node";
    inventory.address = "127.0.0.1";
    inventory.cpu_slots = static_cast<int>(slots);
    DroppingChannel channel;
    const Clock::time_point registering = Clock::now();
    if (auto name = manager.RegisterAgent(inventory); !name.ok()) {
      return Fail("register", name.status());
    }
    if (absl::Status attached = manager.AttachChannel(inventory.name, &channel);
        !attached.ok()) {
      return Fail("attach", attached);
    }
    std::printf("agent with %ld CPU slots: register + attach %.2f ms\n", slots,
                Ms(Clock::now() - registering));

    std::vector<double> latencies;
    for (int i = 0; i < submits && rc == 0; ++i) {
      bench::JobSpec spec;
      spec.model = "resnet50";
      spec.devices = 2;
      spec.precision = bench::Precision::kFp32;
      spec.batch_size = 2;
      spec.iterations = 5;
      spec.warmup_iterations = 1;
      spec.image_size = 64;
      std::promise<absl::StatusOr<bench::SubmitResult>> answer;
      const Clock::time_point start = Clock::now();
      manager.Submit(spec, [&answer](absl::StatusOr<bench::SubmitResult> result) {
        answer.set_value(std::move(result));
      });
      absl::StatusOr<bench::SubmitResult> result = answer.get_future().get();
      latencies.push_back(Ms(Clock::now() - start));
      if (!result.ok()) rc = Fail("submit", result.status());
    }
    manager.Shutdown();
    if (rc == 0) {
      std::sort(latencies.begin(), latencies.end());
      std::printf("%d submits, each answered after its commit: min %.2f ms, median %.2f ms, "
                  "max %.2f ms\n",
                  submits, latencies.front(), latencies[latencies.size() / 2],
                  latencies.back());
    }
  }
  std::filesystem::remove_all(dir);
  return rc;
}
