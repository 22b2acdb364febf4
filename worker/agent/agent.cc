#include "worker/agent/agent.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "worker/agent/retry.h"

namespace bench::agent {
namespace {

constexpr size_t kMaxFinished = 1000;
constexpr absl::Duration kMinBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(2);
// A stream that lived this long (or delivered an event) was healthy: reset the back-off.
constexpr absl::Duration kHealthyStream = absl::Seconds(2);
// Consecutive failed heartbeats after which the stream is re-established.
constexpr int kHeartbeatFailuresBeforeReconnect = 3;

}  // namespace

std::string DefaultBenchTrainPath() {
  char self[PATH_MAX + 1] = {};
  ssize_t n = readlink("/proc/self/exe", self, PATH_MAX);
  if (n > 0) {
    std::string path(self, static_cast<size_t>(n));
    size_t slash = path.rfind('/');
    if (slash != std::string::npos) {
      std::string candidate = path.substr(0, slash + 1) + "bench-train";
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  return "bench-train";
}

std::string LeftoverRankMessage(int pid) {
  return absl::StrCat("bench-agent restarted while this rank ran; it was killed (pid ", pid,
                      ")");
}

Agent::Agent(AgentOptions options) : options_(std::move(options)) {}

Agent::~Agent() { Shutdown(); }

absl::Status Agent::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (started_) return absl::FailedPreconditionError("agent already started");
    started_ = true;
  }
  if (options_.controller.empty()) return absl::InvalidArgumentError("--controller is required");
  InventoryOptions inventory_options;
  inventory_options.name = options_.name;
  inventory_options.address = options_.address;
  inventory_options.controller = options_.controller;
  inventory_options.cpu_slots = options_.cpu_slots;
  inventory_options.nvml_library = options_.nvml_library;
  inventory_ = BuildInventory(inventory_options);
  inventory_.mutable_labels()->insert(options_.labels.begin(), options_.labels.end());
  std::random_device random;
  inventory_.set_instance_id(absl::StrCat(absl::Hex(random(), absl::kZeroPad8),
                                          absl::Hex(random(), absl::kZeroPad8)));
  int hardware = static_cast<int>(std::thread::hardware_concurrency());
  if (inventory_.cpu_slots() > 0) {
    cpu_threads_ = std::max(1, hardware / inventory_.cpu_slots());
  } else if (options_.gpu_ranks_on_cpu) {
    cpu_threads_ = std::max(1, hardware / std::max(1, inventory_.gpus_size()));
  }

  if (!options_.join_token_file.empty() && options_.state_dir.empty()) {
    return absl::InvalidArgumentError(
        "--join-token-file needs a state directory (the agent's key and certificate live there)");
  }
  if (!options_.state_dir.empty()) {
    absl::Status writable = MakeWritableDirectory(options_.state_dir);
    if (!writable.ok()) return writable;
    auto lock = StateDirLock::Acquire(options_.state_dir);
    if (!lock.ok()) return lock.status();
    state_lock_ = std::move(*lock);
    SpoolOptions sample_spool;
    sample_spool.max_bytes = options_.spool_max_bytes;
    auto samples = Spool::Open(options_.state_dir + "/spool/samples", sample_spool);
    if (!samples.ok()) return samples.status();
    sample_spool_ = std::move(*samples);
    SpoolOptions report_spool;
    report_spool.max_bytes = kReportSpoolMaxBytes;
    auto reports = Spool::Open(options_.state_dir + "/spool/reports", report_spool);
    if (!reports.ok()) return reports.status();
    report_spool_ = std::move(*reports);
    auto recorded = ReadControllerId(options_.state_dir);
    if (recorded.ok()) {
      controller_id_ = *recorded;
    } else {
      Log("warning: ", recorded.status().message(),
                            "; the spool is replayed to whichever controller answers");
    }
    auto registry = RankRegistry::Open(options_.state_dir + "/ranks");
    if (!registry.ok()) return registry.status();
    registry_ = std::move(*registry);
  }
  // With a join token: this node's own key and certificate, from the state directory or
  // bootstrapped now (under the state directory's lock), then used as --tls-cert/--tls-key.
  std::optional<HeldCertificate> bootstrapped;
  if (!options_.join_token_file.empty()) {
    absl::StatusOr<BootstrapResult> ensured = EnsureAgentCertificate(BootstrapOptionsFor());
    if (!ensured.ok()) return ensured.status();
    bootstrapped = ensured->held;
    const AgentCertificateFiles files = CertificateFilesIn(options_.state_dir);
    options_.credentials.tls_cert = files.cert;
    options_.credentials.tls_key = files.key;
    options_.credentials.refresh_seconds = RefreshSecondsFor(ensured->held);
  }
  ControllerClientOptions client_options;
  client_options.target = options_.controller;
  client_options.credentials = options_.credentials;
  absl::StatusOr<std::unique_ptr<ControllerClient>> client =
      ControllerClient::Create(std::move(client_options));
  if (!client.ok()) return client.status();
  client_ = *std::move(client);
  if (bootstrapped.has_value()) {
    CertificateRenewerOptions renewer_options;
    renewer_options.bootstrap = BootstrapOptionsFor();
    renewer_ = std::make_unique<CertificateRenewer>(renewer_options, client_.get(), *bootstrapped);
    renewer_->Start();
  }
  StatusReporterOptions reporter_options;
  reporter_options.agent = inventory_.name();
  reporter_options.start_paused = true;  // until registered (AdoptControllerId)
  reporter_ = std::make_unique<StatusReporter>(client_.get(), reporter_options,
                                               report_spool_.get());
  if (registry_ != nullptr) ReportLeftovers(registry_->KillLeftovers());
  SampleUploaderOptions uploader_options;
  uploader_options.agent = inventory_.name();
  uploader_options.start_paused = true;
  uploader_ = std::make_unique<SampleUploader>(client_.get(), uploader_options,
                                               sample_spool_.get());
  {
    absl::MutexLock lock(&mu_);
    agent_name_ = inventory_.name();
    sinks_.push_back(std::make_unique<FencedSinks>(uploader_.get(), reporter_.get()));
  }
  uploader_->SetAgent(inventory_.name());
  reporter_->SetAgent(inventory_.name());

  std::vector<std::string> gpus;
  for (const auto& gpu : inventory_.gpus()) {
    gpus.push_back(absl::StrCat(gpu.index(), ": ", gpu.name()));
  }
  Log(
      "agent ", inventory_.name(), " (address ", inventory_.address(), ") for controller ",
      options_.controller, ": offering ",
      inventory_.gpus_size() > 0
          ? absl::StrCat(inventory_.gpus_size(), " GPU(s) [", absl::StrJoin(gpus, ", "), "]")
          : absl::StrCat(inventory_.cpu_slots(), " CPU slot(s) of ", cpu_threads_,
                         " thread(s)"),
      "; trainer ", options_.bench_train,
      options_.state_dir.empty() ? "; no state directory (samples queue in memory)"
                                 : absl::StrCat("; state in ", options_.state_dir,
                                                " (sample spool up to ",
                                                options_.spool_max_bytes, " bytes)"),
      inventory_.labels().empty() ? "" : "; labels ",
      absl::StrJoin(options_.labels, ",", absl::PairFormatter("=")));
  if (inventory_.gpus_size() > 0) {
    for (const auto& gpu : inventory_.gpus()) gpu_uuids_[gpu.index()] = gpu.uuid();
    telemetry_ = StartGpuTelemetry(options_.nvml_library, options_.gpu_sample_hz,
                                   uploader_.get());
    if (telemetry_.sampler != nullptr) {
      Log("sampling the GPUs of running ranks every ",
                            absl::FormatDuration(telemetry_.sampler->period()), " through ",
                            options_.nvml_library);
    } else {
      Log(telemetry_.note);
    }
    if (options_.gpu_ranks_on_cpu) {
      Log("WARNING: --gpu-ranks-on-cpu: ranks placed on GPUs run on the "
                            "CPU (--device cpu, ", cpu_threads_,
                            " thread(s) each); their GPUs are still sampled. For tests "
                            "only: the figures are not GPU figures.");
    }
  }
  stream_thread_ = std::thread([this] { StreamLoop(); });
  return absl::OkStatus();
}

BootstrapOptions Agent::BootstrapOptionsFor() const {
  BootstrapOptions bootstrap;
  bootstrap.controller = options_.controller;
  bootstrap.node = inventory_.name();
  bootstrap.tls_ca = options_.credentials.tls_ca;
  bootstrap.join_token_file = options_.join_token_file;
  bootstrap.state_dir = options_.state_dir;
  bootstrap.retry_for = options_.bootstrap_retry_for;
  return bootstrap;
}

void Agent::ReportLeftovers(const std::vector<LeftoverRank>& leftovers) {
  std::map<JobKey, benchfleet::v1::ReportStatusRequest> reports;
  for (const LeftoverRank& leftover : leftovers) {
    if (!leftover.was_alive) continue;
    const RankRecord& record = leftover.record;
    auto& report = reports[JobKey(record.job_id, record.attempt)];
    report.set_job_id(record.job_id);
    report.set_attempt(record.attempt);
    auto* rank = report.add_ranks();
    rank->set_rank(record.rank);
    rank->set_state(benchfleet::v1::RANK_STATE_FAILED);
    rank->set_exit_code(-SIGKILL);
    rank->set_message(LeftoverRankMessage(record.pid));
  }
  for (auto& [key, report] : reports) {
    Log("job ", key.first, " attempt ", key.second, ": reporting ",
                          report.ranks_size(), " rank(s) killed at start FAILED");
    reporter_->Report(std::move(report));
  }
}

bool Agent::SleepUnlessStopping(absl::Duration duration) {
  absl::MutexLock lock(&mu_);
  absl::Time deadline = absl::Now() + duration;
  while (!stopping_) {
    if (cv_.WaitWithDeadline(&mu_, deadline)) break;
  }
  return !stopping_;
}

void Agent::StreamLoop() {
  Backoff backoff(kMinBackoff, kMaxBackoff);
  uint64_t register_failures = 0;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    // Nothing goes out until this registration's controller id has been checked.
    uploader_->Pause();
    reporter_->Pause();
    auto registered = client_->Register(inventory_);
    if (!registered.ok()) {
      absl::Duration delay = RetryDelay(backoff);
      if (ShouldLogAttempt(++register_failures)) {
        Log("cannot register with controller ", options_.controller,
                              " (attempt ", register_failures, "): ",
                              registered.status().ToString(), "; retrying in ",
                              absl::FormatDuration(delay));
      }
      if (!SleepUnlessStopping(delay)) return;
      continue;
    }
    register_failures = 0;
    std::string name = registered->agent().empty() ? inventory_.name() : registered->agent();
    absl::Duration interval = registered->heartbeat_interval_ms() > 0
                                  ? absl::Milliseconds(registered->heartbeat_interval_ms())
                                  : absl::Seconds(1);
    uploader_->SetAgent(name);
    reporter_->SetAgent(name);
    AdoptControllerId(registered->controller_id());
    uploader_->Resume();
    reporter_->Resume();
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      agent_name_ = name;
      heartbeat_interval_ = interval;
      if (!heartbeat_thread_.joinable()) {
        heartbeat_thread_ = std::thread([this] { HeartbeatLoop(); });
      }
    }
    Log("registered as ", name, " with ", options_.controller,
                          " (heartbeat every ", absl::FormatDuration(interval), ")");

