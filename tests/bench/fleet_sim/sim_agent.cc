#include "tests/bench/fleet_sim/sim_agent.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/bench/fleet_sim/driver.h"
#include "tests/bench/fleet_sim/retry_policy.h"

namespace bench::fleetsim {
namespace v1 = benchfleet::v1;
namespace {

constexpr auto kHealthyStream = std::chrono::seconds(2);
constexpr int kHeartbeatFailuresBeforeReconnect = 3;
constexpr Clock::time_point kNever = Clock::time_point::max();

}  // namespace

class SimAgent::StreamReactor : public grpc::ClientReadReactor<v1::AssignmentEvent> {
 public:
  explicit StreamReactor(SimAgent* agent) : agent_(agent) { request_.set_agent(agent->name_); }
  void Begin() {
    agent_->stub_->async()->StreamAssignments(&context_, &request_, this);
    StartRead(&event_);
    StartCall();
  }
  void Cancel() { context_.TryCancel(); }
  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    agent_->OnStreamEvent(event_);
    StartRead(&event_);
  }
  void OnDone(const grpc::Status& status) override {
    agent_->OnStreamDone(status);
    delete this;
  }

 private:
  SimAgent* const agent_;
  grpc::ClientContext context_;
  v1::StreamAssignmentsRequest request_;
  v1::AssignmentEvent event_;
};

SimAgent::SimAgent(const FleetOptions& options, int index, Recorder* recorder, JobBook* jobs,
                   OutageTracker* outages, Driver* driver)
    : options_(options),
      index_(index),
      name_(NodeName(index)),
      recorder_(recorder),
      jobs_(jobs),
      outages_(outages),
      driver_(driver) {
  const bool proxied =
      !options.proxy_target.empty() && options.proxy_every > 0 && index % options.proxy_every == 0;
  stub_ = v1::AgentService::NewStub(
      NewChannel(options, proxied ? options.proxy_target : options.target, name_, index));
  inventory_.set_name(name_);
  inventory_.set_address("127.0.0.1");
  inventory_.set_hostname(name_);
  for (int g = 0; g < options.gpus_per_node; ++g) {
    v1::Gpu* gpu = inventory_.add_gpus();
    gpu->set_index(g);
    gpu->set_name("NVIDIA H100 80GB HBM3 (simulated)");
    gpu->set_uuid(absl::StrFormat("GPU-%08x-fl00-5eed-%04x-%012x", index, g, index * 64 + g));
    gpu->set_memory_bytes(int64_t{80} << 30);
  }
  (*inventory_.mutable_versions())["fleet_sim"] = "1";
  std::random_device random;
  inventory_.set_instance_id(
      absl::StrCat(absl::Hex(random(), absl::kZeroPad8), absl::Hex(random(), absl::kZeroPad8)));
  // Each node's sampler ticks on its own phase, as separate processes would.
  sampler_start_ = Clock::now() + std::chrono::microseconds(random() % 100000);
  register_at_ = Clock::now();
}

SimAgent::~SimAgent() = default;

void SimAgent::Wake() { driver_->Wake(this, Clock::now()); }

Clock::duration SimAgent::RetryDelay(Clock::duration* backoff) {
  Clock::duration delay =
      *backoff == Clock::duration::zero() ? Clock::duration(kMinBackoff) : *backoff;
  *backoff = std::min<Clock::duration>(delay * 2, kMaxBackoff);
  delay = std::min<Clock::duration>(delay, kMaxBackoff);
  return std::min(delay, heartbeat_interval_);
}

