// Ingestion load generator: N simulated bench-agents stream iteration samples into a
// running benchd the way real agents do, and it reports what was committed and how long
// each sample took from its creation to its commit. Driven by tests/bench/ingest_load.sh.
//
// Every simulated agent registers (with --slots CPU slots), keeps its assignment stream
// open, heartbeats, and reports STARTED for the ranks assigned to it (the rank-0 agent
// of a job reports a made-up master port, so the others get theirs). Jobs are submitted
// through the Controller service so that every slot runs a rank. Then each agent's
// uploader sends its ranks' samples with UploadSamples, like worker/agent's
// SampleUploader: at most --in_flight batches outstanding (1 by default), up to
// --max_batch samples per batch, or whatever gathered within --linger.
//
// Open loop (--rate > 0): each agent's simulated trainers emit samples on a fixed
// schedule (agent sample k at start + k / (rate / agents)), whether or not the server
// keeps up; a sample's creation time is its scheduled emit time, so its latency
// (acknowledgement received − emit time) includes the time it waited in the agent's
// queue. benchd acknowledges a batch only after its SQLite commit. With --rate 0 the
// generator saturates instead: a batch's samples are created when the previous
// acknowledgement arrives, so latency then is only the RPC's own time.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchfleet/v1/agent.grpc.pb.h"
#include "benchfleet/v1/controller.grpc.pb.h"
#include "tests/bench/histogram.h"

ABSL_FLAG(std::string, target, "127.0.0.1:7600", "benchd's gRPC address");
ABSL_FLAG(int, agents, 32, "simulated agents (nodes)");
ABSL_FLAG(int, slots, 8, "CPU slots per agent (one rank each)");
ABSL_FLAG(int, job_devices, 8, "devices per submitted job; agents*slots/job_devices jobs");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(600), "how long to stream samples");
ABSL_FLAG(double, rate, 250000,
          "target samples/s over the whole fleet (open loop); 0: as fast as acknowledged");
ABSL_FLAG(int, max_batch, 2000, "samples per UploadSamples (both kinds), like the agent");
ABSL_FLAG(absl::Duration, linger, absl::Milliseconds(50),
          "a partial batch waits this long for more samples, like the agent");
ABSL_FLAG(int, in_flight, 1, "UploadSamples calls outstanding per agent");
ABSL_FLAG(int, gpu_every, 0, "also one GpuSample per rank every N iterations (0: none)");
ABSL_FLAG(absl::Duration, report_interval, absl::Seconds(60), "per-interval series step");
ABSL_FLAG(absl::Duration, rpc_timeout, absl::Seconds(60), "deadline of each UploadSamples");

namespace v1 = benchfleet::v1;
using Clock = std::chrono::steady_clock;

namespace {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

using bench::loadgen::Histogram;

struct RankRef {
  std::string job_id;
  int attempt = 0;
  int rank = 0;
};

struct Totals {
  int64_t stored = 0;
  int64_t duplicates = 0;
  int64_t gpu_stored = 0;
  int64_t sent = 0;
  int64_t batches = 0;
  int64_t failed_rpcs = 0;
};

// Everything the uploader threads add to; one lock, taken once per acknowledgement.
class Recorder {
 public:
  void Ack(int64_t sent, const v1::UploadSamplesResponse& response, const Histogram& batch) {
    std::lock_guard<std::mutex> lock(mu_);
    for (Totals* t : {&total_, &interval_}) {
      t->stored += response.stored();
      t->duplicates += response.duplicates();
      t->gpu_stored += response.gpu_stored();
      t->sent += sent;
      t->batches += 1;
    }
    total_latency_.Merge(batch);
    interval_latency_.Merge(batch);
  }
  void Failed() {
    std::lock_guard<std::mutex> lock(mu_);
    ++total_.failed_rpcs;
    ++interval_.failed_rpcs;
  }
  // Returns the interval's figures and starts a new interval.
  std::pair<Totals, Histogram> TakeInterval() {
    std::lock_guard<std::mutex> lock(mu_);
    std::pair<Totals, Histogram> out{interval_, interval_latency_};
    interval_ = Totals{};
    interval_latency_ = Histogram{};
    return out;
  }
  std::pair<Totals, Histogram> Total() {
    std::lock_guard<std::mutex> lock(mu_);
    return {total_, total_latency_};
  }