    absl::Time opened = absl::Now();
    bool got_event = false;
    absl::Status status = client_->StreamAssignments(
        name, [&](const benchfleet::v1::AssignmentEvent& event) {
          got_event = true;
          OnEvent(event);
        });
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    if (got_event || absl::Now() - opened >= kHealthyStream) backoff.Reset();
    absl::Duration delay = RetryDelay(backoff);
    Log("assignment stream ended (", status.ToString(),
                          "); re-registering in ", absl::FormatDuration(delay));
    if (!SleepUnlessStopping(delay)) return;
  }
}

absl::Duration Agent::RetryDelay(Backoff& backoff) {
  absl::Duration delay = backoff.Next();
  absl::MutexLock lock(&mu_);
  // Never slower than the heartbeats benchd asked for: after a benchd restart the agent
  // must be back well within benchd's lease (its reconcile grace).
  return std::min(delay, heartbeat_interval_);
}

void Agent::AdoptControllerId(const std::string& controller_id) {
  if (controller_id.empty() || controller_id == controller_id_) return;
  if (!controller_id_.empty()) {
    FencedSinks* old_sinks = nullptr;
    size_t cancelled = 0;
    {
      absl::MutexLock lock(&mu_);
      for (auto& [key, supervisor] : supervisors_) {
        supervisor->Cancel("benchd's database was replaced");
        retired_.push_back(std::move(supervisor));
        ++cancelled;
      }
      supervisors_.clear();
      finished_.clear();
      finished_order_.clear();
      old_sinks = sinks_.back().get();
      sinks_.push_back(std::make_unique<FencedSinks>(uploader_.get(), reporter_.get()));
    }
    old_sinks->Fence();
    if (cancelled > 0) {
      Log("cancelling ", cancelled, " assignment(s) of database ",
                            controller_id_, "; their samples and reports are dropped");
    }
    uint64_t samples = uploader_->DiscardPending();
    uint64_t reports = reporter_->DiscardPending();
    Log(
        "controller ", options_.controller, " has database id ", controller_id,
        ", not ", controller_id_, " (the database the ",
        options_.state_dir.empty() ? "queued" : "spooled",
        " records were meant for was wiped or replaced): discarding ", samples,
        " samples and ", reports, " status reports");
  }
  controller_id_ = controller_id;
  if (!options_.state_dir.empty()) {
    absl::Status written = WriteControllerId(options_.state_dir, controller_id_);
    if (!written.ok()) Log("warning: ", written.message());
  }
}