Clock::time_point SimAgent::Tick(Clock::time_point now) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (stopping_) return kNever;
  Generate(now);
  QueueFinalReports();
  if (state_ == State::kUnregistered && now >= register_at_) StartRegister(now);
  if (heartbeats_on_ && !heartbeat_in_flight_ && now >= next_heartbeat_) SendHeartbeat(now);

  Clock::time_point next = kNever;
  if (state_ == State::kUnregistered) next = std::min(next, register_at_);
  if (heartbeats_on_ && !heartbeat_in_flight_) next = std::min(next, next_heartbeat_);
  if (!paused_ && !upload_in_flight_) {
    if (batch_ == nullptr && !resolve_.empty()) {
      if (now >= upload_retry_at_)
        SendResolve(now);
      else
        next = std::min(next, upload_retry_at_);
    } else if (batch_ != nullptr) {
      if (now >= upload_retry_at_)
        SendUpload(now);
      else
        next = std::min(next, upload_retry_at_);
    } else if (!queue_.empty()) {
      Clock::time_point linger_end = std::max(last_ack_, queue_since_) + options_.linger;
      if (static_cast<int>(queue_.size()) >= options_.max_batch || now >= linger_end) {
        SendUpload(now);
      } else {
        next = std::min(next, linger_end);
      }
    }
  }
  if (!paused_ && !report_in_flight_ && !reports_.empty()) {
    if (now >= report_retry_at_)
      SendReport(now);
    else
      next = std::min(next, report_retry_at_);
  }
  // The trainers' next samples matter only while nothing is in flight (they start a
  // linger) or for a rank's end (its final report).
  if (training_ && !upload_in_flight_ && queue_.empty()) {
    for (const Rank& rank : ranks_) {
      if (rank.ended) continue;
      next = std::min(next, rank.start + FromSeconds(rank.next_iteration / options_.iter_rate));
      if (options_.reading_hz > 0) {
        next =
            std::min(next, sampler_start_ + FromSeconds((sampler_tick_ + 1) / options_.reading_hz));
      }
    }
  }
  return next;
}

void SimAgent::StartRegister(Clock::time_point now) {
  state_ = State::kRegistering;
  paused_ = true;  // nothing goes out until this registration answered
  auto* call = new Call<v1::RegisterRequest, v1::RegisterResponse>;
  *call->request.mutable_inventory() = inventory_;
  call->context.set_deadline(Deadline(30));
  ++outstanding_;
  (void)now;
  stub_->async()->Register(&call->context, &call->request, &call->response,
                           [this, call](grpc::Status status) {
                             Clock::time_point done = Clock::now();
                             recorder_->Rpc("Register", status, done - call->start);
                             OnRegistered(status, call->response, done);
                             delete call;
                             Wake();
                           });
}

void SimAgent::OnRegistered(const grpc::Status& status, const v1::RegisterResponse& response,
                            Clock::time_point now) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  --outstanding_;
  idle_cv_.notify_all();
  if (stopping_) return;
  if (!status.ok()) {
    state_ = State::kUnregistered;
    register_at_ = now + RetryDelay(&register_backoff_);
    if (!status.ok() && ++register_failures_ == 1 && !Transient(status)) {
      std::fprintf(stderr, "fleet_sim: %s: Register: %s\n", name_.c_str(),
                   status.error_message().c_str());
    }
    return;
  }
  register_failures_ = 0;
  state_ = State::kRegistered;
  paused_ = false;
  if (response.heartbeat_interval_ms() > 0) {
    heartbeat_interval_ = std::chrono::milliseconds(response.heartbeat_interval_ms());
  } else {
    heartbeat_interval_ = std::chrono::seconds(1);
  }
  if (!controller_id_.empty() && response.controller_id() != controller_id_) {
    std::fprintf(stderr, "fleet_sim: %s: benchd's database changed (%s -> %s)\n", name_.c_str(),
                 controller_id_.c_str(), response.controller_id().c_str());
  }
  controller_id_ = response.controller_id();
  if (!heartbeats_on_) {
    heartbeats_on_ = true;
    next_heartbeat_ = now + heartbeat_interval_;
  }
  outages_->Registered(index_, now);
  OpenStream();
}

void SimAgent::OpenStream() {
  stream_ = new StreamReactor(this);
  stream_opened_ = Clock::now();
  stream_got_event_ = false;
  ++outstanding_;
  stream_->Begin();
}

