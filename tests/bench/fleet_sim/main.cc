// fleet_sim: a fleet of simulated bench-agents (sim_agent.h) and a job submitter
// (submitter.h) against a running benchd, over mutual TLS with one certificate per node
// (tests/bench/fleet_pki.sh makes them). Issue 27; the one-command scale run
// (tests/bench/fleet_scale.sh) and the CI smoke test (tests/e2e/fleet_smoke_test.cc) run it.
//
//   fleet_sim --target 127.0.0.1:7600 --ca PKI/ca.pem --cert_dir PKI --nodes 1024
//             --duration 30m --summary_json sum.json --acked_csv acked.csv
//
// Per --report_interval it prints one line on stdout: seconds since the start, agents
// registered, ranks running, iterations/s and readings/s acknowledged in the interval,
// UploadSamples calls/s, submits and jobs finished so far, failed RPCs so far, the
// simulator's CPU (cores) in the interval.
//
// --summary_json keys:
//   config: the flags in effect (rates after --scale)
//   duration_s: wall seconds from the first registration to the end of the drain
//   methods: {Register, Heartbeat, StreamAssignments (streams; latency: each stream's
//     life), StreamAssignments.events, ReportStatus, UploadSamples, SubmitJob, GetJob}:
//     {calls, errors: {CODE: n}, p50_ms, p99_ms, max_ms}
//   per_agent_rates: {method: calls per second per agent} over the run
//   upload_batches: {count, samples_mean, samples_p50, samples_p99, iterations_mean,
//     iterations_p50, iterations_p99, readings_mean, readings_p50, readings_p99}
//   samples: {iterations_generated, readings_generated, iterations_acked, readings_acked,
//     stored, duplicates, gpu_stored, gpu_duplicates, rejected, unattributed,
//     unacknowledged_at_exit, dropped}: acked = in batches benchd acknowledged (refused
//     ones included); stored/duplicates/rejected as benchd answered; unattributed: refused
//     or taken, not known per rank (see --acked_csv)
//   jobs: {submitted, finished (every rank SUCCEEDED), ended_by_poll (found terminal by
//     GetJob), submit_to_assigned: {count, p50_ms, p99_ms, max_ms}}
//   reconnects: re-registrations after a lost registration
//   outages: [{start_s, agents_lost, all_registered_after_s, all_uploading_after_s}] (-1:
//     not reached before the end)
//   cpu_seconds, cpu_seconds_per_agent, nodes, gpus
// --acked_csv: job_id,attempt,rank,iterations,readings,refused_iterations,refused_readings:
//   per rank, the acknowledged samples benchd took (stored, or stored before: exactly the
//   rows it holds) and those it refused (never stored). A batch benchd refused in part
//   holding several ranks' samples is sent again rank by rank and kind by kind (benchd
//   stores a sample once, so the re-sends only tell which were refused: the
//   UploadSamples.resolve calls).
// Exit status: 0; 2 for bad flags; 3 when samples were still unacknowledged at the end or a
// batch was given up on.
#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/openssl_exit.h"
#include "tests/bench/fleet_sim/driver.h"
#include "tests/bench/fleet_sim/fleet.h"
#include "tests/bench/fleet_sim/sim_agent.h"
#include "tests/bench/fleet_sim/submitter.h"

ABSL_FLAG(std::string, target, "127.0.0.1:7600", "benchd's gRPC address");
ABSL_FLAG(std::string, proxy_target, "", "the address every --proxy_every-th node dials");
ABSL_FLAG(int, proxy_every, 0, "nodes 0, K, 2K, ... dial --proxy_target (0: none)");
ABSL_FLAG(std::string, ca, "", "the fleet CA (PEM); empty: plaintext");
ABSL_FLAG(std::string, cert_dir, "", "node-NNNN.pem/.key and fleet-submitter.pem/.key");
ABSL_FLAG(int, nodes, 4, "simulated nodes (agents)");
ABSL_FLAG(int, gpus_per_node, 8, "simulated GPUs per node");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(60), "how long to run (then drain)");
ABSL_FLAG(double, iter_rate, 10, "iterations per second per rank (before --scale)");
ABSL_FLAG(double, reading_hz, 10, "GPU readings per second per busy GPU (before --scale)");
ABSL_FLAG(std::string, job_mix, "1:50,8:30,32:15,256:5", "GPUS:WEIGHT,... by count");
ABSL_FLAG(int, job_iterations, 300,
          "iterations per job (10 warm-up); 300 at 10 it/s is a 30 s job: the default mix "
          "(20.5 GPUs a job on average) then churns about 13 submits/s at 1,024 x 8");
