// benchd's /metrics over a full fleet (run by hand; docs/PERFORMANCE.md, issue 27).
//
//   build/bin/metrics_bench [DIR] [NODES] [ENDED_JOBS] [SCRAPES] [INGEST_S]
//       defaults: a new temporary directory, 1024 nodes (× 8 GPUs), 100000 ended jobs,
//       20 scrapes, 10 s of ingestion per phase
//
// Wired as benchd wires it (server/benchd.cc): a LiveMetrics is the JobManager's JobEvents
// over a real Store in DIR/bench.db, and a scrape is RenderMetrics(manager.Fleet(),
// metrics.Take(now)). DIR/ended.db gets ENDED_JOBS ended jobs once (reused when it
// exists); each run copies it to DIR/bench.db, which the manager recovers. NODES agents
// register 8 GPUs each and attach a stream; jobs of 256, 32, 8 and 1 GPUs (half, a
// quarter, 3/16 and 1/16 of the GPUs) are submitted until every GPU is busy; each
// assignment is reported started (rank 0's agent with a rendezvous port, so the other
// nodes get theirs); then each agent uploads 11 iterations and one GPU reading per rank,
// so every rank has a live rate and a latest reading. Besides, 6,000 jobs that ended
// within the retention (10 a second over its 10 minutes) are fed to the LiveMetrics
// directly: a measured rate, an energy per image, the mix's sizes.
//
// Prints: each part of a scrape (Fleet, Take, Render) and the whole, min/median/max of
// wall and of the thread's CPU time; the body's size, its series count and the series
// per family. Then ingestion from 2 threads (each agent's 1-second upload: 8 ranks × 10
// iterations and 8 GPUs × 10 readings, through JobManager::UploadSamples, each waiting
// for its commit) for INGEST_S seconds without scrapes and INGEST_S seconds with scrapes
// back to back: the uploads' synchronous part (the screening under the manager's lock,
// where LiveMetrics records them), their acknowledgement, and the scrapes meanwhile.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/core/job_manager.h"
#include "server/metrics/live_metrics.h"
#include "server/metrics/metrics_exporter.h"
#include "server/store/store.h"

namespace {

using Clock = std::chrono::steady_clock;
using bench::Job;

constexpr int kGpusPerNode = 8;
constexpr int kIterations = 1000000;  // no job ends during the bench
constexpr int kBatch = 256;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double ThreadCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "metrics_bench: %s: %s\n", what.c_str(), status.ToString().c_str());
  return 1;
}

std::string Node(int i) {
  char name[32];
  std::snprintf(name, sizeof(name), "node-%04d", i);
  return name;
}
std::string Uuid(int node, int gpu) {
  char uuid[64];
  std::snprintf(uuid, sizeof(uuid), "GPU-%08x-0000-4000-8000-%012x", node, gpu);
  return uuid;
}

// An ended job as the store keeps it (no samples: /metrics never reads them).
Job EndedJob(int64_t seq, absl::Time created) {
  static const int kDevices[] = {1, 8, 32, 256};
  Job job;
  job.seq = seq;
  job.id = absl::StrCat("job-", 1000000 + seq);
  job.spec.model = seq % 2 ? "resnet50" : "resnet101";
  job.spec.devices = kDevices[seq % 4];
  job.spec.precision = bench::Precision::kAmp;
  job.spec.batch_size = kBatch;
  job.spec.iterations = 500;
  job.spec.warmup_iterations = 10;
  job.spec.image_size = 224;
  job.created = created;
  const bench::JobState state =
      seq % 20 == 7 ? bench::JobState::kFailed : bench::JobState::kSucceeded;
  job.history.push_back({bench::JobState::kQueued, "submitted", created});
  job.history.push_back({bench::JobState::kRunning, "", created + absl::Seconds(1)});
  job.history.push_back({state, bench::JobStateText(state), created + absl::Seconds(60)});
  job.state = state;
  job.reason = bench::JobStateText(state);
  job.attempt = 1;
  job.device_kind = bench::DeviceKind::kCuda;
  return job;
}

