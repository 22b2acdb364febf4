// The live event streams over a real store, job manager and HTTP server on loopback.
#include "server/http/live_streams.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <iostream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "httpd/http_test_client.h"

namespace bench {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class FakeChannel : public AgentChannel {
 public:
  void SendAssignment(const AssignmentMessage&) override {}
  void SendCancel(const CancelMessage&) override {}
  void Close(const absl::Status&) override {}
};

// An open GET whose answer is read as it comes.
class Client {
 public:
  Client(int port, const std::string& path) : fd_(http_test::ConnectLoopback(port)) {
    std::string request = "GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n";
    (void)!send(fd_, request.data(), request.size(), MSG_NOSIGNAL);
  }
  ~Client() { Close(); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  // Reads until `text` is in what was read after `from`, EOF, or the timeout.
  bool ReadUntil(const std::string& text, size_t from = 0,
                 absl::Duration timeout = absl::Seconds(10)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (buffer_.find(text, from) == std::string::npos) {
      int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
      if (ms <= 0 || eof_) return false;
      pollfd pfd{fd_, POLLIN, 0};
      if (poll(&pfd, 1, ms) <= 0) return false;
      char chunk[8192];
      ssize_t n = read(fd_, chunk, sizeof(chunk));
      if (n <= 0) {
        eof_ = true;
        return buffer_.find(text, from) != std::string::npos;
      }
      buffer_.append(chunk, static_cast<size_t>(n));
    }
    return true;
  }
  bool ReadToEof(absl::Duration timeout = absl::Seconds(10)) {
    ReadUntil("\x01never\x01", 0, timeout);
    return eof_;
  }
  const std::string& buffer() const { return buffer_; }

  // The events read so far: (event, data).
  std::vector<std::pair<std::string, std::string>> Events() const {
    std::vector<std::pair<std::string, std::string>> events;
    size_t start = buffer_.find("\r\n\r\n");
    if (start == std::string::npos) return events;
    start += 4;
    while (true) {
      size_t end = buffer_.find("\n\n", start);
      if (end == std::string::npos) break;
      std::string block = buffer_.substr(start, end - start);
      start = end + 2;
      std::string event, data;
      std::istringstream lines(block);
      for (std::string line; std::getline(lines, line);) {
        if (line.rfind("event: ", 0) == 0) event = line.substr(7);
        if (line.rfind("data: ", 0) == 0) data += line.substr(6);
      }
      if (!event.empty()) events.push_back({event, data});
    }
    return events;
  }

 private:
  int fd_;
  std::string buffer_;
  bool eof_ = false;
};

class LiveStreamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bench_live_streams_test_XXXXXX";
    dir_ = mkdtemp(pattern);
    store_ = std::move(Store::Open(dir_ + "/bench.db")).value();
    manager_ = std::make_unique<JobManager>(store_.get(), JobManagerOptions{}, &metrics_);
    ASSERT_TRUE(manager_->Recover().ok());
    AgentInventory inventory;
    inventory.name = "agent-a";
    inventory.address = "127.0.0.1";
    // GPUs: a job's GPU readings are stored only for ranks on a CUDA device.
    for (int i = 0; i < 64; ++i) {
      inventory.gpus.push_back({i, "Fake GPU", "GPU-fake-" + std::to_string(i), 1 << 30});
    }
    ASSERT_TRUE(manager_->RegisterAgent(inventory).ok());
    ASSERT_TRUE(manager_->AttachChannel("agent-a", &channel_).ok());
    http_ = std::make_unique<HttpServer>();
    LiveStreamOptions options;
    options.poll_period = absl::Milliseconds(50);
    options.fleet_period = absl::Milliseconds(200);
    RegisterLiveStreams(*http_, manager_.get(), store_.get(), &metrics_, options);
    http_->Handle("/plain", [](const HttpRequest&) {
      return HttpResponse{200, "text/plain", "plain\n"};
    });
    auto port = http_->Start("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *port;
  }
  void TearDown() override {
    http_->Stop();
    http_.reset();
    manager_->Shutdown();
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string SubmitRunning(int devices) {
    JobSpec spec;
    spec.model = "resnet50";
    spec.devices = devices;
    spec.precision = Precision::kFp32;
    spec.batch_size = 2;
    spec.iterations = 100;
    spec.warmup_iterations = 1;
    spec.image_size = 64;
    std::promise<absl::StatusOr<SubmitResult>> done;
    manager_->Submit(spec, [&](absl::StatusOr<SubmitResult> r) { done.set_value(std::move(r)); });
    auto submitted = done.get_future().get();
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    EXPECT_EQ(manager_->Get(submitted->job_id)->job.state, JobState::kRunning);
    return submitted->job_id;
  }
  void Upload(const std::string& job_id, int rank, int first, int last,
              std::vector<GpuSample> gpu = {}) {
    std::vector<IterationSample> samples;
    for (int i = first; i <= last; ++i) {
      IterationSample s;
      s.job_id = job_id;
      s.attempt = 1;
      s.rank = rank;
      s.iteration = i;
      s.step_time_s = 0.1;
      s.images = 2;
      s.loss = 1.0;
      s.elapsed_s = 0.1 * i;
      samples.push_back(s);
    }
    std::promise<absl::StatusOr<AppendResult>> done;
    manager_->UploadSamples("agent-a", std::move(samples), std::move(gpu),
                            [&](absl::StatusOr<AppendResult> r) { done.set_value(r); });
    auto result = done.get_future().get();
    ASSERT_TRUE(result.ok()) << result.status();
  }
  // A reading of the GPU the rank holds: a fresh agent places rank r on GPU r.
  static GpuSample Gpu(const std::string& job_id, int rank, int64_t seq) {
    GpuSample g;
    g.job_id = job_id;
    g.attempt = 1;
    g.rank = rank;
    g.seq = seq;
    g.gpu_uuid = "GPU-fake-" + std::to_string(rank);
    g.gpu_index = rank;
    g.time_unix_ns = 1000 * seq;
    g.power_w = 250.0;
    return g;
  }
  static RankReport Succeeded(int rank) {
    RankReport report;
    report.rank = rank;
    report.outcome = RankOutcome::kSucceeded;
    report.summary = RankSummary{rank, 4, 8, 1.0, 0.1};
    return report;
  }
  void WaitForStreams(int n) {
    for (int i = 0; i < 300 && http_->open_event_streams() != n; ++i) {
      absl::SleepFor(absl::Milliseconds(10));
    }
  }

  std::string dir_;
  LiveMetrics metrics_;
  FakeChannel channel_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
  std::unique_ptr<HttpServer> http_;
  int port_ = 0;
};

// (rank, iteration) of every sample in the `samples` events, in the order received.
std::vector<std::pair<int, int>> SamplesOf(
    const std::vector<std::pair<std::string, std::string>>& events) {
  std::vector<std::pair<int, int>> out;
  std::regex pattern("\"rank\":(\\d+),\"iteration\":(\\d+)");
  for (const auto& [event, data] : events) {
    if (event != "samples") continue;
    for (std::sregex_iterator it(data.begin(), data.end(), pattern), end; it != end; ++it) {
      out.push_back({std::stoi((*it)[1]), std::stoi((*it)[2])});
    }
  }
  return out;
}

TEST_F(LiveStreamsTest, AJobStreamSendsTheJobThenEachSampleOnceThenTheFinalState) {
  const std::string id = SubmitRunning(2);
  Upload(id, 0, 1, 2);  // stored before the client connects: sent too, after the job
  Client client(port_, "/api/v1/jobs/" + id + "/events");
  ASSERT_TRUE(client.ReadUntil("event: samples"));
  EXPECT_THAT(client.buffer(), StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(client.buffer(), HasSubstr("Content-Type: text/event-stream"));
  auto events = client.Events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].first, "job");
  EXPECT_THAT(events[0].second, HasSubstr("\"state\":\"JOB_STATE_RUNNING\""));
  EXPECT_THAT(events[0].second, HasSubstr("\"id\":\"" + id + "\""));