void SimAgent::OnStreamEvent(const v1::AssignmentEvent& event) {
  recorder_->Count("StreamAssignments.events");
  Clock::time_point now = Clock::now();
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    stream_got_event_ = true;
    if (stopping_) return;
    Generate(now);  // the samples due before this assignment changes the ranks
    if (event.has_assign()) OnAssign(event.assign(), now);
    if (event.has_cancel()) OnCancel(event.cancel(), now);
  }
  Wake();
}

void SimAgent::OnAssign(const v1::Assignment& a, Clock::time_point now) {
  if (!assignments_seen_.emplace(std::make_pair(a.job_id(), a.attempt()), true).second) return;
  Report first;
  first.request.set_job_id(a.job_id());
  first.request.set_attempt(a.attempt());
  if (a.master_port() == 0) first.request.set_master_port(29500 + index_ % 20000);
  for (int i = 0; i < a.ranks_size(); ++i) {
    Rank rank;
    rank.job_id = a.job_id();
    rank.attempt = a.attempt();
    rank.rank = a.ranks(i);
    rank.gpu = i < a.device_indices_size() ? a.device_indices(i) : i;
    rank.world_size = a.world_size();
    rank.iterations = a.spec().iterations();
    rank.warmup = a.spec().warmup_iterations();
    rank.batch_size = a.spec().batch_size() > 0 ? a.spec().batch_size() : 256;
    rank.start = now;
    ranks_.push_back(rank);
    v1::RankReport* r = first.request.add_ranks();
    r->set_rank(rank.rank);
    r->set_state(v1::RANK_STATE_STARTED);
  }
  reports_.push_back(std::move(first));
  // Each trainer's start event: its own report.
  for (int i = 0; i < a.ranks_size(); ++i) {
    Report started;
    started.request.set_job_id(a.job_id());
    started.request.set_attempt(a.attempt());
    v1::RankReport* r = started.request.add_ranks();
    r->set_rank(a.ranks(i));
    r->set_state(v1::RANK_STATE_STARTED);
    r->set_parameters(kResNet50Parameters);
    r->set_precision("fp32");
    r->set_simulated(true);
    (*r->mutable_versions())["bench_train"] = "fleet_sim";
    reports_.push_back(std::move(started));
  }
  jobs_->Delivered(a.spec().request_id(), a.job_id(), a.ranks_size());
}

void SimAgent::OnCancel(const v1::CancelAssignment& cancel, Clock::time_point now) {
  for (Rank& rank : ranks_) {
    if (rank.job_id != cancel.job_id() || rank.ended || rank.cancelled) continue;
    if (cancel.attempt() != 0 && rank.attempt != cancel.attempt()) continue;
    rank.cancelled = true;
    rank.cancel_at = now;
    rank.cancel_reason = absl::StrCat("cancelled by the controller",
                                      cancel.reason().empty() ? "" : ": ", cancel.reason());
  }
  Generate(now);  // ends them (their final readings)
}

void SimAgent::OnStreamDone(const grpc::Status& status) {
  Clock::time_point now = Clock::now();
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    recorder_->Rpc("StreamAssignments", status, now - stream_opened_);
    stream_ = nullptr;
    --outstanding_;
    idle_cv_.notify_all();
    if (stopping_) return;
    LoseRegistration(now);
  }
  Wake();
}

void SimAgent::LoseRegistration(Clock::time_point now) {
  if (state_ != State::kRegistered) return;
  state_ = State::kUnregistered;
  bool live = std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return !r.ended; });
  outages_->Lost(index_, live, now);
  if (stream_got_event_ || now - stream_opened_ >= kHealthyStream) {
    register_backoff_ = Clock::duration::zero();
  }
  register_at_ = now + RetryDelay(&register_backoff_);
}