absl::Status WriteEndedJobs(bench::Store& store, int64_t jobs) {
  const absl::Time start = absl::FromUnixSeconds(1'750'000'000);
  std::vector<std::future<absl::Status>> pending;
  for (int64_t seq = 1; seq <= jobs; ++seq) {
    Job job = EndedJob(seq, start + absl::Seconds(seq * 90));
    auto inserted = std::make_shared<std::promise<absl::Status>>();
    auto updated = std::make_shared<std::promise<absl::Status>>();
    pending.push_back(inserted->get_future());
    pending.push_back(updated->get_future());
    store.InsertJobAsync(job, [inserted](absl::Status s) { inserted->set_value(s); });
    store.UpdateJobAsync(job, [updated](absl::Status s) { updated->set_value(s); });
    if (seq % 5000 == 0 || seq == jobs) {
      for (auto& f : pending) {
        if (absl::Status s = f.get(); !s.ok()) return s;
      }
      pending.clear();
    }
  }
  return absl::OkStatus();
}

// An agent's stream: the assignments it got, for the bench to report started.
class RecordingChannel : public bench::AgentChannel {
 public:
  void SendAssignment(const bench::AssignmentMessage& assignment) override {
    std::lock_guard<std::mutex> lock(mu_);
    assignments_.push_back(assignment);
  }
  void SendCancel(const bench::CancelMessage&) override {}
  void Close(const absl::Status&) override {}
  std::vector<bench::AssignmentMessage> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(assignments_);
  }

 private:
  std::mutex mu_;
  std::vector<bench::AssignmentMessage> assignments_;
};

// What runs on one agent: (job, attempt, rank, GPU index) per busy GPU.
struct RankOnGpu {
  std::string job_id;
  int attempt = 0;
  int rank = 0;
  int gpu = 0;
};

struct Stats {
  std::vector<double> values;
  void Add(double v) { values.push_back(v); }
  std::string Text() {
    if (values.empty()) return "none";
    std::sort(values.begin(), values.end());
    auto at = [this](double q) {
      return values[std::min(values.size() - 1, static_cast<size_t>(q * values.size()))];
    };
    return absl::StrFormat("min %.2f, median %.2f, p99 %.2f, max %.2f ms (%d)", values.front(),
                           at(0.5), at(0.99), values.back(), static_cast<int>(values.size()));
  }
};

class Fleet {
 public:
  Fleet(bench::JobManager& manager, int nodes)
      : manager_(manager), nodes_(nodes), channels_(nodes), running_(nodes) {}

