// One simulated bench-agent of the fleet simulator: the agent protocol
// (proto/benchfleet/v1/agent.proto) over its own gRPC channel (its own node certificate),
// with worker/agent's policies, not its code:
// - Register, then the assignment stream; re-register after the stream ends with the
//   agent's back-off (100 ms doubling to 2 s, never above the heartbeat interval; reset
//   after a stream that lived 2 s or delivered an event); Heartbeat every interval benchd
//   gave, naming the running ranks; 3 failed heartbeats in a row (or NOT_FOUND) end the
//   stream. Uploads and reports are held while not registered (agent.cc).
// - Per assignment: one ReportStatus with every local rank STARTED (and the master port
//   where rank 0 is here), one per rank as its trainer's start event arrives, and one per
//   rank SUCCEEDED (with its summary) once its last samples were acknowledged; a cancel
//   ends the ranks and reports CANCELLED. One report in flight, in order (status_reporter).
// - Iterations at iter_rate per rank, GPU readings at reading_hz ticks of one sampler per
//   node (gpu_sampler.h: every running rank's GPU per tick, a final reading at the end).
// - Samples of both kinds in one queue; one UploadSamples in flight, up to max_batch samples
//   or what gathered within `linger` after the previous acknowledgement (or after the first
//   sample came into an empty queue); a failed batch is retried as is, with back-off and no
//   linger (outbox.h). Nothing is spooled: the queue is memory. An acknowledged batch is
//   counted per rank, taken or refused (benchd's answer counts refusals per batch only:
//   a batch refused in part that holds several ranks' samples is sent again rank by rank,
//   UploadSamples.resolve, which benchd does not store twice).
// The RPCs use gRPC's callback API; the agent's own work runs in Tick(), called by one of
// the simulator's few driver threads (Driver) when the agent's next deadline comes or an
// RPC completes. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "benchfleet/v1/agent.grpc.pb.h"
#include "tests/bench/fleet_sim/fleet.h"

namespace bench::fleetsim {

class Driver;

class SimAgent {
 public:
  SimAgent(const FleetOptions& options, int index, Recorder* recorder, JobBook* jobs,
           OutageTracker* outages, Driver* driver);
  ~SimAgent();

  // Does what is due now; returns when it next has something to do.
  Clock::time_point Tick(Clock::time_point now);
  // Stops the trainers (no more samples); uploads, reports and re-registering go on.
  void StopTraining();
  // Samples queued or in flight, or of a partly refused batch still being sent again to
  // count them per rank (0 once every generated sample was acknowledged and counted).
  int64_t unacknowledged();
  int running_ranks();
  bool registered();
  int64_t dropped();  // samples of batches given up on (refused 5 times)
  // Cancels the stream and waits until no RPC of this agent is outstanding.
  void Shutdown();
  int index() const { return index_; }

 private:
  struct Rank {
    std::string job_id;
    int attempt = 0;
    int rank = 0;
    int gpu = 0;
    int world_size = 1;
    int iterations = 0;
    int warmup = 0;
    int batch_size = 256;
    Clock::time_point start;
    int next_iteration = 1;
    int64_t seq = 0;
    bool ended = false;  // trainer exited (succeeded or cancelled)
    bool cancelled = false;
    Clock::time_point cancel_at;
    std::string cancel_reason;
    uint64_t last_ticket = 0;   // its last sample's
    bool final_queued = false;  // its final report is queued
  };
  using Sample = std::variant<benchfleet::v1::IterationSample, benchfleet::v1::GpuSample>;
  struct Report {
    benchfleet::v1::ReportStatusRequest request;
    int succeeded_world_size = 0;  // > 0: a SUCCEEDED report (counts towards the job's end)
    int final_rank = -1;           // >= 0: the rank's last report (it is forgotten after)
  };
  enum class State { kUnregistered, kRegistering, kRegistered };

  template <typename Request, typename Response>
  struct Call;

