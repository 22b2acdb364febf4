#include "tests/bench/fleet_sim/fleet.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace bench::fleetsim {
namespace {

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fleet_sim: cannot read %s (make the PKI with tests/bench/fleet_pki.sh)\n",
                 path.c_str());
    std::exit(2);
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void AddCount(std::vector<int64_t>* counts, int value) {
  if (value < 0) value = 0;
  if (static_cast<size_t>(value) >= counts->size()) counts->resize(value + 1, 0);
  ++(*counts)[value];
}

}  // namespace

std::string NodeName(int index) { return absl::StrFormat("node-%04d", index); }

std::shared_ptr<grpc::Channel> NewChannel(const FleetOptions& options, const std::string& target,
                                          const std::string& cert_name, int id) {
  grpc::ChannelArguments args;
  // One TCP connection per simulated node, as separate processes would have.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("benchfleet.fleet_sim.channel", id);
  args.SetMaxReceiveMessageSize(64 << 20);
  if (options.ca.empty()) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFileOrDie(options.ca);
  ssl.pem_cert_chain = ReadFileOrDie(options.cert_dir + "/" + cert_name + ".pem");
  ssl.pem_private_key = ReadFileOrDie(options.cert_dir + "/" + cert_name + ".key");
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

void Recorder::Rpc(const std::string& method, const grpc::Status& status, Clock::duration latency) {
  std::lock_guard<std::mutex> lock(mu_);
  MethodStats& m = s_.methods[method];
  ++m.calls;
  if (!status.ok()) {
    int code = static_cast<int>(status.error_code());
    ++m.errors[code >= 0 && code <= 16  // gRPC's codes are absl's
                   ? absl::StatusCodeToString(static_cast<absl::StatusCode>(code))
                   : absl::StrFormat("CODE_%d", code)];
  }
  m.latency.Add(Micros(latency));
}

void Recorder::Count(const std::string& method) {
  std::lock_guard<std::mutex> lock(mu_);
  ++s_.methods[method].calls;
}

void Recorder::Batch(int iterations, int readings) {
  std::lock_guard<std::mutex> lock(mu_);
  ++s_.batches;
  s_.batch_iterations += iterations;
  s_.batch_readings += readings;
  AddCount(&s_.batch_size_counts, iterations + readings);
  AddCount(&s_.batch_iter_counts, iterations);
  AddCount(&s_.batch_reading_counts, readings);
}

void Recorder::Acked(int64_t iterations, int64_t readings) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.acked_iterations += iterations;
  s_.acked_readings += readings;
}

void Recorder::ByRank(const std::string& job, int attempt, int rank, int iterations, int readings,
                      int refused_iterations, int refused_readings) {
  std::lock_guard<std::mutex> lock(mu_);
  RankCounts& counts = by_rank_[{job, attempt, rank}];
  counts.iterations += iterations;
  counts.readings += readings;
  counts.refused_iterations += refused_iterations;
  counts.refused_readings += refused_readings;
}

void Recorder::Unattributed(int64_t samples) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.unattributed += samples;
}

void Recorder::Response(int64_t stored, int64_t duplicates, int64_t gpu_stored,
                        int64_t gpu_duplicates, int64_t rejected) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.stored += stored;
  s_.duplicates += duplicates;
  s_.gpu_stored += gpu_stored;
  s_.gpu_duplicates += gpu_duplicates;
  s_.rejected += rejected;
}

void Recorder::Generated(int64_t iterations, int64_t readings) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.generated_iterations += iterations;
  s_.generated_readings += readings;
}

void Recorder::SubmitToAssigned(Clock::duration latency) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.submit_to_assigned.Add(Micros(latency));
}

void Recorder::JobFinished(bool by_poll) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(by_poll ? s_.jobs_ended_by_poll : s_.jobs_finished);
}

Recorder::Snapshot Recorder::Take() const {
  std::lock_guard<std::mutex> lock(mu_);
  return s_;
}

std::map<std::tuple<std::string, int, int>, Recorder::RankCounts> Recorder::AckedByRank() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_rank_;
}