  // The second reading carries the screening fields: the stream sends them as stored.
  GpuSample screened = Gpu(id, 1, 2);
  screened.pcie_gen = 3;
  screened.pcie_gen_max = 5;
  screened.power_limit_w = 700;
  screened.xid_errors = 2;
  Upload(id, 1, 1, 3, {Gpu(id, 1, 1), screened});
  Upload(id, 0, 3, 4);
  ASSERT_TRUE(client.ReadUntil("\"rank\":0,\"iteration\":4"));
  ASSERT_TRUE(client.ReadUntil("event: gpu"));
  ASSERT_TRUE(manager_->ReportStatus("agent-a", id, 1, 0, {Succeeded(0), Succeeded(1)}).ok());
  EXPECT_TRUE(client.ReadToEof());  // the stream ends after the final state

  events = client.Events();
  std::vector<std::pair<int, int>> samples = SamplesOf(events);
  std::vector<std::pair<int, int>> rank0, rank1;
  for (const auto& s : samples) (s.first == 0 ? rank0 : rank1).push_back(s);
  EXPECT_EQ(rank0, (std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {0, 3}, {0, 4}}));
  EXPECT_EQ(rank1, (std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {1, 3}}));
  int gpu_rows = 0;
  std::string gpu_json;
  for (const auto& [event, data] : events) {
    if (event != "gpu") continue;
    gpu_json += data;
    EXPECT_THAT(data, HasSubstr("\"gpu_uuid\":\"GPU-fake-1\""));
    EXPECT_THAT(data, HasSubstr("\"power_w\":250"));
    for (size_t at = data.find("\"seq\""); at != std::string::npos;
         at = data.find("\"seq\"", at + 1)) {
      ++gpu_rows;
    }
  }
  EXPECT_EQ(gpu_rows, 2);
  EXPECT_THAT(gpu_json, HasSubstr("\"pcie_gen\":3,\"pcie_gen_max\":5"));
  EXPECT_THAT(gpu_json, HasSubstr("\"power_limit_w\":700"));
  EXPECT_THAT(gpu_json, HasSubstr("\"xid_errors\":\"2\""));  // int64: a string in JSON
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back().first, "job");
  EXPECT_THAT(events.back().second, HasSubstr("\"state\":\"JOB_STATE_SUCCEEDED\""));
  WaitForStreams(0);
  EXPECT_EQ(http_->open_event_streams(), 0);
}