  void StartRegister(Clock::time_point now);
  void OnRegistered(const grpc::Status& status, const benchfleet::v1::RegisterResponse& response,
                    Clock::time_point now);
  void OpenStream();
  void OnStreamEvent(const benchfleet::v1::AssignmentEvent& event);
  void OnStreamDone(const grpc::Status& status);
  void OnAssign(const benchfleet::v1::Assignment& assignment, Clock::time_point now);
  void OnCancel(const benchfleet::v1::CancelAssignment& cancel, Clock::time_point now);
  void LoseRegistration(Clock::time_point now);
  void SendHeartbeat(Clock::time_point now);
  void Generate(Clock::time_point now);
  void QueueFinalReports();
  void SendUpload(Clock::time_point now);
  // Counts an acknowledged batch per rank: taken or refused. Where benchd refused part of
  // a batch of several ranks (or kinds), each one's samples are sent again (resolve_).
  void Attribute(const benchfleet::v1::UploadSamplesRequest& batch, int rejected);
  void SendResolve(Clock::time_point now);
  void SendReport(Clock::time_point now);
  Clock::duration RetryDelay(Clock::duration* backoff);
  void Wake();

  const FleetOptions& options_;
  const int index_;
  const std::string name_;
  Recorder* const recorder_;
  JobBook* const jobs_;
  OutageTracker* const outages_;
  Driver* const driver_;
  std::unique_ptr<benchfleet::v1::AgentService::Stub> stub_;
  benchfleet::v1::AgentInventory inventory_;

  // Recursive: a callback of an RPC started under it may run on the starting thread.
  std::recursive_mutex mu_;
  std::condition_variable_any idle_cv_;
  int outstanding_ = 0;  // RPCs in flight, the stream included
  bool stopping_ = false, training_ = true;
  State state_ = State::kUnregistered;
  bool paused_ = true;  // uploads and reports held (from each Register until it answers)
  int register_failures_ = 0;
  bool heartbeats_on_ = false;  // from the first registration on, as the agent's thread
  Clock::time_point register_at_;
  Clock::duration register_backoff_{};
  Clock::duration heartbeat_interval_ = std::chrono::seconds(5);
  Clock::time_point next_heartbeat_;
  bool heartbeat_in_flight_ = false;
  int heartbeat_failures_ = 0;
  std::string controller_id_;
  class StreamReactor;
  StreamReactor* stream_ = nullptr;
  Clock::time_point stream_opened_;
  bool stream_got_event_ = false;

  std::vector<Rank> ranks_;
  std::map<std::pair<std::string, int>, bool> assignments_seen_;
  Clock::time_point sampler_start_;
  int64_t sampler_tick_ = 0;  // ticks taken

  std::deque<Sample> queue_;       // not yet in a batch
  Clock::time_point queue_since_;  // the oldest queued sample's time
  int upload_permanent_failures_ = 0;
  int64_t dropped_ = 0;
  uint64_t next_ticket_ = 1;  // of the next sample added
  uint64_t acked_through_ = 0;
  std::unique_ptr<benchfleet::v1::UploadSamplesRequest> batch_;  // in flight or to retry
  uint64_t batch_last_ticket_ = 0;
  bool upload_in_flight_ = false;
  bool upload_retrying_ = false;
  Clock::time_point upload_retry_at_, last_ack_;
  Clock::duration upload_backoff_{};
  int64_t next_batch_id_ = 1;
  // One rank's iterations or readings of a partly refused batch, sent again to learn
  // which benchd refused (it stores a sample once: the re-send stores nothing new).
  struct Resolve {
    benchfleet::v1::UploadSamplesRequest request;
    std::string job_id;
    int attempt = 0, rank = 0;
    bool readings = false;
    int samples = 0;
  };
  std::deque<Resolve> resolve_;
  int64_t resolve_samples_ = 0;  // in resolve_

  std::deque<Report> reports_;
  bool report_in_flight_ = false;
  Clock::time_point report_retry_at_;
  Clock::duration report_backoff_{};
  int report_permanent_failures_ = 0;
};

// One unary RPC in flight (its context, request, answer and start).
template <typename Request, typename Response>
struct SimAgent::Call {
  grpc::ClientContext context;
  Request request;
  Response response;
  Clock::time_point start = Clock::now();
};

}  // namespace bench::fleetsim