void SimAgent::SendHeartbeat(Clock::time_point now) {
  (void)now;
  heartbeat_in_flight_ = true;
  auto* call = new Call<v1::HeartbeatRequest, v1::HeartbeatResponse>;
  call->request.set_agent(name_);
  std::map<std::pair<std::string, int>, std::vector<int>> running;
  for (const Rank& rank : ranks_) {
    auto& live = running[{rank.job_id, rank.attempt}];
    if (!rank.ended) live.push_back(rank.rank);
  }
  for (const auto& [key, live] : running) {
    if (call->request.running_jobs().empty() ||
        call->request.running_jobs(call->request.running_jobs_size() - 1) != key.first) {
      call->request.add_running_jobs(key.first);
    }
    v1::RunningJob* job = call->request.add_running();
    job->set_job_id(key.first);
    job->set_attempt(key.second);
    for (int r : live) job->add_ranks(r);
  }
  call->context.set_deadline(Deadline(10));
  ++outstanding_;
  stub_->async()->Heartbeat(
      &call->context, &call->request, &call->response, [this, call](grpc::Status status) {
        Clock::time_point done = Clock::now();
        recorder_->Rpc("Heartbeat", status, done - call->start);
        delete call;
        {
          std::lock_guard<std::recursive_mutex> lock(mu_);
          --outstanding_;
          idle_cv_.notify_all();
          heartbeat_in_flight_ = false;
          next_heartbeat_ = done + heartbeat_interval_;
          if (status.ok()) {
            heartbeat_failures_ = 0;
          } else if (++heartbeat_failures_ == kHeartbeatFailuresBeforeReconnect ||
                     status.error_code() == grpc::StatusCode::NOT_FOUND) {
            if (stream_ != nullptr) stream_->Cancel();  // the stream's end re-registers
          }
        }
        Wake();
      });
}

void SimAgent::SendUpload(Clock::time_point now) {
  (void)now;
  if (batch_ == nullptr) {
    batch_ = std::make_unique<v1::UploadSamplesRequest>();
    batch_->set_batch_id(next_batch_id_++);
    const size_t n = std::min<size_t>(queue_.size(), options_.max_batch);
    for (size_t i = 0; i < n; ++i) {
      Sample& sample = queue_.front();
      if (auto* it = std::get_if<v1::IterationSample>(&sample)) {
        *batch_->add_samples() = std::move(*it);
      } else {
        *batch_->add_gpu_samples() = std::move(std::get<v1::GpuSample>(sample));
      }
      queue_.pop_front();
    }
    batch_last_ticket_ = acked_through_ + n;  // the queue starts after acked_through_
    if (!queue_.empty()) queue_since_ = now;
  }
  batch_->set_agent(name_);
  upload_in_flight_ = true;
  auto* call = new Call<v1::UploadSamplesRequest, v1::UploadSamplesResponse>;
  call->context.set_deadline(Deadline(60));
  ++outstanding_;
  stub_->async()->UploadSamples(
      &call->context, batch_.get(), &call->response, [this, call](grpc::Status status) {
        Clock::time_point done = Clock::now();
        recorder_->Rpc("UploadSamples", status, done - call->start);
        {
          std::lock_guard<std::recursive_mutex> lock(mu_);
          --outstanding_;
          idle_cv_.notify_all();
          upload_in_flight_ = false;
          const bool give_up = !status.ok() && !Transient(status) &&
                               ++upload_permanent_failures_ >= kMaxPermanentFailures;
          if (status.ok() || give_up) {
            if (status.ok()) {
              const v1::UploadSamplesResponse& r = call->response;
              recorder_->Response(r.stored(), r.duplicates(), r.gpu_stored(), r.gpu_duplicates(),
                                  r.rejected());
              recorder_->Batch(batch_->samples_size(), batch_->gpu_samples_size());
              recorder_->Acked(batch_->samples_size(), batch_->gpu_samples_size());
              Attribute(*batch_, r.rejected());
              outages_->UploadAcked(index_, done);
            } else {
              dropped_ += batch_->samples_size() + batch_->gpu_samples_size();
              std::fprintf(stderr, "fleet_sim: %s: gave up on a batch: %s\n", name_.c_str(),
                           status.error_message().c_str());
            }
            acked_through_ = batch_last_ticket_;
            batch_.reset();
            last_ack_ = done;
            upload_backoff_ = Clock::duration::zero();
            upload_permanent_failures_ = 0;
          } else {
            upload_retry_at_ =
                done + std::min<Clock::duration>(upload_backoff_ == Clock::duration::zero()
                                                     ? Clock::duration(kMinBackoff)
                                                     : upload_backoff_,
                                                 kMaxBackoff);
            upload_backoff_ = std::min<Clock::duration>((upload_retry_at_ - done) * 2, kMaxBackoff);
          }
        }
        delete call;
        Wake();
      });
}

