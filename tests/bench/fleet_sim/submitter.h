// The fleet simulator's job submitter: a client with a `submit`-role certificate that keeps
// the simulated fleet busy through the Controller service's SubmitJob (as benchctl submit
// does): ordinary resnet50 jobs of the --job_mix sizes (a multi-node job asks for
// --nodes/--gpus-per-node like benchctl's), submitted while the GPUs of the jobs outstanding
// are below the fleet's (plus a backlog), at most submit_rate_limit per second. A job ends for
// it when every rank's SUCCEEDED report was acknowledged (JobBook); jobs outstanding far
// longer than they should take are looked up with GetJob and count as ended once terminal.
#pragma once

#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "benchfleet/v1/controller.grpc.pb.h"
#include "tests/bench/fleet_sim/fleet.h"

namespace bench::fleetsim {

class Submitter {
 public:
  Submitter(const FleetOptions& options, Recorder* recorder, JobBook* jobs);
  ~Submitter();
  void Start();
  // Stops submitting and waits for the submits in flight.
  void Stop();

 private:
  void Run();
  void SubmitOne(int gpus);
  void PollStale();

  const FleetOptions& options_;
  Recorder* const recorder_;
  JobBook* const jobs_;
  std::unique_ptr<benchfleet::v1::Controller::Stub> stub_;
  std::mt19937 random_{27};
  std::discrete_distribution<int> pick_;
  std::atomic<bool> stop_{false};
  std::atomic<int> in_flight_{0};
  int64_t sequence_ = 0;
  std::string run_id_;
  std::thread thread_;
};

}  // namespace bench::fleetsim