TEST_F(LiveStreamsTest, AnEndedJobStreamsItsRowsAndEnds) {
  const std::string id = SubmitRunning(1);
  Upload(id, 0, 1, 7);
  ASSERT_TRUE(manager_->ReportStatus("agent-a", id, 1, 0, {Succeeded(0)}).ok());
  Client client(port_, "/api/v1/jobs/" + id + "/events");
  EXPECT_TRUE(client.ReadToEof());
  auto events = client.Events();
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.front().first, "job");
  EXPECT_EQ(events.back().first, "job");
  EXPECT_THAT(events.back().second, HasSubstr("JOB_STATE_SUCCEEDED"));
  std::vector<std::pair<int, int>> expected;
  for (int i = 1; i <= 7; ++i) expected.push_back({0, i});
  EXPECT_EQ(SamplesOf(events), expected);
}

TEST_F(LiveStreamsTest, GpuReadingsWithoutIterationsArriveWithinASecondOrSo) {
  const std::string id = SubmitRunning(1);
  Client client(port_, "/api/v1/jobs/" + id + "/events");
  ASSERT_TRUE(client.ReadUntil("event: job"));
  absl::SleepFor(absl::Milliseconds(100));
  Upload(id, 0, 1, 0, {Gpu(id, 0, 1)});  // no iteration: the manager does not notify
  EXPECT_TRUE(client.ReadUntil("event: gpu", 0, absl::Seconds(3)));
  EXPECT_THAT(client.buffer(), HasSubstr("\"seq\":\"1\""));  // int64: a JSON string
}

TEST_F(LiveStreamsTest, AnUnknownJobIs404) {
  Client client(port_, "/api/v1/jobs/job-nope/events");
  EXPECT_TRUE(client.ReadUntil("}}"));
  EXPECT_THAT(client.buffer(), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(client.buffer(), HasSubstr("\"code\":\"NOT_FOUND\""));
}

TEST_F(LiveStreamsTest, AClientThatLeavesFreesItsStream) {
  const std::string id = SubmitRunning(1);
  {
    Client client(port_, "/api/v1/jobs/" + id + "/events");
    ASSERT_TRUE(client.ReadUntil("event: job"));
    EXPECT_EQ(http_->open_event_streams(), 1);
  }
  WaitForStreams(0);
  EXPECT_EQ(http_->open_event_streams(), 0);
}

TEST_F(LiveStreamsTest, TheFleetStreamShowsAgentsAndRunningGpus) {
  metrics_.JobStarted("job-x", {"resnet50", "fp32", 2, 1});
  GpuSample g = Gpu("job-x", 0, 1);
  g.sm_clock_mhz = 1410;
  g.temperature_c = 61;
  g.gpu_utilization_pct = 97;
  metrics_.RecordGpuSample("job-x", "agent-a", g);
  auto start = std::chrono::steady_clock::now();
  Client client(port_, "/api/v1/fleet/events");
  ASSERT_TRUE(client.ReadUntil("event: fleet", 0, absl::Seconds(2)));
  ASSERT_TRUE(client.ReadUntil("\n\n", client.buffer().find("event: fleet")));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  auto events = client.Events();
  ASSERT_FALSE(events.empty());
  const std::string& data = events[0].second;
  EXPECT_THAT(data, HasSubstr("\"name\":\"agent-a\""));
  EXPECT_THAT(data,
              HasSubstr("\"gpus\":[{\"job_id\":\"job-x\",\"rank\":0,\"node\":\"agent-a\","
                        "\"gpu_index\":0,\"gpu_uuid\":\"GPU-fake-0\",\"time_unix_ns\":\"1000\","
                        "\"power_w\":250,\"sm_clock_mhz\":1410,\"temperature_c\":61,"
                        "\"gpu_utilization_pct\":97}]"));
  // And again, every period.
  ASSERT_TRUE(client.ReadUntil("event: fleet", client.buffer().find("event: fleet") + 1));
}

// Fleet streams share one rendering per fleet_period: two clients of one period (an hour
// here, so that both open within it) get the same bytes from one rendering.
TEST_F(LiveStreamsTest, TwoFleetStreamsOfOnePeriodShareOneRendering) {
  metrics_.JobStarted("job-x", {"resnet50", "fp32", 2, 1});
  metrics_.RecordGpuSample("job-x", "agent-a", Gpu("job-x", 0, 1));
  std::atomic<int64_t> renders{0};
  HttpServer http;
  LiveStreamOptions options;
  options.fleet_period = absl::Hours(1);
  options.fleet_renders = &renders;
  RegisterLiveStreams(http, manager_.get(), store_.get(), &metrics_, options);
  auto port = http.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_EQ(renders.load(), 0);  // nobody listens: nothing rendered
  Client first(*port, "/api/v1/fleet/events");
  ASSERT_TRUE(first.ReadUntil("event: fleet"));
  ASSERT_TRUE(first.ReadUntil("\n\n", first.buffer().find("event: fleet")));
  Client second(*port, "/api/v1/fleet/events");
  ASSERT_TRUE(second.ReadUntil("event: fleet"));
  ASSERT_TRUE(second.ReadUntil("\n\n", second.buffer().find("event: fleet")));
  const auto a = first.Events();
  const auto b = second.Events();
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].second, b[0].second);
  EXPECT_THAT(a[0].second, HasSubstr("\"node\":\"agent-a\""));
  EXPECT_EQ(renders.load(), 1);
  first.Close();
  second.Close();
  http.Stop();
}