void SimAgent::SendReport(Clock::time_point now) {
  (void)now;
  report_in_flight_ = true;
  auto* call = new Call<v1::ReportStatusRequest, v1::ReportStatusResponse>;
  call->request = reports_.front().request;
  call->request.set_agent(name_);
  call->context.set_deadline(Deadline(30));
  ++outstanding_;
  stub_->async()->ReportStatus(
      &call->context, &call->request, &call->response, [this, call](grpc::Status status) {
        Clock::time_point done = Clock::now();
        recorder_->Rpc("ReportStatus", status, done - call->start);
        {
          std::lock_guard<std::recursive_mutex> lock(mu_);
          --outstanding_;
          idle_cv_.notify_all();
          report_in_flight_ = false;
          const bool give_up = !status.ok() && !Transient(status) &&
                               ++report_permanent_failures_ >= kMaxPermanentFailures;
          if (status.ok() || give_up) {
            Report report = std::move(reports_.front());
            reports_.pop_front();
            report_backoff_ = Clock::duration::zero();
            report_permanent_failures_ = 0;
            if (give_up) {
              std::fprintf(stderr, "fleet_sim: %s: gave up on a report for %s: %s\n", name_.c_str(),
                           report.request.job_id().c_str(), status.error_message().c_str());
            }
            if (status.ok() && report.succeeded_world_size > 0) {
              jobs_->RankSucceeded(report.request.job_id(), report.request.attempt(),
                                   report.succeeded_world_size);
            }
            if (report.final_rank >= 0) {
              const std::string& job = report.request.job_id();
              const int attempt = report.request.attempt();
              ranks_.erase(std::remove_if(ranks_.begin(), ranks_.end(),
                                          [&](const Rank& r) {
                                            return r.job_id == job && r.attempt == attempt &&
                                                   r.rank == report.final_rank;
                                          }),
                           ranks_.end());
            }
          } else {
            Clock::duration delay = report_backoff_ == Clock::duration::zero()
                                        ? Clock::duration(kMinBackoff)
                                        : report_backoff_;
            report_backoff_ = std::min<Clock::duration>(delay * 2, kMaxBackoff);
            report_retry_at_ = done + delay;
          }
        }
        delete call;
        Wake();
      });
}

void SimAgent::StopTraining() {
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    Generate(Clock::now());
    training_ = false;
  }
  Wake();
}

int64_t SimAgent::unacknowledged() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  // A partly refused batch's re-sends too: until they answered, its samples are not
  // counted per rank.
  return static_cast<int64_t>(next_ticket_ - 1 - acked_through_) + resolve_samples_;
}

int SimAgent::running_ranks() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return static_cast<int>(
      std::count_if(ranks_.begin(), ranks_.end(), [](const Rank& r) { return !r.ended; }));
}

bool SimAgent::registered() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return state_ == State::kRegistered;
}

int64_t SimAgent::dropped() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return dropped_;
}

void SimAgent::Shutdown() {
  std::unique_lock<std::recursive_mutex> lock(mu_);
  stopping_ = true;
  if (stream_ != nullptr) stream_->Cancel();
  idle_cv_.wait_for(lock, std::chrono::seconds(70), [&] { return outstanding_ == 0; });
}

}  // namespace bench::fleetsim