  absl::Status Register() {
    for (int n = 0; n < nodes_; ++n) {
      bench::AgentInventory inventory;
      inventory.name = Node(n);
      inventory.address = "127.0.0.1";
      inventory.hostname = Node(n) + ".cluster";
      for (int g = 0; g < kGpusPerNode; ++g) {
        inventory.gpus.push_back({g, "NVIDIA H100 80GB HBM3", Uuid(n, g), int64_t{80} << 30});
      }
      if (auto name = manager_.RegisterAgent(inventory); !name.ok()) return name.status();
      if (absl::Status s = manager_.AttachChannel(inventory.name, &channels_[n]); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Submits the mix until every GPU is busy and reports each rank started.
  absl::Status FillWithJobs(int* jobs_submitted) {
    const int gpus = nodes_ * kGpusPerNode;
    const std::vector<std::pair<int, int>> mix = {
        {256, gpus / 2 / 256}, {32, gpus / 4 / 32}, {8, gpus * 3 / 16 / 8}, {1, gpus / 16}};
    for (const auto& [devices, count] : mix) {
      for (int i = 0; i < count; ++i) {
        bench::JobSpec spec;
        spec.model = devices >= 32 ? "resnet50" : "resnet18";
        spec.devices = devices;
        if (devices >= kGpusPerNode) {
          spec.nodes = devices / kGpusPerNode;
          spec.devices_per_node = kGpusPerNode;
        }
        spec.precision = bench::Precision::kAmp;
        spec.batch_size = kBatch;
        spec.iterations = kIterations;
        spec.warmup_iterations = 10;
        spec.image_size = 224;
        spec.name = absl::StrCat("fleet ", devices, "-GPU ", i);
        std::promise<absl::StatusOr<bench::SubmitResult>> answer;
        manager_.Submit(spec, [&answer](absl::StatusOr<bench::SubmitResult> r) {
          answer.set_value(std::move(r));
        });
        if (auto r = answer.get_future().get(); !r.ok()) return r.status();
        ++*jobs_submitted;
        if (absl::Status s = ReportStarted(); !s.ok()) return s;
      }
    }
    return ReportStarted();
  }

  int busy_gpus() const {
    int busy = 0;
    for (const auto& node : running_) busy += static_cast<int>(node.size());
    return busy;
  }

  // One second of one agent: 10 iterations per rank (from `from`), 10 readings per GPU.
  void Upload(int n, int from, std::vector<bench::IterationSample>& samples,
              std::vector<bench::GpuSample>& readings, int iterations, int readings_each) const {
    for (const RankOnGpu& r : running_[n]) {
      for (int it = from; it < from + iterations; ++it) {
        bench::IterationSample s;
        s.job_id = r.job_id;
        s.attempt = r.attempt;
        s.rank = r.rank;
        s.iteration = it;
        s.step_time_s = 0.1 + (it % 7) * 0.001;
        s.images = kBatch;
        s.loss = 2.5;
        s.data_time_s = 0.002;
        s.elapsed_s = it * 0.1;
        s.warmup = it <= 10;
        s.received_unix_ns = absl::ToUnixNanos(absl::Now());
        samples.push_back(std::move(s));
      }
      for (int k = 0; k < readings_each; ++k) {
        bench::GpuSample g;
        g.job_id = r.job_id;
        g.attempt = r.attempt;
        g.rank = r.rank;
        g.seq = int64_t{from} * 10 + k + 1;
        g.gpu_uuid = Uuid(n, r.gpu);
        g.gpu_index = r.gpu;
        g.time_unix_ns = absl::ToUnixNanos(absl::Now());
        g.power_w = 650 + r.gpu;
        g.energy_j = 1.0e6 + from;
        g.sm_clock_mhz = 1980;
        g.memory_clock_mhz = 2619;
        g.temperature_c = 61;
        g.gpu_utilization_pct = 98;
        g.memory_utilization_pct = 40;
        g.memory_used_bytes = int64_t{60} << 30;
        g.throttle_reasons = 0;
        g.power_limit_w = 700;
        readings.push_back(std::move(g));
      }
    }
  }

  // Uploads agent n's batch and waits for its acknowledgement. `sync_ms`: the call's
  // synchronous part (screening under the manager's lock, LiveMetrics' records).
  absl::Status UploadAndWait(int n, int from, int iterations, int readings_each, double* sync_ms,
                             double* ack_ms) {
    std::vector<bench::IterationSample> samples;
    std::vector<bench::GpuSample> readings;
    Upload(n, from, samples, readings, iterations, readings_each);
    std::promise<absl::Status> done;
    const Clock::time_point start = Clock::now();
    manager_.UploadSamples(
        Node(n), std::move(samples), std::move(readings),
        [&done](absl::StatusOr<bench::AppendResult> r) {
          done.set_value(r.ok() && r->rejected > 0
                             ? absl::InternalError(absl::StrCat(r->rejected, " samples refused"))
                             : r.status());
        });
    *sync_ms = Ms(Clock::now() - start);
    absl::Status status = done.get_future().get();
    *ack_ms = Ms(Clock::now() - start);
    return status;
  }

  int nodes() const { return nodes_; }

 private:
  // Reports every assignment received so far started, until none is left (a job's other
  // nodes get theirs once rank 0's agent reports its rendezvous port).
  absl::Status ReportStarted() {
    for (bool any = true; any;) {
      any = false;
      for (int n = 0; n < nodes_; ++n) {
        for (const bench::AssignmentMessage& a : channels_[n].Take()) {
          any = true;
          std::vector<bench::RankReport> ranks;
          for (size_t i = 0; i < a.ranks.size(); ++i) {
            bench::RankReport report;
            report.rank = a.ranks[i];
            report.outcome = bench::RankOutcome::kStarted;
            ranks.push_back(report);
            running_[n].push_back({a.job_id, a.attempt, a.ranks[i], a.device_indices[i]});
          }
          const int port = a.master_port == 0 ? 29500 : 0;
          if (absl::Status s = manager_.ReportStatus(Node(n), a.job_id, a.attempt, port, ranks);
              !s.ok()) {
            return s;
          }
        }
      }
    }
    return absl::OkStatus();
  }

  bench::JobManager& manager_;
  const int nodes_;
  std::vector<RecordingChannel> channels_;
  std::vector<std::vector<RankOnGpu>> running_;  // by node
};

// Jobs that ended within the retention: what 10 ended jobs a second leave on /metrics.
void AddRetainedEndedJobs(bench::LiveMetrics& live, int count) {
  static const int kDevices[] = {1, 1, 8, 8, 8, 32, 256, 1};
  const absl::Time now = absl::Now();
  for (int i = 0; i < count; ++i) {
    const std::string id = absl::StrCat("ended-", i);
    const int devices = kDevices[i % 8];
    live.JobStarted(id, {"resnet50", "amp", kBatch, devices, false});
    for (int rank = 0; rank < devices; ++rank) {
      bench::IterationSample s;
      s.job_id = id;
      s.attempt = 1;
      s.rank = rank;
      s.iteration = 1;
      s.elapsed_s = 0.1;
      s.images = kBatch;
      live.RecordIteration(id, Node(rank / kGpusPerNode), s);
    }
    live.JobEnded(id, 2400.0 * devices, now - absl::Milliseconds(99) * (count - i));
    live.SetEnergyPerImage(id, 0.27);
  }
}

struct Scrape {
  double fleet_ms = 0, take_ms = 0, render_ms = 0, total_ms = 0;
  double fleet_cpu_ms = 0, take_cpu_ms = 0, render_cpu_ms = 0, cpu_ms = 0;
  std::string body;
};

Scrape ScrapeOnce(bench::JobManager& manager, bench::LiveMetrics& live) {
  Scrape s;
  const double cpu0 = ThreadCpuMs();
  const Clock::time_point t0 = Clock::now();
  bench::FleetCounts fleet = manager.Fleet();
  const double cpu1 = ThreadCpuMs();
  const Clock::time_point t1 = Clock::now();
  bench::LiveMetrics::Snapshot snapshot = live.Take(absl::Now());
  const double cpu2 = ThreadCpuMs();
  const Clock::time_point t2 = Clock::now();
  s.body = bench::RenderMetrics(fleet, snapshot);
  const double cpu3 = ThreadCpuMs();
  const Clock::time_point t3 = Clock::now();
  s.fleet_cpu_ms = cpu1 - cpu0;
  s.take_cpu_ms = cpu2 - cpu1;
  s.render_cpu_ms = cpu3 - cpu2;
  s.cpu_ms = cpu3 - cpu0;
  s.fleet_ms = Ms(t1 - t0);
  s.take_ms = Ms(t2 - t1);
  s.render_ms = Ms(t3 - t2);
  s.total_ms = Ms(t3 - t0);
  return s;
}

// Series per family: every line that is not a comment, by its name before `{` or ` `.
std::map<std::string, int> SeriesByFamily(const std::string& body) {
  std::map<std::string, int> families;
  size_t at = 0;
  while (at < body.size()) {
    size_t end = body.find('\n', at);
    if (end == std::string::npos) end = body.size();
    if (body[at] != '#' && end > at) {
      const size_t name_end = body.find_first_of("{ ", at);
      families[body.substr(at, std::min(name_end, end) - at)] += 1;
    }
    at = end + 1;
  }
  return families;
}

std::string LoadAverage() {
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) != 3) return "unknown";
  return absl::StrFormat("%.2f %.2f %.2f", load[0], load[1], load[2]);
}

// Ingestion from 2 threads over the fleet's agents for `seconds`, with scrapes back to
// back meanwhile when `scrape`.
int IngestPhase(Fleet& fleet, bench::JobManager& manager, bench::LiveMetrics& live, int seconds,
                bool scrape, int* next_iteration) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> uploads{0}, samples{0};
  std::vector<Stats> sync(2), ack(2);
  std::atomic<int> failures{0};
  std::atomic<int> rounds{0};  // the most rounds one thread began
  const int from = *next_iteration;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; !stop.load(); ++round) {
        int begun = rounds.load();
        while (begun < round + 1 && !rounds.compare_exchange_weak(begun, round + 1)) {
        }
        for (int n = t; n < fleet.nodes() && !stop.load(); n += 2) {
          double sync_ms = 0, ack_ms = 0;
          absl::Status s = fleet.UploadAndWait(n, from + round * 10, 10, 10, &sync_ms, &ack_ms);
          if (!s.ok()) {
            if (failures.fetch_add(1) == 0) Fail("upload", s);
            stop = true;
            return;
          }
          sync[t].Add(sync_ms);
          ack[t].Add(ack_ms);
          uploads.fetch_add(1);
          samples.fetch_add(kGpusPerNode * 20);
        }
      }
    });
  }
  Stats scrapes, scrape_take;
  const Clock::time_point start = Clock::now();
  while (Clock::now() - start < std::chrono::seconds(seconds) && failures.load() == 0) {
    if (scrape) {
      Scrape s = ScrapeOnce(manager, live);
      scrapes.Add(s.total_ms);
      scrape_take.Add(s.take_ms);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  const double elapsed = Ms(Clock::now() - start) / 1000;
  // The next phase starts past every iteration this one may have used.
  *next_iteration = from + rounds.load() * 10;
  Stats all_sync, all_ack;
  for (int t = 0; t < 2; ++t) {
    for (double v : sync[t].values) all_sync.Add(v);
    for (double v : ack[t].values) all_ack.Add(v);
  }
  std::printf("\n%s (%.1f s, load average %s):\n",
              scrape ? "ingesting while scraping" : "ingesting, no scrapes", elapsed,
              LoadAverage().c_str());
  std::printf("  %lld uploads, %.0f samples/s (iterations and readings)\n",
              static_cast<long long>(uploads.load()), samples.load() / elapsed);
  std::printf("  upload, synchronous part (screening, LiveMetrics): %s\n", all_sync.Text().c_str());
  std::printf("  upload, until acknowledged (committed):           %s\n", all_ack.Text().c_str());
  if (scrape) {
    std::printf("  scrape (Fleet + Take + Render):                    %s\n",
                scrapes.Text().c_str());
    std::printf("  of which Take (under LiveMetrics' lock):           %s\n",
                scrape_take.Text().c_str());
  }
  return failures.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "";
  const int nodes = argc > 2 ? std::atoi(argv[2]) : 1024;
  const int64_t ended = argc > 3 ? std::atoll(argv[3]) : 100000;
  const int scrapes = argc > 4 ? std::atoi(argv[4]) : 20;
  const int ingest_s = argc > 5 ? std::atoi(argv[5]) : 10;
  if (nodes < 64 || nodes % 64 != 0 || ended < 0 || scrapes < 1 || ingest_s < 0) {
    std::fprintf(stderr,
                 "usage: metrics_bench [DIR] [NODES: a multiple of 64] [ENDED_JOBS>=0] "
                 "[SCRAPES>=1] [INGEST_S>=0]\n");
    return 2;
  }
  bool temporary = false;
  if (dir.empty()) {
    char pattern[] = "/tmp/metrics_bench_XXXXXX";
    if (mkdtemp(pattern) == nullptr) {
      std::perror("mkdtemp");
      return 1;
    }
    dir = pattern;
    temporary = true;
  }
  std::filesystem::create_directories(dir);
  // DIR/ended.db holds the ended jobs alone (written once); each run works on a copy.
  const std::string ended_db = dir + "/ended.db";
  const std::string db = dir + "/bench.db";
  if (!std::filesystem::exists(ended_db)) {
    auto store = bench::Store::Open(ended_db);
    if (!store.ok()) return Fail("open the store", store.status());
    const Clock::time_point t = Clock::now();
    if (absl::Status s = WriteEndedJobs(**store, ended); !s.ok()) return Fail("write jobs", s);
    std::printf("wrote %lld ended jobs in %.1f s\n", static_cast<long long>(ended),
                Ms(Clock::now() - t) / 1000);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
  std::filesystem::copy_file(ended_db, db);
  int rc = 0;
  {
    auto store = bench::Store::Open(db);
    if (!store.ok()) return Fail("open the store", store.status());
    bench::LiveMetrics live;  // benchd's default retention, 10 minutes
    bench::JobManager manager(store->get(), bench::JobManagerOptions{}, &live);
    const Clock::time_point recovering = Clock::now();
    if (absl::Status s = manager.Recover(); !s.ok()) return Fail("recover", s);
    std::printf("recovered in %.1f s\n", Ms(Clock::now() - recovering) / 1000);

    Fleet fleet(manager, nodes);
    if (absl::Status s = fleet.Register(); !s.ok()) return Fail("register", s);
    int jobs = 0;
    const Clock::time_point filling = Clock::now();
    if (absl::Status s = fleet.FillWithJobs(&jobs); !s.ok()) return Fail("fill", s);
    std::printf("%d agents x %d GPUs: %d jobs running on %d GPUs (placed in %.1f s)\n", nodes,
                kGpusPerNode, jobs, fleet.busy_gpus(), Ms(Clock::now() - filling) / 1000);
    // 11 iterations (a full live window) and one reading per rank.
    for (int n = 0; n < nodes && rc == 0; ++n) {
      double sync_ms = 0, ack_ms = 0;
      if (absl::Status s = fleet.UploadAndWait(n, 1, 11, 1, &sync_ms, &ack_ms); !s.ok()) {
        rc = Fail("first uploads", s);
      }
    }
    const int retained = 10 * 600;
    AddRetainedEndedJobs(live, retained);
    std::printf("%d jobs ended within the retention (10 a second for 10 minutes)\n", retained);

    Stats fleet_ms, take_ms, render_ms, total_ms, fleet_cpu, take_cpu, render_cpu, cpu_ms;
    std::string body;
    for (int i = 0; i < scrapes && rc == 0; ++i) {
      Scrape s = ScrapeOnce(manager, live);
      fleet_ms.Add(s.fleet_ms);
      take_ms.Add(s.take_ms);
      render_ms.Add(s.render_ms);
      total_ms.Add(s.total_ms);
      fleet_cpu.Add(s.fleet_cpu_ms);
      take_cpu.Add(s.take_cpu_ms);
      render_cpu.Add(s.render_cpu_ms);
      cpu_ms.Add(s.cpu_ms);
      body = std::move(s.body);
    }
    if (rc == 0) {
      std::map<std::string, int> families = SeriesByFamily(body);
      int series = 0;
      for (const auto& [name, count] : families) series += count;
      std::printf("\n/metrics, %d scrapes, no ingestion (load average %s):\n", scrapes,
                  LoadAverage().c_str());
      std::printf("  wall  Fleet():        %s\n", fleet_ms.Text().c_str());
      std::printf("  wall  Take():         %s\n", take_ms.Text().c_str());
      std::printf("  wall  RenderMetrics:  %s\n", render_ms.Text().c_str());
      std::printf("  wall  whole scrape:   %s\n", total_ms.Text().c_str());
      std::printf("  CPU   Fleet():        %s\n", fleet_cpu.Text().c_str());
      std::printf("  CPU   Take():         %s\n", take_cpu.Text().c_str());
      std::printf("  CPU   RenderMetrics:  %s\n", render_cpu.Text().c_str());
      std::printf("  CPU   whole scrape:   %s\n", cpu_ms.Text().c_str());
      std::printf("  body %zu bytes, %d series:\n", body.size(), series);
      for (const auto& [name, count] : families) std::printf("    %-52s %d\n", name.c_str(), count);
    }
    int next_iteration = 12;
    if (rc == 0 && ingest_s > 0) {
      rc = IngestPhase(fleet, manager, live, ingest_s, false, &next_iteration);
    }
    if (rc == 0 && ingest_s > 0) {
      rc = IngestPhase(fleet, manager, live, ingest_s, true, &next_iteration);
    }
    manager.Shutdown();
  }
  if (temporary) std::filesystem::remove_all(dir);
  return rc;
}