ABSL_FLAG(double, submit_rate_limit, 50, "at most this many submits/s (before --scale)");
ABSL_FLAG(double, backlog, 0, "GPUs of jobs outstanding beyond the fleet's (fraction)");
ABSL_FLAG(bool, submit, true, "run the job submitter");
ABSL_FLAG(bool, submit_only, false,
          "no simulated agents: only the submitter, for a fleet of --nodes real agents "
          "(tests/bench/fleet_rpc_mix.sh)");
ABSL_FLAG(double, scale, 1, "multiplies --iter_rate, --reading_hz, --submit_rate_limit");
ABSL_FLAG(absl::Duration, report_interval, absl::Seconds(10), "per-interval lines on stdout");
ABSL_FLAG(std::string, summary_json, "", "write the summary here");
ABSL_FLAG(std::string, acked_csv, "", "write per-rank acknowledged counts here");
ABSL_FLAG(int, threads, 2, "driver threads");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(60), "wait this long for the last acks");

namespace fs = bench::fleetsim;
using fs::Clock;

namespace {

double CpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

bool ParseMix(const std::string& text, std::vector<fs::JobSize>* mix) {
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(part, ':');
    fs::JobSize size;
    if (!absl::SimpleAtoi(kv.first, &size.gpus) || size.gpus < 1 ||
        !absl::SimpleAtod(kv.second, &size.weight) || size.weight < 0) {
      return false;
    }
    mix->push_back(size);
  }
  return !mix->empty();
}

double Ms(double us) { return us / 1e3; }

nlohmann::json Quantiles(const bench::loadgen::Histogram& h) {
  return {{"count", h.count()},
          {"p50_ms", Ms(h.Quantile(0.5))},
          {"p99_ms", Ms(h.Quantile(0.99))},
          {"max_ms", Ms(h.max())}};
}

double CountQuantile(const std::vector<int64_t>& counts, double q) {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  if (n == 0) return 0;
  int64_t rank = static_cast<int64_t>(std::ceil(q * n)), seen = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    seen += counts[i];
    if (seen >= rank) return static_cast<double>(i);
  }
  return static_cast<double>(counts.size() - 1);
}

}  // namespace