void Agent::HeartbeatLoop() {
  uint64_t failures = 0;
  while (true) {
    absl::Duration interval;
    std::string name;
    {
      absl::MutexLock lock(&mu_);
      interval = heartbeat_interval_;
      name = agent_name_;
    }
    if (!SleepUnlessStopping(interval)) return;
    ReapFinished();
    benchfleet::v1::HeartbeatRequest request;
    request.set_agent(name);
    FillRunning(&request);
    absl::Status status = client_->Heartbeat(request);
    if (status.ok()) {
      if (failures > 0) Log("heartbeats are getting through again");
      failures = 0;
      continue;
    }
    ++failures;
    if (ShouldLogAttempt(failures)) {
      Log("heartbeat failed (", failures, " in a row): ", status.ToString());
    }
    if (status.code() == absl::StatusCode::kNotFound ||
        failures == kHeartbeatFailuresBeforeReconnect) {
      client_->InterruptStream();  // the stream loop re-registers
    }
  }
}

void Agent::OnEvent(const benchfleet::v1::AssignmentEvent& event) {
  ReapFinished();
  if (event.has_assign()) {
    OnAssign(event.assign());
  } else if (event.has_cancel()) {
    OnCancel(event.cancel());
  }
}

void Agent::OnAssign(const benchfleet::v1::Assignment& assignment) {
  JobKey key(assignment.job_id(), assignment.attempt());
  RankSupervisor* supervisor = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    if (supervisors_.count(key) > 0 || finished_.count(key) > 0) {
      Log("job ", key.first, " attempt ", key.second,
                            ": assignment seen before; ignored");
      return;
    }
    RankSupervisorOptions options;
    options.bench_train = options_.bench_train;
    options.address = inventory_.address();
    options.node_name = inventory_.name();
    options.data_roots = options_.data_roots;
    options.cpu_threads = cpu_threads_;
    options.host_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    options.kill_grace = options_.kill_grace;
    options.gpu_ranks_on_cpu = options_.gpu_ranks_on_cpu;
    options.fault_scenario = options_.fault_scenario;
    options.gpu_sampler = telemetry_.sampler.get();
    options.gpu_uuids = gpu_uuids_;
    options.telemetry_note = telemetry_.note;
    options.registry = registry_.get();
    if (options_.gpu_ranks_on_cpu && options.telemetry_note.empty()) {
      // The readings are real but of GPUs that did not run the work: say so.
      options.telemetry_note = kGpuRanksOnCpuNote;
    }
    auto owned = std::make_unique<RankSupervisor>(assignment, std::move(options),
                                                  sinks_.back().get(), sinks_.back().get());
    supervisor = owned.get();
    supervisors_.emplace(key, std::move(owned));
  }
  // Outside the lock: spawning takes a moment. Only this thread (the stream thread)
  // starts supervisors, and Shutdown joins it before touching them.
  supervisor->Start();
}