TEST_F(LiveStreamsTest, TwentyOpenStreamsDoNotSlowAPlainRoute) {
  const std::string id = SubmitRunning(1);
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 20; ++i) {
    clients.push_back(std::make_unique<Client>(port_, "/api/v1/jobs/" + id + "/events"));
  }
  for (auto& c : clients) ASSERT_TRUE(c->ReadUntil("event: job"));
  EXPECT_EQ(http_->open_event_streams(), 20);
  Upload(id, 0, 1, 50);
  auto start = std::chrono::steady_clock::now();
  Client plain(port_, "/plain");
  ASSERT_TRUE(plain.ReadUntil("plain\n"));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
  std::cout << "plain route beside 20 job streams: " << seconds * 1000 << " ms\n";
  for (auto& c : clients) EXPECT_TRUE(c->ReadUntil("\"iteration\":50"));
  clients.clear();
  WaitForStreams(0);
  EXPECT_EQ(http_->open_event_streams(), 0);
}

TEST_F(LiveStreamsTest, StoreReadsAnAttemptsRowsAfterACursorBySeqThenRank) {
  const std::string id = SubmitRunning(2);
  std::vector<GpuSample> gpu;
  std::vector<IterationSample> samples;
  auto sample = [&id](int rank, int iteration) {
    IterationSample s;
    s.job_id = id;
    s.attempt = 1;
    s.rank = rank;
    s.iteration = iteration;
    s.step_time_s = 0.1;
    s.images = 2;
    s.loss = 1.0;
    return s;
  };
  for (int seq = 5; seq >= 1; --seq) {  // stored out of order
    gpu.push_back(Gpu(id, 1, seq));
    gpu.push_back(Gpu(id, 0, seq));
    samples.push_back(sample(1, seq));
    samples.push_back(sample(0, seq));
  }
  ASSERT_TRUE(store_->AppendSamplesSync(samples, gpu).ok());
  auto page = store_->ReadGpuSamplesAfter(id, 1, {2, 0}, 3);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->size(), 3u);
  EXPECT_EQ(std::make_pair((*page)[0].seq, (*page)[0].rank), std::make_pair(int64_t{2}, 1));
  EXPECT_EQ(std::make_pair((*page)[1].seq, (*page)[1].rank), std::make_pair(int64_t{3}, 0));
  EXPECT_EQ(std::make_pair((*page)[2].seq, (*page)[2].rank), std::make_pair(int64_t{3}, 1));
  EXPECT_EQ((*page)[0].power_w, 250.0);
  auto rows = store_->ReadSamplesAfter(id, 1, {4, 1}, 10);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ(std::make_pair((*rows)[0].iteration, (*rows)[0].rank), std::make_pair(5, 0));
  EXPECT_EQ(std::make_pair((*rows)[1].iteration, (*rows)[1].rank), std::make_pair(5, 1));
  EXPECT_EQ(store_->ReadGpuSamplesAfter(id, 1, {5, 1}, 10)->size(), 0u);
  EXPECT_EQ(store_->ReadGpuSamplesAfter(id, 2, {0, -1}, 10)->size(), 0u);
  EXPECT_EQ(store_->ReadSamplesAfter(id, 2, {0, -1}, 10)->size(), 0u);
}

}  // namespace
}  // namespace bench
