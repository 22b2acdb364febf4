// What the fleet simulator's parts share (tests/bench/fleet_sim/): its options, the
// recorder every RPC outcome goes to (per-method counts, error codes and latencies, upload
// batch sizes, samples generated/acknowledged per rank), the bookkeeping between the
// simulated agents and the job submitter (submit -> every rank's assignment delivered, jobs
// finished) and the outage tracker (first failure -> every agent registered again -> every
// agent that ran ranks uploading again). Thread-safe (one mutex each).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "tests/bench/histogram.h"

namespace bench::fleetsim {

using Clock = std::chrono::steady_clock;
using loadgen::Histogram;

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
inline double Micros(Clock::duration d) { return Seconds(d) * 1e6; }
inline Clock::duration FromSeconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

struct JobSize {
  int gpus = 1;
  double weight = 1;
};

struct FleetOptions {
  std::string target;
  std::string proxy_target;
  int proxy_every = 0;
  std::string ca;        // "": plaintext
  std::string cert_dir;  // node-NNNN.pem/.key, submitter.pem/.key
  int nodes = 4;
  int gpus_per_node = 8;
  double iter_rate = 10;   // per rank, already scaled
  double reading_hz = 10;  // per GPU, already scaled
  double submit_rate_limit = 50;
  std::vector<JobSize> job_mix;
  int job_iterations = 300;
  int warmup_iterations = 10;
  double backlog_fraction = 0;  // GPUs submitted beyond the fleet's, to keep it busy
  int max_batch = 2000;
  Clock::duration linger = std::chrono::milliseconds(50);
  int threads = 2;
  bool submit = true;
  bool submit_only = false;  // no simulated agents: the submitter alone (real agents run)
};

// The file names fleet_pki.sh writes.
std::string NodeName(int index);
inline constexpr const char* kSubmitterName = "fleet-submitter";
// What the simulated trainers report as their model's parameter count (ResNet-50).
inline constexpr int64_t kResNet50Parameters = 25557032;

// A channel to `target`, its own TCP connection; with TLS when options.ca is set, with
// the client certificate cert_dir/NAME.pem and .key. Exits with a message on a missing file.
std::shared_ptr<grpc::Channel> NewChannel(const FleetOptions& options, const std::string& target,
                                          const std::string& cert_name, int id);

struct MethodStats {
  int64_t calls = 0;
  std::map<std::string, int64_t> errors;  // by status code name
  Histogram latency;
};

// Everything counted, behind one mutex.
class Recorder {
 public:
  void Rpc(const std::string& method, const grpc::Status& status, Clock::duration latency);
  void Count(const std::string& method);  // a call with no latency of its own (stream events)
  void Batch(int iterations, int readings);
  // A batch benchd acknowledged: its iterations and readings (stored, duplicates and
  // refused alike).
  void Acked(int64_t iterations, int64_t readings);
  // Of acknowledged samples of one (job, attempt, rank): how many benchd took (stored, or
  // stored before) and how many it refused (rejected: never stored).
  void ByRank(const std::string& job, int attempt, int rank, int iterations, int readings,
              int refused_iterations, int refused_readings);
  // Acknowledged samples whose (job, attempt, rank) could not be told (a partly refused
  // batch whose re-sends were given up on).
  void Unattributed(int64_t samples);
  void Response(int64_t stored, int64_t duplicates, int64_t gpu_stored, int64_t gpu_duplicates,
                int64_t rejected);
  void Generated(int64_t iterations, int64_t readings);
  void SubmitToAssigned(Clock::duration latency);
  void JobFinished(bool by_poll);

  struct Snapshot {
    std::map<std::string, MethodStats> methods;
    int64_t batches = 0, batch_iterations = 0, batch_readings = 0;
    std::vector<int64_t> batch_size_counts, batch_iter_counts, batch_reading_counts;
    int64_t generated_iterations = 0, generated_readings = 0;
    int64_t acked_iterations = 0, acked_readings = 0;
    int64_t stored = 0, duplicates = 0, gpu_stored = 0, gpu_duplicates = 0, rejected = 0;
    int64_t unattributed = 0;
    Histogram submit_to_assigned;
    int64_t jobs_finished = 0, jobs_ended_by_poll = 0;
  };
  Snapshot Take() const;
  struct RankCounts {
    int64_t iterations = 0, readings = 0;  // taken: stored or already stored
    int64_t refused_iterations = 0, refused_readings = 0;
  };
  // Per (job, attempt, rank): acknowledged samples, taken and refused.
  std::map<std::tuple<std::string, int, int>, RankCounts> AckedByRank() const;

 private:
  mutable std::mutex mu_;
  Snapshot s_;
  std::map<std::tuple<std::string, int, int>, RankCounts> by_rank_;
};

// Between the submitter and the agents: jobs outstanding, and when each was submitted.
class JobBook {
 public:
  explicit JobBook(Recorder* recorder) : recorder_(recorder) {}
  // Before SubmitJob: the request id (in the spec, echoed in every assignment).
  void Submitting(const std::string& request_id, int gpus, Clock::time_point at);
  void Submitted(const std::string& request_id, const std::string& job_id);
  void SubmitFailed(const std::string& request_id);
  // An agent received an assignment of `ranks` ranks of the job with this request id.
  void Delivered(const std::string& request_id, const std::string& job_id, int ranks);
  // One rank's SUCCEEDED report was acknowledged (attempt: the assignment's).
  void RankSucceeded(const std::string& job_id, int attempt, int world_size);
  // The job ended as far as the submitter is concerned (found terminal by a poll).
  void Ended(const std::string& job_id);
  int outstanding_gpus() const;
  // Jobs outstanding since before `before` (for the submitter's poll).
  std::vector<std::string> OutstandingSince(Clock::time_point before) const;
  int64_t submitted() const;

 private:
  struct Pending {
    Clock::time_point submitted;
    int gpus = 0;
    int delivered = 0;
    bool timed = false;
    std::string job_id;
  };
  struct Running {
    int gpus = 0;
    Clock::time_point submitted;
    std::map<int, int> succeeded;  // by attempt
  };
  void FinishLocked(const std::string& job_id, bool by_poll);
  Recorder* const recorder_;
  mutable std::mutex mu_;
  std::map<std::string, Pending> by_request_;
  std::map<std::string, Running> jobs_;  // outstanding, by job id
  int outstanding_gpus_ = 0;
  int64_t submitted_ = 0;
};

// After each outage (the first agent losing its registration): when every agent was
// registered again, and when every agent that had running ranks then had an upload
// acknowledged after its re-registration.
class OutageTracker {
 public:
  explicit OutageTracker(int agents) : agents_(agents) {}
  void Lost(int agent, bool had_ranks, Clock::time_point at);
  void Registered(int agent, Clock::time_point at);
  void UploadAcked(int agent, Clock::time_point at);
  struct Outage {
    double start_s = 0;  // since the run's start
    int agents_lost = 0;
    double all_registered_after_s = -1;
    double all_uploading_after_s = -1;
  };
  std::vector<Outage> Outages(Clock::time_point run_start) const;
  int64_t reconnects() const;
  int registered() const;

 private:
  mutable std::mutex mu_;
  const int agents_;
  int registered_ = 0;
  std::set<int> lost_, awaiting_upload_;
  bool open_ = false;
  Clock::time_point start_;
  int64_t reconnects_ = 0;
  struct Raw {
    Clock::time_point start;
    int lost = 0;
    Clock::time_point registered, uploading;
    bool has_registered = false, has_uploading = false;
  };
  std::vector<Raw> outages_;
};

}  // namespace bench::fleetsim
