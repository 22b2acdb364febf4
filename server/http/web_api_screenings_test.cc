// The web API's fleet screenings over a real store: a screening of six single-GPU jobs on two
// nodes (one GPU 30 % slower with hw_thermal readings, one failed job) answers verdicts
// flagged first with benchctl's text, the same twice; the list counts its jobs.
#include "server/http/web_api_test_fixture.h"

namespace bench::web_api_test {
namespace {

class WebApiScreeningsTest : public WebApiTest {
 protected:
  // A single-GPU job of screening `id` on `node` GPU `gpu`, measuring 20 iterations of
  // `step_s` with a reading per iteration (`throttle` as its reasons, SM clock `sm_mhz`).
  Job StoreGpuJob(int64_t seq, const std::string& id, const std::string& node, int gpu,
                  JobState state, double step_s, uint64_t throttle = 0, double sm_mhz = 1980) {
    Job job;
    job.seq = seq;
    job.id = absl::StrCat("job-", 200000 + seq);
    job.spec.model = "resnet50";
    job.spec.devices = 1;
    job.spec.precision = Precision::kFp32;
    job.spec.batch_size = 64;
    job.spec.iterations = 21;
    job.spec.warmup_iterations = 1;
    job.spec.image_size = 224;
    job.spec.labels = {{"screening", id}};
    job.spec.allowed_nodes = {node};
    job.created = kEpoch + absl::Seconds(seq);
    job.state = state;
    job.reason = state == JobState::kFailed ? "rank 0 exited with code 1" : "";
    job.history.push_back({JobState::kQueued, "submitted", job.created});
    job.attempt = 1;
    job.device_kind = DeviceKind::kCuda;
    job.placements.push_back(Placement{node, {0}, {gpu}});
    RankDevice device;
    device.rank = 0;
    device.agent = node;
    device.device_index = gpu;
    device.gpu_uuid = absl::StrCat("GPU-", node, "-", gpu);
    device.gpu_name = "NVIDIA H100";
    job.rank_devices.push_back(device);
    EXPECT_TRUE(store_->InsertJob(job).ok());
    EXPECT_TRUE(store_->UpdateJob(job).ok());
    if (state == JobState::kFailed) return job;
    std::vector<IterationSample> samples;
    std::vector<GpuSample> readings;
    for (int it = 1; it <= 21; ++it) {
      IterationSample s;
      s.job_id = job.id;
      s.attempt = 1;
      s.iteration = it;
      s.step_time_s = step_s * (1 + 0.001 * (it % 3));
      s.images = 64;
      s.loss = 1;
      s.elapsed_s = step_s * it;
      s.warmup = it == 1;
      s.received_unix_ns = absl::ToUnixNanos(job.created) + it * 100'000'000LL;
      samples.push_back(s);
      GpuSample g;
      g.job_id = job.id;
      g.attempt = 1;
      g.seq = it;
      g.gpu_uuid = device.gpu_uuid;
      g.gpu_index = gpu;
      g.time_unix_ns = s.received_unix_ns;
      g.sm_clock_mhz = sm_mhz;
      g.max_sm_clock_mhz = 1980;
      g.memory_clock_mhz = 2619;
      g.power_w = 500;
      g.temperature_c = throttle != 0 ? 93 : 60;
      g.throttle_reasons = throttle;
      readings.push_back(g);
    }
    EXPECT_TRUE(store_->AppendSamplesSync(samples, readings).ok());
    return job;
  }

  void StoreScreening() {
    StoreGpuJob(1, "s1", "n1", 0, JobState::kSucceeded, 0.100);
    StoreGpuJob(2, "s1", "n1", 1, JobState::kSucceeded, 0.130, 0x40, 1200);
    StoreGpuJob(3, "s1", "n1", 2, JobState::kSucceeded, 0.101);
    StoreGpuJob(4, "s1", "n2", 0, JobState::kSucceeded, 0.099);
    StoreGpuJob(5, "s1", "n2", 1, JobState::kFailed, 0);
    StoreGpuJob(6, "s1", "n2", 2, JobState::kSucceeded, 0.1005);
    StoreGpuJob(7, "s0", "n1", 0, JobState::kSucceeded, 0.100);  // an older screening
  }
};

TEST_F(WebApiScreeningsTest, VerdictsFlaggedFirstWithTheTextSameTwice) {
  StoreScreening();
  StartManager();
  HttpResponse response = Get("/api/v1/screenings/s1");
  ASSERT_EQ(response.status, 200) << response.body;
  Struct report = Parse(response.body);
  EXPECT_EQ(Field(report, "screening_id").string_value(), "s1");
  EXPECT_EQ(Field(report, "jobs").number_value(), 6);
  EXPECT_TRUE(Field(report, "any_flagged").bool_value());
  const auto& gpus = Field(report, "gpus").list_value().values();
  ASSERT_EQ(gpus.size(), 6);
  auto gpu = [&](int i, const std::string& key) -> const Value& {
    return gpus[i].struct_value().fields().at(key);
  };
  EXPECT_EQ(gpu(0, "verdict").string_value(), "failed");
  EXPECT_EQ(gpu(0, "node").string_value(), "n2");
  EXPECT_EQ(gpu(0, "gpu_index").number_value(), 1);
  EXPECT_EQ(gpu(1, "verdict").string_value(), "slow");
  EXPECT_EQ(gpu(1, "node").string_value(), "n1");
  EXPECT_EQ(gpu(1, "gpu_index").number_value(), 1);
  EXPECT_EQ(gpu(1, "causes").list_value().values(0).string_value(), "thermal");
  for (int i = 2; i < 6; ++i) EXPECT_EQ(gpu(i, "verdict").string_value(), "ok") << i;
  const std::string text = Field(report, "text").string_value();
  EXPECT_THAT(text, HasSubstr("screening s1: 6 GPUs on 2 nodes, 2 flagged"));
  EXPECT_THAT(text, HasSubstr("n2       3  flagged: GPU 1"));
  // The analysis is re-run on the stored data: the same answer, byte for byte.
  EXPECT_EQ(Get("/api/v1/screenings/s1").body, response.body);
}

TEST_F(WebApiScreeningsTest, ListNewestFirstAndErrors) {
  StoreScreening();
  StartManager();
  HttpResponse response = Get("/api/v1/screenings");
  ASSERT_EQ(response.status, 200) << response.body;
  Struct list = Parse(response.body);
  const auto& screenings = Field(list, "screenings").list_value().values();
  ASSERT_EQ(screenings.size(), 2);
  const auto& newest = screenings[0].struct_value().fields();
  EXPECT_EQ(newest.at("screening_id").string_value(), "s0");  // its only job is the newest
  const auto& s1 = screenings[1].struct_value().fields();
  EXPECT_EQ(s1.at("screening_id").string_value(), "s1");
  EXPECT_EQ(s1.at("jobs").number_value(), 6);
  EXPECT_EQ(s1.at("succeeded").number_value(), 5);
  EXPECT_EQ(s1.at("failed").number_value(), 1);
  EXPECT_EQ(s1.at("nodes").list_value().values_size(), 2);

  response = Get("/api/v1/screenings/nope");
  EXPECT_EQ(response.status, 404) << response.body;
  EXPECT_THAT(response.body, HasSubstr("no screening \\\"nope\\\""));
  response = Get("/api/v1/screenings/bad%id");
  EXPECT_EQ(response.status, 400) << response.body;
  response = Get("/api/v1/screenings", {{"x", "1"}});
  EXPECT_EQ(response.status, 400) << response.body;
}

}  // namespace
}  // namespace bench::web_api_test
