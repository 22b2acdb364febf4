#include "worker/agent/rank_supervisor.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/free_port.h"
#include "common/log.h"
#include "common/names.h"
#include "common/spec_names.h"
#include "common/trainer_contract.h"
#include "worker/agent/data_path.h"
#include "worker/agent/trainer_echo.h"
#include "worker/agent/trainer_event_parser.h"

namespace bench::agent {
namespace {

using benchfleet::v1::RankReport;
using benchfleet::v1::RankState;

bool IsCuda(const benchfleet::v1::Assignment& assignment) {
  return assignment.device_kind() == "cuda";
}

RankReport MakeReport(int rank, RankState state, absl::string_view message = "") {
  RankReport report;
  report.set_rank(rank);
  report.set_state(state);
  report.set_message(std::string(message));
  return report;
}

// Waits for `pid` to exit without reaping it, so that its pid (and process group id)
// cannot be reused while we may still signal the group.
void WaitForExitNoReap(pid_t pid) {
  siginfo_t info;
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0) {
    if (errno != EINTR) return;
  }
}

}  // namespace

RankLaunch BuildRankLaunch(const benchfleet::v1::Assignment& assignment, size_t index,
                           const std::string& master_addr, int master_port,
                           const RankSupervisorOptions& options) {
  const auto& spec = assignment.spec();
  std::string precision = spec.precision() == benchfleet::v1::PRECISION_UNSPECIFIED
                              ? PrecisionName(benchfleet::v1::PRECISION_FP32)
                              : PrecisionName(spec.precision());
  int device_index = index < static_cast<size_t>(assignment.device_indices_size())
                         ? assignment.device_indices(static_cast<int>(index))
                         : 0;
  const bool on_gpu = IsCuda(assignment) && !options.gpu_ranks_on_cpu;
  namespace contract = bench::trainer_contract;
  RankLaunch launch;
  launch.argv = {options.bench_train};
  auto pass = [&launch](const char* flag, std::string value) {
    launch.argv.push_back(flag);
    launch.argv.push_back(std::move(value));
  };
  pass(contract::kFlagModel, spec.model());
  pass(contract::kFlagPrecision, precision);
  pass(contract::kFlagBatchSize, absl::StrCat(spec.batch_size()));
  pass(contract::kFlagIterations, absl::StrCat(spec.iterations()));
  pass(contract::kFlagWarmup, absl::StrCat(spec.warmup_iterations()));
  pass(contract::kFlagImageSize, absl::StrCat(spec.image_size()));
  // --data-dir before --data: bench-train's --data-dir alone means imagefolder.
  const std::string data = DataSourceName(spec.data());
  if (data != kDataSynthetic) pass(contract::kFlagDataDir, spec.data_path());
  pass(contract::kFlagData, data);
  if (spec.loader_threads() > 0) {
    pass(contract::kFlagLoaderThreads, absl::StrCat(spec.loader_threads()));
  }
  if (spec.data_vs_compute()) launch.argv.push_back(contract::kFlagDataVsCompute);
  pass(contract::kFlagDevice,
       on_gpu ? absl::StrCat(contract::kDeviceCudaPrefix, device_index) : contract::kDeviceCpu);
  int threads = std::max(1, options.cpu_threads);
  if (!on_gpu) pass(contract::kFlagThreads, absl::StrCat(threads));
  if (!options.fault_scenario.empty()) pass(contract::kFlagFaultScenario, options.fault_scenario);
  launch.env = {
      {contract::kEnvRank, absl::StrCat(assignment.ranks(static_cast<int>(index)))},
      {contract::kEnvWorldSize, absl::StrCat(assignment.world_size())},
      {contract::kEnvLocalRank, absl::StrCat(index)},
      {contract::kEnvLocalWorldSize, absl::StrCat(assignment.ranks_size())},
      {contract::kEnvMasterAddr, master_addr},
      {contract::kEnvMasterPort, absl::StrCat(master_port)},
      {contract::kEnvNodeName, options.node_name},
  };
  if (on_gpu) {
    // The device index is NVML's, which counts GPUs in PCI bus order; CUDA must count the
    // same way, or a rank would train on another GPU than the one placed. (NVML ignores
    // CUDA_VISIBLE_DEVICES: an agent must not be started with it set.)
    launch.env.emplace_back("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    // Host threads: the node's cores shared among its ranks (torchrun sets 1).
    int per_rank = std::max(1, options.host_cores / std::max(1, assignment.ranks_size()));
    launch.env.emplace_back("OMP_NUM_THREADS", absl::StrCat(per_rank));
  } else {
    launch.env.emplace_back("OMP_NUM_THREADS", absl::StrCat(threads));
  }
  return launch;
}

RankSupervisor::RankSupervisor(benchfleet::v1::Assignment assignment,
                               RankSupervisorOptions options, SampleSink* samples,
                               ReportSink* reports)
    : assignment_(std::move(assignment)),
      options_(std::move(options)),
      samples_(samples),
      reports_(reports) {}

RankSupervisor::~RankSupervisor() {
  Cancel("agent stopped supervising the job");
  Join();
}

std::string RankSupervisor::Prefix(const Rank& rank) const {
  return absl::StrCat("[", assignment_.job_id(), " rank ", rank.rank, "] ");
}

RankReport RankSupervisor::NewReport(int rank, RankState state,
                                     absl::string_view message) const {
  RankReport report = MakeReport(rank, state, message);
  if (IsCuda(assignment_)) report.set_telemetry_note(options_.telemetry_note);
  return report;
}

uint64_t RankSupervisor::SendReport(benchfleet::v1::ReportStatusRequest report) {
  report.set_job_id(assignment_.job_id());
  report.set_attempt(assignment_.attempt());
  uint64_t ticket = reports_->Report(std::move(report));
  absl::MutexLock lock(&mu_);
  last_report_ticket_ = std::max(last_report_ticket_, ticket);
  return ticket;
}

void RankSupervisor::Start() {
  const auto& a = assignment_;
  benchfleet::v1::ReportStatusRequest first;
  auto fail_all = [&](absl::string_view message) {
    for (int rank : a.ranks()) {
      *first.add_ranks() = NewReport(rank, benchfleet::v1::RANK_STATE_FAILED, message);
    }
    Log("job ", a.job_id(), ": ", message);
    SendReport(std::move(first));
    absl::MutexLock lock(&mu_);
    started_ = true;
    cv_.SignalAll();
  };
  if (a.ranks_size() != a.device_indices_size() || a.world_size() <= 0) {
    return fail_all(absl::StrCat("malformed assignment: ", a.ranks_size(), " ranks, ",
                                 a.device_indices_size(), " device indices, world size ",
                                 a.world_size()));
  }
  // The data must be here before any rank starts: a node without it fails the job with
  // the node and the path, not a trainer's stack of errors (and not as a lost node).
  if (absl::Status data = CheckDataPath(a.spec(), options_.node_name, options_.data_roots);
      !data.ok()) {
    return fail_all(data.message());
  }
  std::string master_addr = a.master_addr().empty() ? options_.address : a.master_addr();
  int master_port = a.master_port();
  if (master_port == 0) {
    auto port = PickFreePort(master_addr);
    if (!port.ok()) {
      Log("job ", a.job_id(), ": ", port.status().message(),
                            "; picking the port on all interfaces");
      port = PickFreePort("");
    }
    if (!port.ok()) {
      return fail_all(absl::StrCat("cannot pick a rendezvous port: ", port.status().message()));
    }
    master_port = *port;
    first.set_master_port(master_port);
  }
  {
    absl::MutexLock lock(&mu_);
    master_port_ = master_port;
  }

  for (int i = 0; i < a.ranks_size(); ++i) {
    auto rank = std::make_unique<Rank>();
    rank->rank = a.ranks(i);
    rank->index = static_cast<size_t>(i);
    rank->device_index = a.device_indices(i);
    std::string not_started;
    {
      absl::MutexLock lock(&mu_);
      if (terminate_) not_started = terminate_reason_;
    }
    if (!not_started.empty()) {
      *first.add_ranks() = NewReport(rank->rank, benchfleet::v1::RANK_STATE_CANCELLED,
                                     absl::StrCat("not started: ", not_started));
      continue;
    }
    RankLaunch launch = BuildRankLaunch(a, rank->index, master_addr, master_port, options_);
    SubprocessOptions process_options;
    process_options.argv = std::move(launch.argv);
    process_options.env = std::move(launch.env);
    process_options.stdout_mode = SubprocessOptions::Output::kPipe;
    process_options.stderr_mode = SubprocessOptions::Output::kPipe;
    auto process = Subprocess::Start(process_options);
    if (!process.ok()) {
      std::string message = absl::StrCat("cannot start ", options_.bench_train, ": ",
                                         process.status().message());
      Log(Prefix(*rank), message);
      *first.add_ranks() =
          NewReport(rank->rank, benchfleet::v1::RANK_STATE_FAILED, message);
      absl::MutexLock lock(&mu_);
      RequestTerminationLocked(absl::StrCat("rank ", rank->rank, " could not start"));
      continue;
    }
    rank->process = std::move(*process);
    if (options_.registry != nullptr) {
      absl::Status recorded = options_.registry->RecordProcess(a.job_id(), a.attempt(),
                                                               rank->rank,
                                                               rank->process->pid());
      if (!recorded.ok()) {
        Log(Prefix(*rank), "warning: cannot record the rank in ",
                              options_.registry->dir(), ": ", recorded.message());
      }
    }
    if (IsCuda(a) && options_.gpu_sampler != nullptr) {
      auto uuid = options_.gpu_uuids.find(rank->device_index);
      options_.gpu_sampler->Register(a.job_id(), a.attempt(), rank->rank, rank->device_index,
                                     uuid == options_.gpu_uuids.end() ? "" : uuid->second);
      rank->gpu_sampled = true;
    }
    *first.add_ranks() = NewReport(rank->rank, benchfleet::v1::RANK_STATE_STARTED);
    ranks_.push_back(std::move(rank));
  }
  Log("job ", a.job_id(), " attempt ", a.attempt(), ": started ",
                        ranks_.size(), " of ", a.ranks_size(), " ranks (world size ",
                        a.world_size(), ", rendezvous ", master_addr, ":", master_port, ")");
  SendReport(std::move(first));

  {
    absl::MutexLock lock(&mu_);
    live_ = reading_ = pending_ = static_cast<int>(ranks_.size());
    started_ = true;
    cv_.SignalAll();
  }
  for (auto& rank : ranks_) {
    Rank* r = rank.get();
    r->stdout_reader = std::thread([this, r] { ReadStdout(r); });
    r->stderr_reader = std::thread([this, r] { ReadStderr(r); });
    r->waiter = std::thread([this, r] { Supervise(r); });
  }
  terminator_ = std::thread([this] { Terminator(); });
}

void RankSupervisor::ReadStdout(Rank* rank) {
  const std::string prefix = Prefix(*rank);
  ForEachLine(rank->process->stdout_fd(), [&](absl::string_view line) {
    if (line.empty()) return;
    const int64_t received_unix_ns = absl::ToUnixNanos(absl::Now());
    auto event = ParseTrainerEvent(line);
    if (!event.ok()) {
      EchoLine(prefix, line);
      return;
    }
    switch (event->kind) {
      case TrainerEvent::Kind::kIter: {
        benchfleet::v1::IterationSample sample = std::move(event->sample);
        sample.set_job_id(assignment_.job_id());
        sample.set_attempt(assignment_.attempt());
        sample.set_rank(rank->rank);
        sample.set_received_unix_ns(received_unix_ns);
        if (!std::isfinite(sample.loss()) && rank->nonfinite_losses++ == 0) {
          EchoLine(prefix, absl::StrCat("non-finite loss (", sample.loss(), ") at iteration ",
                                        sample.iteration(),
                                        "; it is stored and counted like any other"));
        }
        rank->last_sample_ticket = samples_->Add(std::move(sample));
        break;
      }
      case TrainerEvent::Kind::kStart: {
        rank->parameters = event->parameters;
        rank->versions = std::move(event->versions);
        rank->precision = event->precision;
        rank->simulated = event->simulated;
        const bool requested_other = !event->requested_precision.empty() &&
                                     !event->precision.empty() &&
                                     event->requested_precision != event->precision;
        EchoLine(prefix, absl::StrCat("start: ", event->model, ", ", event->parameters,
                                      " parameters",
                                      event->precision.empty() ? "" : ", ", event->precision,
                                      requested_other ? " (requested " : "",
                                      requested_other ? event->requested_precision : "",
                                      requested_other ? ")" : "",
                                      event->device.empty() ? "" : " on ", event->device));
        // Tells the controller now, not only when the rank ends: the precision in effect
        // (and the parameters and versions) are part of the job's status while it runs.
        RankReport started = NewReport(rank->rank, benchfleet::v1::RANK_STATE_STARTED);
        started.set_parameters(rank->parameters);
        started.mutable_versions()->insert(rank->versions.begin(), rank->versions.end());
        started.set_precision(rank->precision);
        started.set_simulated(rank->simulated);
        benchfleet::v1::ReportStatusRequest request;
        *request.add_ranks() = std::move(started);
        SendReport(std::move(request));
        break;
      }
      case TrainerEvent::Kind::kSummary: {
        rank->saw_summary = true;
        rank->summary = std::move(event->summary);
        rank->summary.set_rank(rank->rank);
        std::string health;
        if (rank->summary.nonfinite_losses() > 0 || rank->summary.skipped_steps() > 0) {
          health = absl::StrCat(", ", rank->summary.nonfinite_losses(), " non-finite losses, ",
                                rank->summary.skipped_steps(), " skipped steps");
        }
        EchoLine(prefix, absl::StrCat("summary: ", event->images_per_second,
                                      " images/s over ", rank->summary.window_s(), " s",
                                      health));
        break;
      }
      case TrainerEvent::Kind::kError:
        rank->error_message = event->message;
        EchoLine(prefix, absl::StrCat("error: ", event->message));
        break;
      case TrainerEvent::Kind::kOther:
        break;
    }
  });
}

void RankSupervisor::ReadStderr(Rank* rank) {
  const std::string prefix = Prefix(*rank);
  ForEachLine(rank->process->stderr_fd(), [&](absl::string_view line) {
    rank->stderr_tail.Add(line);
    EchoLine(prefix, line);
  });
}

void RankSupervisor::Supervise(Rank* rank) {
  WaitForExitNoReap(rank->process->pid());
  uint64_t gpu_ticket = 0;
  if (rank->gpu_sampled) {
    gpu_ticket = options_.gpu_sampler->Unregister(assignment_.job_id(), assignment_.attempt(),
                                                  rank->rank);
  }
  int exit_code;
  {
    absl::MutexLock lock(&mu_);
    rank->process->SignalGroup(SIGKILL);  // whatever it left behind
    exit_code = rank->process->Wait();    // a zombie by now: returns at once
    if (options_.registry != nullptr) options_.registry->Forget(rank->process->pid());
    rank->exited = true;
    --live_;
    cv_.SignalAll();
  }
  rank->stdout_reader.join();
  rank->stderr_reader.join();
  {
    absl::MutexLock lock(&mu_);
    --reading_;
    cv_.SignalAll();
  }

  const bool succeeded = exit_code == 0 && rank->saw_summary;
  std::string failure;
  if (!succeeded) {
    failure = !rank->error_message.empty() ? rank->error_message
              : exit_code == 0             ? "exited with code 0 without a summary event"
                                           : DescribeExit(exit_code);
  }
  RankReport report = NewReport(rank->rank, benchfleet::v1::RANK_STATE_UNSPECIFIED);
  report.set_exit_code(exit_code);
  report.set_parameters(rank->parameters);
  report.mutable_versions()->insert(rank->versions.begin(), rank->versions.end());
  report.set_precision(rank->precision);
  report.set_simulated(rank->simulated);
  {
    absl::MutexLock lock(&mu_);
    if (succeeded) {
      report.set_state(benchfleet::v1::RANK_STATE_SUCCEEDED);
    } else if (rank->signalled) {
      report.set_state(benchfleet::v1::RANK_STATE_CANCELLED);
      report.set_message(terminate_reason_);
    } else {
      report.set_state(benchfleet::v1::RANK_STATE_FAILED);
      report.set_message(failure);
      RequestTerminationLocked(absl::StrCat("rank ", rank->rank, " failed: ", failure));
    }
  }
  if (succeeded) {
    *report.mutable_summary() = rank->summary;
  } else {
    report.set_stderr_tail(rank->stderr_tail.Text());
  }
  Log(Prefix(*rank),
                        absl::StripPrefix(benchfleet::v1::RankState_Name(report.state()),
                                          "RANK_STATE_"),
                        " (", DescribeExit(exit_code), ")",
                        report.message().empty() ? "" : ": ", report.message());

  uint64_t last_ticket = std::max(rank->last_sample_ticket, gpu_ticket);
  if (last_ticket > 0 && !samples_->WaitDelivered(last_ticket)) {
    Log(Prefix(*rank), "reporting before all samples were delivered");
  }
  benchfleet::v1::ReportStatusRequest request;
  *request.add_ranks() = std::move(report);
  SendReport(std::move(request));
  absl::MutexLock lock(&mu_);
  --pending_;
  cv_.SignalAll();
}

void RankSupervisor::RequestTerminationLocked(absl::string_view reason) {
  if (terminate_) return;
  terminate_ = true;
  terminate_reason_ = std::string(reason);
  cv_.SignalAll();
}

void RankSupervisor::Cancel(absl::string_view reason) {
  absl::MutexLock lock(&mu_);
  RequestTerminationLocked(reason);
}

void RankSupervisor::Terminator() {
  absl::MutexLock lock(&mu_);
  while (!terminate_ && live_ > 0) cv_.Wait(&mu_);
  if (live_ == 0) return;
  for (auto& rank : ranks_) {
    if (rank->exited) continue;
    rank->signalled = true;
    rank->process->SignalGroup(SIGTERM);
  }
  absl::Time deadline = absl::Now() + options_.kill_grace;
  while (live_ > 0) {
    if (cv_.WaitWithDeadline(&mu_, deadline)) break;
  }
  for (auto& rank : ranks_) {
    if (rank->exited) continue;
    Log(Prefix(*rank), "still running ",
                          absl::FormatDuration(options_.kill_grace),
                          " after SIGTERM; sending SIGKILL");
    rank->process->SignalGroup(SIGKILL);
  }
}

bool RankSupervisor::Done() const {
  absl::MutexLock lock(&mu_);
  return started_ && pending_ == 0;
}

bool RankSupervisor::WaitExited(absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  while (reading_ > 0) {
    if (cv_.WaitWithDeadline(&mu_, deadline)) break;
  }
  return reading_ == 0;
}

void RankSupervisor::Join() {
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || joined_) return;
    while (pending_ > 0) cv_.Wait(&mu_);
    joined_ = true;
  }
  for (auto& rank : ranks_) {
    if (rank->waiter.joinable()) rank->waiter.join();
  }
  if (terminator_.joinable()) terminator_.join();
}

uint64_t RankSupervisor::last_report_ticket() const {
  absl::MutexLock lock(&mu_);
  return last_report_ticket_;
}

std::vector<int> RankSupervisor::LiveRanks() const {
  absl::MutexLock lock(&mu_);
  std::vector<int> live;
  if (!started_) return live;
  for (const auto& rank : ranks_) {
    if (!rank->exited) live.push_back(rank->rank);
  }
  return live;
}

int RankSupervisor::master_port() const {
  absl::MutexLock lock(&mu_);
  return master_port_;
}

}  // namespace bench::agent