void JobBook::Submitting(const std::string& request_id, int gpus, Clock::time_point at) {
  std::lock_guard<std::mutex> lock(mu_);
  Pending& p = by_request_[request_id];
  p.submitted = at;
  p.gpus = gpus;
  outstanding_gpus_ += gpus;
}

void JobBook::Submitted(const std::string& request_id, const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  ++submitted_;
  auto it = by_request_.find(request_id);
  if (it == by_request_.end()) return;
  it->second.job_id = job_id;
  Running& r = jobs_[job_id];
  r.gpus = it->second.gpus;
  r.submitted = it->second.submitted;
  if (it->second.timed) by_request_.erase(it);
}

void JobBook::SubmitFailed(const std::string& request_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_request_.find(request_id);
  if (it == by_request_.end()) return;
  outstanding_gpus_ -= it->second.gpus;
  by_request_.erase(it);
}

void JobBook::Delivered(const std::string& request_id, const std::string& job_id, int ranks) {
  Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_request_.find(request_id);
  if (it == by_request_.end() || it->second.timed) return;
  it->second.delivered += ranks;
  if (it->second.delivered >= it->second.gpus) {
    it->second.timed = true;
    recorder_->SubmitToAssigned(now - it->second.submitted);
    if (!it->second.job_id.empty()) by_request_.erase(it);  // the submit answered already
  }
  (void)job_id;
}

void JobBook::FinishLocked(const std::string& job_id, bool by_poll) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  outstanding_gpus_ -= it->second.gpus;
  jobs_.erase(it);
  recorder_->JobFinished(by_poll);
}

void JobBook::RankSucceeded(const std::string& job_id, int attempt, int world_size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  if (++it->second.succeeded[attempt] >= world_size) FinishLocked(job_id, false);
}

void JobBook::Ended(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  FinishLocked(job_id, true);
}

int JobBook::outstanding_gpus() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outstanding_gpus_;
}

std::vector<std::string> JobBook::OutstandingSince(Clock::time_point before) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [id, job] : jobs_) {
    if (job.submitted < before) out.push_back(id);
  }
  return out;
}

int64_t JobBook::submitted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return submitted_;
}

void OutageTracker::Lost(int agent, bool had_ranks, Clock::time_point at) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!lost_.insert(agent).second) return;
  --registered_;
  if (!open_) {
    open_ = true;
    Raw raw;
    raw.start = at;
    outages_.push_back(raw);
  }
  ++outages_.back().lost;
  if (had_ranks) awaiting_upload_.insert(agent);
}

void OutageTracker::Registered(int agent, Clock::time_point at) {
  std::lock_guard<std::mutex> lock(mu_);
  if (lost_.erase(agent) == 0) {
    ++registered_;  // the first registration
    return;
  }
  ++registered_;
  ++reconnects_;
  if (open_ && lost_.empty() && !outages_.back().has_registered) {
    outages_.back().registered = at;
    outages_.back().has_registered = true;
    if (awaiting_upload_.empty()) {
      outages_.back().uploading = at;
      outages_.back().has_uploading = true;
      open_ = false;
    }
  }
}

void OutageTracker::UploadAcked(int agent, Clock::time_point at) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_ || lost_.count(agent) > 0) return;
  if (awaiting_upload_.erase(agent) == 0) return;
  if (awaiting_upload_.empty() && lost_.empty()) {
    outages_.back().uploading = at;
    outages_.back().has_uploading = true;
    open_ = false;
  }
}

std::vector<OutageTracker::Outage> OutageTracker::Outages(Clock::time_point run_start) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Outage> out;
  for (const Raw& raw : outages_) {
    Outage o;
    o.start_s = Seconds(raw.start - run_start);
    o.agents_lost = raw.lost;
    if (raw.has_registered) o.all_registered_after_s = Seconds(raw.registered - raw.start);
    if (raw.has_uploading) o.all_uploading_after_s = Seconds(raw.uploading - raw.start);
    out.push_back(o);
  }
  return out;
}

int64_t OutageTracker::reconnects() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reconnects_;
}

int OutageTracker::registered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registered_;
}

}  // namespace bench::fleetsim