int main(int argc, char** argv) {
  bench::InitOpenSslWithoutExitCleanup();  // before gRPC: common/openssl_exit.h
  absl::SetProgramUsageMessage(
      "Simulated bench-agents and a job submitter against a running benchd (issue 27).\n"
      "Usage: fleet_sim --target HOST:PORT --ca CA.pem --cert_dir DIR --nodes N ...");
  absl::ParseCommandLine(argc, argv);
  fs::FleetOptions options;
  const double scale = absl::GetFlag(FLAGS_scale);
  options.target = absl::GetFlag(FLAGS_target);
  options.proxy_target = absl::GetFlag(FLAGS_proxy_target);
  options.proxy_every = absl::GetFlag(FLAGS_proxy_every);
  options.ca = absl::GetFlag(FLAGS_ca);
  options.cert_dir = absl::GetFlag(FLAGS_cert_dir);
  options.nodes = absl::GetFlag(FLAGS_nodes);
  options.gpus_per_node = absl::GetFlag(FLAGS_gpus_per_node);
  options.iter_rate = absl::GetFlag(FLAGS_iter_rate) * scale;
  options.reading_hz = absl::GetFlag(FLAGS_reading_hz) * scale;
  options.submit_rate_limit = absl::GetFlag(FLAGS_submit_rate_limit) * scale;
  options.job_iterations = absl::GetFlag(FLAGS_job_iterations);
  options.backlog_fraction = absl::GetFlag(FLAGS_backlog);
  options.threads = std::max(1, absl::GetFlag(FLAGS_threads));
  options.submit = absl::GetFlag(FLAGS_submit);
  options.submit_only = absl::GetFlag(FLAGS_submit_only);
  std::string error;
  if (!ParseMix(absl::GetFlag(FLAGS_job_mix), &options.job_mix)) {
    error = "--job_mix: expected GPUS:WEIGHT,... (e.g. 1:50,8:30,32:15,256:5)";
  } else if (options.nodes < 1 || options.gpus_per_node < 1) {
    error = "--nodes and --gpus_per_node must be at least 1";
  } else if (!(scale > 0) || !(options.iter_rate > 0) || options.reading_hz < 0) {
    error = "--scale and --iter_rate must be > 0, --reading_hz >= 0";
  } else if (options.job_iterations < 2) {
    error = "--job_iterations must be at least 2";
  } else if (!options.ca.empty() && options.cert_dir.empty()) {
    error = "--ca needs --cert_dir";
  }
  for (const fs::JobSize& size : options.job_mix) {
    if (size.gpus > options.nodes * options.gpus_per_node) {
      error = "--job_mix: a job of " + std::to_string(size.gpus) + " GPUs exceeds the fleet";
    }
  }
  if (!error.empty()) {
    std::fprintf(stderr, "fleet_sim: %s\n", error.c_str());
    return 2;
  }

  fs::Recorder recorder;
  fs::JobBook jobs(&recorder);
  fs::OutageTracker outages(options.nodes);
  std::vector<std::unique_ptr<fs::Driver>> drivers;
  for (int i = 0; i < options.threads; ++i) drivers.push_back(std::make_unique<fs::Driver>());
  std::vector<std::unique_ptr<fs::SimAgent>> fleet;
  for (int i = 0; i < (options.submit_only ? 0 : options.nodes); ++i) {
    fs::Driver* driver = drivers[i % drivers.size()].get();
    fleet.push_back(std::make_unique<fs::SimAgent>(options, i, &recorder, &jobs, &outages, driver));
    driver->Add(fleet.back().get());
  }
  const double cpu_start = CpuSeconds();
  const Clock::time_point start = Clock::now();
  for (auto& driver : drivers) driver->Start();
  std::printf(
      "fleet_sim: %d nodes x %d GPUs -> %s%s; %.2f it/s per rank, %.2f readings/s per "
      "GPU, jobs %s of %d iterations, %s\n",
      options.nodes, options.gpus_per_node, options.target.c_str(),
      options.ca.empty() ? " (plaintext)" : " (mTLS)", options.iter_rate, options.reading_hz,
      absl::GetFlag(FLAGS_job_mix).c_str(), options.job_iterations,
      absl::FormatDuration(absl::GetFlag(FLAGS_duration)).c_str());
  Clock::time_point register_deadline = start + std::chrono::seconds(120);
  while (!options.submit_only && outages.registered() < options.nodes &&
         Clock::now() < register_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::printf("fleet_sim: %d of %d agents registered after %.1f s\n", outages.registered(),
              options.nodes, fs::Seconds(Clock::now() - start));
  std::fflush(stdout);

  fs::Submitter submitter(options, &recorder, &jobs);
  if (options.submit) submitter.Start();
  std::printf("%8s %6s %6s %10s %10s %9s %8s %8s %7s %6s\n", "t_s", "agents", "ranks", "iter/s",
              "read/s", "uploads/s", "submits", "finished", "failed", "cpu");
  const Clock::time_point end = start + absl::ToChronoNanoseconds(absl::GetFlag(FLAGS_duration));
  const auto step = absl::ToChronoNanoseconds(absl::GetFlag(FLAGS_report_interval));
  fs::Recorder::Snapshot last = recorder.Take();
  Clock::time_point last_at = Clock::now();
  double last_cpu = CpuSeconds();
  auto failures = [](const fs::Recorder::Snapshot& s) {
    int64_t n = 0;
    for (const auto& [name, m] : s.methods) {
      for (const auto& [code, count] : m.errors) n += count;
    }
    return n;
  };
  while (Clock::now() < end) {
    std::this_thread::sleep_until(std::min(end, last_at + step));
    Clock::time_point now = Clock::now();
    fs::Recorder::Snapshot s = recorder.Take();
    double dt = std::max(1e-3, fs::Seconds(now - last_at));
    int ranks = 0;
    for (auto& agent : fleet) ranks += agent->running_ranks();
    double cpu = CpuSeconds();
    std::printf("%8.1f %6d %6d %10.0f %10.0f %9.0f %8lld %8lld %7lld %6.2f\n",
                fs::Seconds(now - start), outages.registered(), ranks,
                (s.acked_iterations - last.acked_iterations) / dt,
                (s.acked_readings - last.acked_readings) / dt,
                (s.methods["UploadSamples"].calls - last.methods["UploadSamples"].calls) / dt,
                static_cast<long long>(jobs.submitted()),
                static_cast<long long>(s.jobs_finished + s.jobs_ended_by_poll),
                static_cast<long long>(failures(s)), (cpu - last_cpu) / dt);
    std::fflush(stdout);
    last = std::move(s);
    last_at = now;
    last_cpu = cpu;
  }
  submitter.Stop();
  for (auto& agent : fleet) agent->StopTraining();
  const Clock::time_point drain_deadline =
      Clock::now() + absl::ToChronoNanoseconds(absl::GetFlag(FLAGS_drain_timeout));
  int64_t unacknowledged = 0;
  while (true) {
    unacknowledged = 0;
    for (auto& agent : fleet) unacknowledged += agent->unacknowledged();
    if (unacknowledged == 0 || Clock::now() > drain_deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const Clock::time_point drained = Clock::now();
  int64_t dropped = 0;
  for (auto& agent : fleet) dropped += agent->dropped();
  for (auto& agent : fleet) agent->Shutdown();
  for (auto& driver : drivers) driver->Stop();
  const double cpu = CpuSeconds() - cpu_start;
  const double duration = fs::Seconds(drained - start);
  fs::Recorder::Snapshot s = recorder.Take();

  nlohmann::json summary;
  summary["config"] = {{"target", options.target},
                       {"nodes", options.nodes},
                       {"gpus_per_node", options.gpus_per_node},
                       {"iter_rate", options.iter_rate},
                       {"reading_hz", options.reading_hz},
                       {"scale", scale},
                       {"job_mix", absl::GetFlag(FLAGS_job_mix)},
                       {"job_iterations", options.job_iterations},
                       {"mtls", !options.ca.empty()},
                       {"proxy_every", options.proxy_every}};
  summary["duration_s"] = duration;
  summary["nodes"] = options.nodes;
  summary["gpus"] = options.nodes * options.gpus_per_node;
  nlohmann::json methods = nlohmann::json::object(), rates = nlohmann::json::object();
  for (const auto& [name, m] : s.methods) {
    nlohmann::json j = Quantiles(m.latency);
    j.erase("count");  // the calls', below
    j["calls"] = m.calls;
    j["errors"] = m.errors;
    if (name == "StreamAssignments.events") {
      j = {{"calls", m.calls}, {"errors", nlohmann::json::object()}};
    }
    methods[name] = j;
    rates[name] = m.calls / duration / options.nodes;
  }
  summary["methods"] = methods;
  summary["per_agent_rates"] = rates;
  const double batches = std::max<int64_t>(1, s.batches);
  summary["upload_batches"] = {{"count", s.batches},
                               {"samples_mean", (s.batch_iterations + s.batch_readings) / batches},
                               {"samples_p50", CountQuantile(s.batch_size_counts, 0.5)},
                               {"samples_p99", CountQuantile(s.batch_size_counts, 0.99)},
                               {"iterations_mean", s.batch_iterations / batches},
                               {"iterations_p50", CountQuantile(s.batch_iter_counts, 0.5)},
                               {"iterations_p99", CountQuantile(s.batch_iter_counts, 0.99)},
                               {"readings_mean", s.batch_readings / batches},
                               {"readings_p50", CountQuantile(s.batch_reading_counts, 0.5)},
                               {"readings_p99", CountQuantile(s.batch_reading_counts, 0.99)}};
  summary["samples"] = {{"iterations_generated", s.generated_iterations},
                        {"readings_generated", s.generated_readings},
                        {"iterations_acked", s.acked_iterations},
                        {"readings_acked", s.acked_readings},
                        {"stored", s.stored},
                        {"duplicates", s.duplicates},
                        {"gpu_stored", s.gpu_stored},
                        {"gpu_duplicates", s.gpu_duplicates},
                        {"rejected", s.rejected},
                        {"unattributed", s.unattributed},
                        {"unacknowledged_at_exit", unacknowledged},
                        {"dropped", dropped}};
  summary["jobs"] = {{"submitted", jobs.submitted()},
                     {"finished", s.jobs_finished},
                     {"ended_by_poll", s.jobs_ended_by_poll},
                     {"submit_to_assigned", Quantiles(s.submit_to_assigned)}};
  summary["reconnects"] = outages.reconnects();
  nlohmann::json list = nlohmann::json::array();
  for (const auto& o : outages.Outages(start)) {
    list.push_back({{"start_s", o.start_s},
                    {"agents_lost", o.agents_lost},
                    {"all_registered_after_s", o.all_registered_after_s},
                    {"all_uploading_after_s", o.all_uploading_after_s}});
  }
  summary["outages"] = list;
  summary["cpu_seconds"] = cpu;
  summary["cpu_seconds_per_agent"] = cpu / options.nodes;
  std::printf("fleet_sim: %s\n", summary.dump().c_str());
  if (const std::string path = absl::GetFlag(FLAGS_summary_json); !path.empty()) {
    std::ofstream out(path);
    out << summary.dump(2) << "\n";
    if (!out) std::fprintf(stderr, "fleet_sim: cannot write %s\n", path.c_str());
  }
  if (const std::string path = absl::GetFlag(FLAGS_acked_csv); !path.empty()) {
    std::ofstream out(path);
    out << "job_id,attempt,rank,iterations,readings,refused_iterations,refused_readings\n";
    for (const auto& [key, counts] : recorder.AckedByRank()) {
      out << std::get<0>(key) << "," << std::get<1>(key) << "," << std::get<2>(key) << ","
          << counts.iterations << "," << counts.readings << "," << counts.refused_iterations << ","
          << counts.refused_readings << "\n";
    }
    if (!out) std::fprintf(stderr, "fleet_sim: cannot write %s\n", path.c_str());
  }
  return unacknowledged > 0 || dropped > 0 ? 3 : 0;
}