void Agent::OnCancel(const benchfleet::v1::CancelAssignment& cancel) {
  absl::MutexLock lock(&mu_);
  bool found = false;
  for (auto& [key, supervisor] : supervisors_) {
    if (key.first != cancel.job_id()) continue;
    if (cancel.attempt() != 0 && key.second != cancel.attempt()) continue;
    found = true;
    supervisor->Cancel(absl::StrCat("cancelled by the controller",
                                    cancel.reason().empty() ? "" : ": ", cancel.reason()));
  }
  Log("job ", cancel.job_id(), " attempt ", cancel.attempt(), ": cancel",
                        cancel.reason().empty() ? "" : " (", cancel.reason(),
                        cancel.reason().empty() ? "" : ")",
                        found ? "" : "; not running here");
}

void Agent::ReapFinished() {
  std::vector<std::unique_ptr<RankSupervisor>> done;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = supervisors_.begin(); it != supervisors_.end();) {
      RankSupervisor* supervisor = it->second.get();
      if (supervisor->Done() && reporter_->IsDelivered(supervisor->last_report_ticket())) {
        finished_.insert(it->first);
        finished_order_.push_back(it->first);
        if (finished_order_.size() > kMaxFinished) {
          finished_.erase(finished_order_.front());
          finished_order_.pop_front();
        }
        done.push_back(std::move(it->second));
        it = supervisors_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = retired_.begin(); it != retired_.end();) {
      if ((*it)->Done()) {
        done.push_back(std::move(*it));
        it = retired_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& supervisor : done) supervisor->Join();
}

void Agent::FillRunning(benchfleet::v1::HeartbeatRequest* request) {
  absl::MutexLock lock(&mu_);
  for (const auto& [key, supervisor] : supervisors_) {
    // The map is ordered by (job, attempt): a job's attempts are adjacent.
    if (request->running_jobs().empty() ||
        request->running_jobs(request->running_jobs_size() - 1) != key.first) {
      request->add_running_jobs(key.first);
    }
    auto* running = request->add_running();
    running->set_job_id(key.first);
    running->set_attempt(key.second);
    for (int rank : supervisor->LiveRanks()) running->add_ranks(rank);
  }
}

void Agent::Shutdown(const std::string& reason) {
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || shut_down_) return;
    shut_down_ = true;
    stopping_ = true;
    cv_.SignalAll();
  }
  Log("shutting down");
  if (client_ != nullptr) client_->Shutdown();
  if (renewer_ != nullptr) renewer_->Stop();
  if (stream_thread_.joinable()) stream_thread_.join();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();

  std::map<JobKey, std::unique_ptr<RankSupervisor>> supervisors;
  std::vector<std::unique_ptr<RankSupervisor>> retired;
  {
    absl::MutexLock lock(&mu_);
    supervisors.swap(supervisors_);
    retired.swap(retired_);
  }
  for (auto& [key, supervisor] : supervisors) supervisor->Cancel("agent shutting down");
  absl::Time exit_deadline = absl::Now() + options_.kill_grace + absl::Seconds(5);
  for (auto& [key, supervisor] : supervisors) {
    if (!supervisor->WaitExited(exit_deadline)) {
      Log("job ", key.first, ": ranks still running after SIGKILL");
    }
  }
  for (auto& supervisor : retired) {
    if (!supervisor->WaitExited(exit_deadline)) {
      Log("job ", supervisor->job_id(), " (of a previous database): ranks "
                            "still running after SIGKILL");
    }
  }
  if (uploader_ != nullptr) {
    if (!uploader_->Drain(absl::Now() + options_.shutdown_flush_timeout)) {
      Log("shutting down with samples not yet delivered");
    }
    uploader_->Shutdown();
  }
  for (auto& [key, supervisor] : supervisors) supervisor->Join();
  for (auto& supervisor : retired) supervisor->Join();
  if (reporter_ != nullptr) {
    if (!reporter_->Drain(absl::Now() + options_.shutdown_flush_timeout)) {
      Log("shutting down with status reports not yet delivered");
    }
    reporter_->Shutdown();
  }
  Deregister(reason);
  supervisors.clear();
  retired.clear();
  telemetry_.sampler.reset();
  telemetry_.nvml.reset();
  Log("stopped");
}

void Agent::Deregister(const std::string& reason) {
  std::string name;
  {
    absl::MutexLock lock(&mu_);
    name = agent_name_;
  }
  if (client_ == nullptr || name.empty()) return;  // never registered
  benchfleet::v1::DeregisterRequest request;
  request.set_agent(name);
  request.set_reason(reason);
  request.set_instance_id(inventory_.instance_id());
  absl::Status status = client_->Deregister(request);
  if (status.ok()) {
    Log("deregistered from the controller");
  } else {
    Log("could not deregister (the controller will notice when the lease runs out): ", status);
  }
}

}  // namespace bench::agent