 private:
  std::mutex mu_;
  Totals total_, interval_;
  Histogram total_latency_, interval_latency_;
};

std::shared_ptr<grpc::Channel> NewChannel(const std::string& target, int id) {
  grpc::ChannelArguments args;
  // One TCP connection per simulated agent, as separate processes would have.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("benchfleet.load_generator.channel", id);
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

class SimAgent {
 public:
  SimAgent(const std::string& target, int index, int slots)
      : index_(index),
        slots_(slots),
        name_(absl::StrFormat("load-agent-%03d", index)),
        stub_(v1::AgentService::NewStub(NewChannel(target, index))) {}

  const std::string& name() const { return name_; }

  absl::Duration Register() {
    v1::RegisterRequest request;
    v1::AgentInventory* inventory = request.mutable_inventory();
    inventory->set_name(name_);
    inventory->set_address("127.0.0.1");
    inventory->set_hostname(name_);
    inventory->set_cpu_slots(slots_);
    v1::RegisterResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::Status status = stub_->Register(&context, request, &response);
    if (!status.ok()) Die("Register", status);
    return absl::Milliseconds(response.heartbeat_interval_ms());
  }

  // Opens the assignment stream and answers assignments on a thread of its own.
  void StartStream() {
    stream_context_ = std::make_unique<grpc::ClientContext>();
    v1::StreamAssignmentsRequest request;
    request.set_agent(name_);
    reader_ = stub_->StreamAssignments(stream_context_.get(), request);
    stream_thread_ = std::thread([this] {
      v1::AssignmentEvent event;
      while (reader_->Read(&event)) {
        if (event.has_assign()) OnAssignment(event.assign());
      }
    });
  }

  void StopStream() {
    stream_context_->TryCancel();
    stream_thread_.join();
  }

  int assigned_ranks() {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(ranks_.size());
  }

  void Heartbeat() {
    v1::HeartbeatRequest request;
    request.set_agent(name_);
    {
      absl::MutexLock lock(&mu_);
      std::map<std::pair<std::string, int>, std::vector<int>> jobs;
      for (const RankRef& r : ranks_) jobs[{r.job_id, r.attempt}].push_back(r.rank);
      for (const auto& [job, ranks] : jobs) {
        request.add_running_jobs(job.first);
        v1::RunningJob* running = request.add_running();
        running->set_job_id(job.first);
        running->set_attempt(job.second);
        for (int rank : ranks) running->add_ranks(rank);
      }
    }
    v1::HeartbeatResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Status status = stub_->Heartbeat(&context, request, &response);
    if (!status.ok()) {
      std::fprintf(stderr, "load_generator: %s heartbeat failed: %s\n", name_.c_str(),
                   status.error_message().c_str());
    }
  }

  // Streams samples until `stop`; `start` is the fleet's common time zero.
  void Upload(Clock::time_point start, double rate_per_agent, const std::atomic<bool>& stop,
              Recorder& recorder) {
    {
      absl::MutexLock lock(&mu_);
      sending_ranks_ = ranks_;
    }
    start_ = start;
    rate_ = rate_per_agent;
    std::vector<std::thread> senders;
    int in_flight = std::max(1, absl::GetFlag(FLAGS_in_flight));
    for (int i = 0; i < in_flight; ++i) {
      senders.emplace_back([this, &stop, &recorder] { SendLoop(stop, recorder); });
    }
    for (auto& t : senders) t.join();
  }

  // Samples emitted by the schedule but never acknowledged when the run ended.
  int64_t backlog(Clock::time_point end) {
    absl::MutexLock lock(&mu_);
    if (rate_ <= 0) return 0;
    int64_t emitted = static_cast<int64_t>(Seconds(end - start_) * rate_);
    return std::max<int64_t>(0, emitted - next_sample_);
  }

 private:
  [[noreturn]] void Die(const char* what, const grpc::Status& status) {
    std::fprintf(stderr, "load_generator: %s %s: %s\n", name_.c_str(), what,
                 status.error_message().c_str());
    std::exit(1);
  }

  void OnAssignment(const v1::Assignment& assignment) {
    v1::ReportStatusRequest report;
    report.set_agent(name_);
    report.set_job_id(assignment.job_id());
    report.set_attempt(assignment.attempt());
    // The rank-0 agent picks the rendezvous port; nothing listens on it here.
    if (assignment.master_port() == 0) report.set_master_port(29500 + index_);
    {
      absl::MutexLock lock(&mu_);
      for (int rank : assignment.ranks()) {
        bool known = std::any_of(ranks_.begin(), ranks_.end(), [&](const RankRef& r) {
          return r.job_id == assignment.job_id() && r.attempt == assignment.attempt() &&
                 r.rank == rank;
        });
        if (!known) ranks_.push_back({assignment.job_id(), assignment.attempt(), rank});
        v1::RankReport* rank_report = report.add_ranks();
        rank_report->set_rank(rank);
        rank_report->set_state(v1::RANK_STATE_STARTED);
      }
    }
    v1::ReportStatusResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::Status status = stub_->ReportStatus(&context, report, &response);
    if (!status.ok()) Die("ReportStatus", status);
  }

  // Takes the next batch off the schedule: samples [first, first + count).
  // Returns false once `stop` is set.
  bool NextBatch(const std::atomic<bool>& stop, int64_t* first, int64_t* count) {
    const int max_batch = absl::GetFlag(FLAGS_max_batch);
    const int gpu_every = absl::GetFlag(FLAGS_gpu_every);
    const int nranks = static_cast<int>(sending_ranks_.size());
    // With GPU samples, a batch of `max_batch` holds fewer iteration samples.
    int64_t per_batch = max_batch;
    if (gpu_every > 0) {
      per_batch = std::max<int64_t>(1, max_batch * gpu_every / (gpu_every + 1));
    }
    const absl::Duration linger = absl::GetFlag(FLAGS_linger);
    if (rate_ <= 0) {
      absl::MutexLock lock(&mu_);
      *first = next_sample_;
      *count = per_batch;
      next_sample_ += per_batch;
      return !stop.load();
    }
    (void)nranks;
    auto emitted_by = [&](Clock::time_point t) {
      return static_cast<int64_t>(Seconds(t - start_) * rate_);
    };
    auto emit_time = [&](int64_t k) {
      return start_ + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(static_cast<double>(k) / rate_));
    };
    std::optional<Clock::time_point> linger_until;
    while (!stop.load()) {
      Clock::time_point now = Clock::now();
      absl::MutexLock lock(&mu_);
      int64_t pending = emitted_by(now) - next_sample_;
      Clock::time_point wake;
      if (pending >= per_batch ||
          (pending > 0 && linger_until.has_value() && now >= *linger_until)) {
        *first = next_sample_;
        *count = std::min<int64_t>(pending, per_batch);
        next_sample_ += *count;
        return true;
      }
      if (pending <= 0) {
        wake = emit_time(next_sample_ + 1);
      } else {
        if (!linger_until) {
          linger_until = now + std::chrono::microseconds(absl::ToInt64Microseconds(linger));
        }
        wake = std::min(*linger_until, emit_time(next_sample_ + per_batch));
      }
      mu_.Unlock();
      std::this_thread::sleep_until(std::min(wake, now + std::chrono::milliseconds(100)));
      mu_.Lock();
    }
    return false;
  }

  void SendLoop(const std::atomic<bool>& stop, Recorder& recorder) {
    const int gpu_every = absl::GetFlag(FLAGS_gpu_every);
    const int nranks = static_cast<int>(sending_ranks_.size());
    if (nranks == 0) return;
    v1::UploadSamplesRequest request;
    v1::UploadSamplesResponse response;
    request.set_agent(name_);
    int64_t first = 0, count = 0;
    while (NextBatch(stop, &first, &count)) {
      Clock::time_point created = Clock::now();  // saturating: the samples' birth
      request.clear_samples();
      request.clear_gpu_samples();
      request.set_batch_id(next_batch_id_.fetch_add(1));
      for (int64_t k = first; k < first + count; ++k) {
        const RankRef& r = sending_ranks_[k % nranks];
        int iteration = static_cast<int>(k / nranks) + 1;
        v1::IterationSample* s = request.add_samples();
        s->set_job_id(r.job_id);
        s->set_attempt(r.attempt);
        s->set_rank(r.rank);
        s->set_iteration(iteration);
        s->set_step_time_s(0.25 + 0.001 * (k % 7));
        s->set_images(256);
        s->set_loss(6.9 / std::sqrt(static_cast<double>(iteration)));
        s->set_data_time_s(0.002);
        s->set_elapsed_s(0.25 * iteration);
        s->set_warmup(iteration <= 10);
        s->set_received_unix_ns(absl::GetCurrentTimeNanos());
        if (gpu_every > 0 && iteration % gpu_every == 0) {
          v1::GpuSample* g = request.add_gpu_samples();
          g->set_job_id(r.job_id);
          g->set_attempt(r.attempt);
          g->set_rank(r.rank);
          g->set_seq(iteration / gpu_every);
          g->set_gpu_uuid(absl::StrCat("GPU-load-", index_, "-", r.rank));
          g->set_gpu_index(r.rank % slots_);
          g->set_time_unix_ns(absl::GetCurrentTimeNanos());
          g->set_power_w(250.0);
          g->set_energy_j(250.0 * iteration);
          g->set_sm_clock_mhz(1410);
          g->set_temperature_c(60);
        }
      }
      while (true) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() +
                             absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_rpc_timeout)));
        grpc::Status status = stub_->UploadSamples(&context, request, &response);
        if (status.ok()) break;
        recorder.Failed();
        std::fprintf(stderr, "load_generator: %s UploadSamples failed: %s (retrying)\n",
                     name_.c_str(), status.error_message().c_str());
        if (stop.load()) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      Clock::time_point acked = Clock::now();
      Histogram latency;
      if (rate_ > 0) {
        for (int64_t k = first; k < first + count; ++k) {
          double emitted = static_cast<double>(k) / rate_;
          latency.Add((Seconds(acked - start_) - emitted) * 1e6);
        }
      } else {
        double us = Seconds(acked - created) * 1e6;
        for (int64_t k = 0; k < count; ++k) latency.Add(us);
      }
      recorder.Ack(count, response, latency);
    }
  }

  const int index_;
  const int slots_;
  const std::string name_;
  std::unique_ptr<v1::AgentService::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> stream_context_;
  std::unique_ptr<grpc::ClientReader<v1::AssignmentEvent>> reader_;
  std::thread stream_thread_;

  absl::Mutex mu_;
  std::vector<RankRef> ranks_ ABSL_GUARDED_BY(mu_);
  int64_t next_sample_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<RankRef> sending_ranks_;  // fixed once uploading starts
  Clock::time_point start_;
  double rate_ = 0;
  std::atomic<int64_t> next_batch_id_{1};
};

double CpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

void PrintInterval(const char* label, double seconds, const Totals& t, const Histogram& h) {
  std::printf("%-8s %8.1f %12.0f %10.1f %10.1f %10.1f %10lld %8lld\n", label, seconds,
              seconds > 0 ? t.stored / seconds : 0.0, h.Quantile(0.50) / 1e3,
              h.Quantile(0.99) / 1e3, h.max() / 1e3, static_cast<long long>(t.duplicates),
              static_cast<long long>(t.failed_rpcs));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Streams samples from simulated agents into benchd.\n"
      "Usage: load_generator --target HOST:PORT [--agents N --slots S --duration 600s "
      "--rate SAMPLES_PER_S]");
  absl::ParseCommandLine(argc, argv);
  const std::string target = absl::GetFlag(FLAGS_target);
  const int agents = absl::GetFlag(FLAGS_agents);
  const int slots = absl::GetFlag(FLAGS_slots);
  const int job_devices = absl::GetFlag(FLAGS_job_devices);
  const double rate = absl::GetFlag(FLAGS_rate);
  const absl::Duration duration = absl::GetFlag(FLAGS_duration);
  if (agents < 1 || slots < 1 || job_devices < 1 || (agents * slots) % job_devices != 0 ||
      absl::GetFlag(FLAGS_max_batch) < 1) {
    std::fprintf(stderr, "load_generator: agents*slots must be a multiple of job_devices\n");
    return 2;
  }

  std::vector<std::unique_ptr<SimAgent>> fleet;
  absl::Duration heartbeat_interval = absl::Seconds(2);
  for (int i = 0; i < agents; ++i) {
    fleet.push_back(std::make_unique<SimAgent>(target, i, slots));
    heartbeat_interval = fleet.back()->Register();
  }
  for (auto& agent : fleet) agent->StartStream();

  std::atomic<bool> stop_heartbeats{false};
  std::thread heartbeats([&] {
    while (!stop_heartbeats.load()) {
      for (auto& agent : fleet) agent->Heartbeat();
      absl::Time until = absl::Now() + heartbeat_interval;
      while (!stop_heartbeats.load() && absl::Now() < until) absl::SleepFor(absl::Milliseconds(50));
    }
  });

  // Iterations enough for the run at the target rate, within the controller's limit.
  int ranks_total = agents * slots;
  double per_rank = rate > 0 ? rate / ranks_total : 20000;
  int64_t iterations = std::min<int64_t>(
      10'000'000,
      std::max<int64_t>(1000, static_cast<int64_t>(per_rank * absl::ToDoubleSeconds(duration) *
                                                   2) + 1000));
  auto controller = v1::Controller::NewStub(NewChannel(target, agents));
  int jobs = ranks_total / job_devices;
  for (int j = 0; j < jobs; ++j) {
    v1::SubmitJobRequest request;
    v1::JobSpec* spec = request.mutable_spec();
    spec->set_model("resnet50");
    spec->set_devices(job_devices);
    spec->set_precision(v1::PRECISION_FP32);
    spec->set_batch_size(256);
    spec->set_iterations(static_cast<int32_t>(iterations));
    spec->set_warmup_iterations(10);
    spec->set_image_size(224);
    spec->set_name(absl::StrCat("ingest load ", j));
    (*spec->mutable_labels())["bench"] = "ingest_load";
    v1::SubmitJobResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::Status status = controller->SubmitJob(&context, request, &response);
    if (!status.ok()) {
      std::fprintf(stderr, "load_generator: SubmitJob: %s\n", status.error_message().c_str());
      return 1;
    }
  }
  absl::Time setup_deadline = absl::Now() + absl::Seconds(120);
  while (true) {
    int assigned = 0;
    for (auto& agent : fleet) assigned += agent->assigned_ranks();
    if (assigned == ranks_total) break;
    if (absl::Now() > setup_deadline) {
      std::fprintf(stderr, "load_generator: only %d of %d ranks assigned after 120 s\n",
                   assigned, ranks_total);
      return 1;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  std::printf("load_generator: %d agents x %d slots, %d jobs of %d ranks (%lld iterations "
              "each), %s, max_batch %d, linger %s, in_flight %d, gpu_every %d, %s\n",
              agents, slots, jobs, job_devices, static_cast<long long>(iterations),
              rate > 0 ? absl::StrFormat("open loop at %.0f samples/s", rate).c_str()
                       : "saturating (rate 0)",
              absl::GetFlag(FLAGS_max_batch),
              absl::FormatDuration(absl::GetFlag(FLAGS_linger)).c_str(),
              absl::GetFlag(FLAGS_in_flight), absl::GetFlag(FLAGS_gpu_every),
              absl::FormatDuration(duration).c_str());
  std::printf("%-8s %8s %12s %10s %10s %10s %10s %8s\n", "interval", "seconds", "stored/s",
              "p50_ms", "p99_ms", "max_ms", "dups", "failed");
  std::fflush(stdout);

  Recorder recorder;
  std::atomic<bool> stop{false};
  Clock::time_point start = Clock::now();
  double cpu_start = CpuSeconds();
  std::vector<std::thread> uploaders;
  for (auto& agent : fleet) {
    uploaders.emplace_back([&, a = agent.get()] { a->Upload(start, rate / agents, stop, recorder); });
  }
  const absl::Duration step = absl::GetFlag(FLAGS_report_interval);
  Clock::time_point end = start + absl::ToChronoNanoseconds(duration);
  Clock::time_point last = start;
  int interval = 0;
  while (true) {
    Clock::time_point next = std::min(end, last + absl::ToChronoNanoseconds(step));
    std::this_thread::sleep_until(next);
    auto [totals, latency] = recorder.TakeInterval();
    PrintInterval(absl::StrCat("#", ++interval).c_str(), Seconds(next - last), totals, latency);
    last = next;
    if (next >= end) break;
  }
  stop.store(true);
  Clock::time_point stopped = Clock::now();
  for (auto& t : uploaders) t.join();
  Clock::time_point drained = Clock::now();
  double cpu = CpuSeconds() - cpu_start;
  int64_t backlog = 0;
  for (auto& agent : fleet) backlog += agent->backlog(stopped);
  stop_heartbeats.store(true);
  heartbeats.join();
  auto [totals, latency] = recorder.Total();
  double elapsed = Seconds(drained - start);
  PrintInterval("all", elapsed, totals, latency);
  std::printf("summary: stored %lld samples in %.1f s = %.0f samples/s committed; "
              "latency (sample created -> batch acknowledged after commit) p50 %.1f ms, "
              "p99 %.1f ms, max %.1f ms over %lld samples; %lld batches, %lld duplicates, "
              "%lld gpu samples stored, %lld failed RPCs; %lld samples emitted but not sent "
              "at the end (client backlog); generator CPU %.1f s (%.2f cores)\n",
              static_cast<long long>(totals.stored), elapsed, totals.stored / elapsed,
              latency.Quantile(0.50) / 1e3, latency.Quantile(0.99) / 1e3, latency.max() / 1e3,
              static_cast<long long>(latency.count()), static_cast<long long>(totals.batches),
              static_cast<long long>(totals.duplicates),
              static_cast<long long>(totals.gpu_stored),
              static_cast<long long>(totals.failed_rpcs), static_cast<long long>(backlog), cpu,
              cpu / elapsed);
  std::fflush(stdout);
  for (auto& agent : fleet) agent->StopStream();
  return totals.failed_rpcs > 0 || totals.stored != totals.sent ? 3 : 0;
}
