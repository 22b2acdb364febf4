#include "server/metrics/live_metrics.h"

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/metrics/metrics_exporter.h"

namespace bench {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

IterationSample Iteration(int rank, int iteration, double elapsed, int images) {
  IterationSample s;
  s.job_id = "job-1";
  s.attempt = 1;
  s.rank = rank;
  s.iteration = iteration;
  s.elapsed_s = elapsed;
  s.images = images;
  return s;
}

GpuSample Reading(int rank, int64_t seq, double watts) {
  GpuSample g;
  g.job_id = "job-1";
  g.attempt = 1;
  g.rank = rank;
  g.seq = seq;
  g.gpu_index = rank;
  g.gpu_uuid = "GPU-fake-" + std::to_string(rank);
  g.power_w = watts;
  g.sm_clock_mhz = 1980;
  g.temperature_c = 61;
  g.energy_j = 1234.5;
  g.gpu_utilization_pct = 97;
  return g;
}

TEST(LiveMetrics, RecordIterationsEqualsRecordingEachInTurn) {
  LiveMetrics one_by_one;
  LiveMetrics batched;
  for (LiveMetrics* live : {&one_by_one, &batched}) {
    live->JobStarted("job-1", {"resnet50", "amp", 256, 2});
  }
  std::vector<IterationSample> samples;
  for (int i = 1; i <= 25; ++i) {
    samples.push_back(Iteration(0, i, 0.5 * i, 100));
    samples.push_back(Iteration(1, i, 0.25 * i + (i % 3), 100));
  }
  IterationSample unknown = Iteration(0, 3, 1, 1);
  unknown.job_id = "job-unknown";
  samples.push_back(unknown);
  for (const IterationSample& s : samples) one_by_one.RecordIteration(s.job_id, "node-a", s);
  batched.RecordIterations("node-a", samples);
  LiveMetrics::Snapshot a = one_by_one.Take(absl::Now());
  LiveMetrics::Snapshot b = batched.Take(absl::Now());
  ASSERT_EQ(a.jobs.size(), 1u);
  ASSERT_EQ(b.jobs.size(), 1u);
  const LiveMetrics::JobState& ja = a.jobs.at("job-1");
  const LiveMetrics::JobState& jb = b.jobs.at("job-1");
  EXPECT_DOUBLE_EQ(*jb.images_per_second, *ja.images_per_second);
  for (int rank : {0, 1}) {
    EXPECT_EQ(jb.ranks.at(rank).node, "node-a");
    EXPECT_DOUBLE_EQ(*jb.ranks.at(rank).images_per_second, *ja.ranks.at(rank).images_per_second);
  }
}

TEST(LiveMetrics, RankRateIsImagesOverTheLastIterationsOwnTime) {
  LiveMetrics live;
  live.JobStarted("job-1", {"resnet50", "amp", 256, 2});
  // Rank 0: iteration 1 takes 2 s (warm-up), then 0.5 s each, 100 images per step.
  live.RecordIteration("job-1", "node-a", Iteration(0, 1, 2.0, 100));
  LiveMetrics::Snapshot first = live.Take(absl::Now());
  EXPECT_DOUBLE_EQ(*first.jobs.at("job-1").ranks.at(0).images_per_second, 50);
  for (int i = 2; i <= 30; ++i) {
    live.RecordIteration("job-1", "node-a", Iteration(0, i, 2.0 + 0.5 * (i - 1), 100));
  }
  // Rank 1 runs at 100 images per second.
  for (int i = 1; i <= 30; ++i) {
    live.RecordIteration("job-1", "node-b", Iteration(1, i, 1.0 * i, 100));
  }
  LiveMetrics::Snapshot snapshot = live.Take(absl::Now());
  const LiveMetrics::JobState& job = snapshot.jobs.at("job-1");
  EXPECT_DOUBLE_EQ(*job.ranks.at(0).images_per_second, 200) << "the warm-up left the window";
  EXPECT_DOUBLE_EQ(*job.ranks.at(1).images_per_second, 100);
  EXPECT_DOUBLE_EQ(*job.images_per_second, 300);
  EXPECT_EQ(job.ranks.at(1).node, "node-b");
}

// The window is the last kWindow + 1 iterations by iteration number, whatever order
// they come in and however often one is repeated (a replayed upload): checked after each
// sample against the rule written with a map.
TEST(LiveMetrics, TheWindowIsTheLastIterationsWhateverTheirOrderAndRepeats) {
  std::mt19937 random(27);
  for (int trial = 0; trial < 50; ++trial) {
    LiveMetrics live;
    live.JobStarted("job-1", {"resnet50", "amp", 256, 1});
    std::map<int, std::pair<double, int>> model;  // iteration → (elapsed_s, images)
    std::vector<int> order;
    for (int i = 1; i <= 40; ++i) order.push_back(i);
    for (int repeat = 0; repeat < 15; ++repeat) order.push_back(1 + random() % 40);
    // Mostly in order, with runs shuffled (uploads retried, batches interleaved).
    for (size_t at = 0; at + 5 < order.size(); at += 5) {
      std::shuffle(order.begin() + at, order.begin() + at + 5, random);
    }
    for (int iteration : order) {
      double elapsed = 0.5 * iteration + 0.01 * (random() % 7);
      int images = 50 + static_cast<int>(random() % 100);
      live.RecordIteration("job-1", "node-a", Iteration(0, iteration, elapsed, images));
      model[iteration] = {elapsed, images};
      while (model.size() > static_cast<size_t>(LiveMetrics::kWindow) + 1) model.erase(model.begin());
      double from = model.begin()->first == 1 ? 0 : model.begin()->second.first;
      int64_t total = model.begin()->first == 1 ? model.begin()->second.second : 0;
      for (auto it = std::next(model.begin()); it != model.end(); ++it) total += it->second.second;
      double seconds = model.rbegin()->second.first - from;
      std::optional<double> expected;
      if (seconds > 0 && total > 0) expected = static_cast<double>(total) / seconds;
      LiveMetrics::Snapshot snapshot = live.Take(absl::Now());
      const LiveMetrics::JobState& job = snapshot.jobs.at("job-1");
      ASSERT_EQ(job.ranks.at(0).images_per_second.has_value(), expected.has_value())
          << "trial " << trial << " iteration " << iteration;
      if (expected) {
        ASSERT_DOUBLE_EQ(*job.ranks.at(0).images_per_second, *expected);
        ASSERT_DOUBLE_EQ(*job.images_per_second, *expected);  // the job's sum of one rank
      }
    }
  }
}

TEST(LiveMetrics, GpuSeriesEndWithTheRankAndJobsExpireAfterRetention) {
  LiveMetrics live(absl::Minutes(5));
  live.JobStarted("job-1", {"resnet50", "fp32", 128, 1});
  live.RecordGpuSample("job-1", "node-a", Reading(0, 2, 300));
  live.RecordGpuSample("job-1", "node-a", Reading(0, 1, 100));  // older: ignored
  absl::Time now = absl::Now();
  EXPECT_DOUBLE_EQ(*live.Take(now).jobs.at("job-1").ranks.at(0).gpu->power_w, 300);
  live.RankEnded("job-1", 0);
  EXPECT_FALSE(live.Take(now).jobs.at("job-1").ranks.at(0).gpu.has_value());

  live.JobEnded("job-1", 812.5, now);
  EXPECT_THAT(RenderMetrics({}, live.Take(now)),
              HasSubstr("bench_job_measured_images_per_second{bench_job=\"job-1\""));
  EXPECT_THAT(RenderMetrics({}, live.Take(now)),
              Not(HasSubstr("bench_job_images_per_second{bench_job=\"job-1\"")))
      << "the live series ends with the job";
  live.SetEnergyPerImage("job-1", 0.75);
  LiveMetrics::Snapshot kept = live.Take(now + absl::Minutes(4));
  EXPECT_DOUBLE_EQ(*kept.jobs.at("job-1").images_per_second, 812.5);
  EXPECT_DOUBLE_EQ(*kept.jobs.at("job-1").energy_per_image_j, 0.75);
  EXPECT_TRUE(live.Take(now + absl::Minutes(6)).jobs.empty());
  // A late sample of an ended job does not bring its series back.
  live.RecordGpuSample("job-1", "node-a", Reading(0, 3, 300));
  EXPECT_TRUE(live.Take(now + absl::Minutes(6)).jobs.empty());
}

// As the JobManager's JobEvents: a placement starts the job's series, screened samples
// feed them and the counters, the end of the attempt ends them at its transition's time.
TEST(LiveMetrics, TheManagersEventsBecomeTheFigures) {
  LiveMetrics metrics(absl::Minutes(10));
  JobEvents& events = metrics;
  Job job;
  job.id = "job-1";
  job.attempt = 1;
  job.spec.model = "resnet50";
  job.spec.precision = Precision::kFp32;
  job.spec.batch_size = 2;
  job.spec.devices = 1;
  const absl::Time placed = absl::FromUnixSeconds(1767225600);
  job.state = JobState::kRunning;
  job.history.push_back({JobState::kRunning, "placed", placed});
  events.OnStateChanged(job);
  ScreenedSamples screened;
  screened.iterations = {Iteration(0, 1, 1.0, 2), Iteration(0, 2, 2.0, 2)};
  screened.gpu_samples = {Reading(0, 1, 250)};
  screened.rejected = {{"stale_attempt", 3}};
  events.OnSamplesScreened("node-a", screened);
  events.OnSamplesStored(2, 1, 1);
  events.OnSamplesNotStored(4);
  events.OnRankReportRefused("job-1", "bad_summary");
  LiveMetrics::Snapshot running = metrics.Take(placed);
  ASSERT_EQ(running.jobs.count("job-1"), 1u);
  EXPECT_EQ(running.jobs["job-1"].labels.model, "resnet50");
  EXPECT_EQ(running.jobs["job-1"].labels.precision, "fp32");
  EXPECT_EQ(running.jobs["job-1"].ranks[0].node, "node-a");
  EXPECT_DOUBLE_EQ(*running.jobs["job-1"].ranks[0].images_per_second, 2.0);
  EXPECT_EQ(running.jobs["job-1"].ranks[0].gpu->seq, 1);
  EXPECT_EQ(running.counters.samples_ingested, 2);
  EXPECT_EQ(running.counters.gpu_samples_ingested, 1);
  EXPECT_EQ(running.counters.duplicates, 1);
  EXPECT_EQ(running.counters.ingest_errors["stale_attempt"], 3);
  EXPECT_EQ(running.counters.ingest_errors["store_failed"], 4);
  EXPECT_EQ(running.counters.rank_reports_rejected["bad_summary"], 1);

  events.OnRankEnded(job, 0);
  EXPECT_FALSE(metrics.Take(placed).jobs["job-1"].ranks[0].gpu.has_value());
  job.state = JobState::kSucceeded;
  job.summaries[0] = RankSummary{0, 4, 8, 2.0, 0.25};
  job.history.push_back({JobState::kSucceeded, "done", placed + absl::Minutes(1)});
  events.OnStateChanged(job);
  LiveMetrics::Snapshot ended = metrics.Take(placed + absl::Minutes(11));
  ASSERT_EQ(ended.jobs.count("job-1"), 1u);
  EXPECT_TRUE(ended.jobs["job-1"].ended);
  EXPECT_DOUBLE_EQ(*ended.jobs["job-1"].images_per_second, 4.0);  // 8 images in 2 s
  // Retention counts from the transition's time, not from when the event was told.
  EXPECT_EQ(metrics.Take(placed + absl::Minutes(11) + absl::Seconds(1)).jobs.count("job-1"), 0u);
}

// An ended job's series are its own: it keeps no ranks through the retention (each Take
// copied them all: 8,192 GPUs of churned jobs over 10 minutes, docs/PERFORMANCE.md).
TEST(LiveMetrics, AnEndedJobKeepsNoRanks) {
  LiveMetrics live;
  live.JobStarted("job-1", {"resnet50", "amp", 256, 3});
  for (int rank = 0; rank < 3; ++rank) {
    live.RecordIteration("job-1", "dgx-1", Iteration(rank, 1, 0.5, 100));
    live.RecordGpuSample("job-1", "dgx-1", Reading(rank, 1, 300));
  }
  ASSERT_EQ(live.Take(absl::Now()).jobs.at("job-1").ranks.size(), 3u);
  live.JobEnded("job-1", 600.0, absl::Now());
  LiveMetrics::Snapshot ended = live.Take(absl::Now());
  EXPECT_TRUE(ended.jobs.at("job-1").ranks.empty());
  EXPECT_DOUBLE_EQ(*ended.jobs.at("job-1").images_per_second, 600.0);
}

// An upload's readings under one lock: each rank keeps its latest reading, as one by one.
TEST(LiveMetrics, RecordGpuSamplesEqualsRecordingEachInTurn) {
  LiveMetrics one_by_one;
  LiveMetrics batched;
  for (LiveMetrics* live : {&one_by_one, &batched}) {
    live->JobStarted("job-1", {"resnet50", "amp", 256, 2});
    live->RecordGpuSample("job-1", "dgx-1", Reading(1, 9, 100));
  }
  std::vector<GpuSample> readings = {Reading(0, 2, 200), Reading(0, 5, 500), Reading(0, 3, 300),
                                     Reading(1, 4, 400)};  // rank 1 has seq 9 already
  GpuSample unknown = Reading(0, 7, 700);
  unknown.job_id = "job-unknown";
  readings.push_back(unknown);
  for (const GpuSample& g : readings) one_by_one.RecordGpuSample(g.job_id, "dgx-1", g);
  batched.RecordGpuSamples("dgx-1", readings);
  LiveMetrics::Snapshot a = one_by_one.Take(absl::Now());
  LiveMetrics::Snapshot b = batched.Take(absl::Now());
  ASSERT_EQ(b.jobs.size(), 1u);
  for (int rank : {0, 1}) {
    EXPECT_EQ(a.jobs.at("job-1").ranks.at(rank).gpu->seq,
              b.jobs.at("job-1").ranks.at(rank).gpu->seq);
    EXPECT_EQ(a.jobs.at("job-1").ranks.at(rank).gpu->power_w,
              b.jobs.at("job-1").ranks.at(rank).gpu->power_w);
  }
  EXPECT_EQ(b.jobs.at("job-1").ranks.at(0).gpu->seq, 5);
  EXPECT_EQ(b.jobs.at("job-1").ranks.at(1).gpu->seq, 9);
}

TEST(MetricsExporter, NamesUnitsAndLabelsFollowPrometheusRules) {
  LiveMetrics live;
  live.JobStarted("job-7", {"resnet50", "amp", 256, 1});
  live.RecordIteration("job-7", "dgx-1", Iteration(0, 1, 0.5, 256));
  GpuSample g = Reading(0, 1, 350);
  g.job_id = "job-7";
  live.RecordGpuSample("job-7", "dgx-1", g);
  live.CountStored(10, 4, 1);
  live.CountIngestErrors("rank_not_on_agent", 3);
  live.CountIngestErrors("bad_time", 2);
  live.CountIngestErrors("bad_time", 1);
  live.CountRankReportRejected("bad_summary");
  live.CountRankReportRejected("bad_summary");
  FleetCounts fleet;
  fleet.queued = 2;
  fleet.running = 1;
  fleet.agents_connected = 1;
  fleet.nodes.push_back({"dgx-1", "cuda", 8, 1});

  std::string text = RenderMetrics(fleet, live.Take(absl::Now()));
  EXPECT_THAT(text, HasSubstr("# TYPE bench_jobs gauge"));
  EXPECT_THAT(text, HasSubstr("bench_jobs{state=\"queued\"} 2"));
  EXPECT_THAT(text, HasSubstr("bench_queue_length 2"));
  EXPECT_THAT(text, HasSubstr("bench_devices{node=\"dgx-1\",kind=\"cuda\"} 8"));
  EXPECT_THAT(text, HasSubstr("# TYPE bench_samples_ingested_total counter"));
  EXPECT_THAT(text, HasSubstr("bench_samples_ingested_total 10"));
  EXPECT_THAT(text, HasSubstr("bench_ingest_errors_total{reason=\"rank_not_on_agent\"} 3"));
  EXPECT_THAT(text, HasSubstr("bench_ingest_errors_total{reason=\"bad_time\"} 3"));
  EXPECT_THAT(text, HasSubstr("# TYPE bench_rank_reports_rejected_total counter"));
  EXPECT_THAT(text, HasSubstr("bench_rank_reports_rejected_total{reason=\"bad_summary\"} 2"));
  EXPECT_THAT(text, HasSubstr("bench_job_images_per_second{bench_job=\"job-7\",model=\"resnet50\","
                              "precision=\"amp\",batch_size=\"256\",devices=\"1\"} 512"));
  EXPECT_THAT(text, HasSubstr("bench_gpu_power_watts{node=\"dgx-1\",gpu=\"0\",uuid=\"GPU-fake-0\","
                              "bench_job=\"job-7\",rank=\"0\",model=\"resnet50\","
                              "precision=\"amp\"} 350"));
  EXPECT_THAT(text, HasSubstr("bench_gpu_sm_clock_hertz{"));
  EXPECT_THAT(text, HasSubstr("} 1980000000"));
  EXPECT_THAT(text, HasSubstr("bench_gpu_utilization_ratio{"));
  EXPECT_THAT(text, HasSubstr("} 0.97"));
  EXPECT_THAT(text, HasSubstr("# TYPE bench_gpu_energy_joules_total counter"));
  EXPECT_THAT(text, Not(ContainsRegex("[{,]job=")));  // `job` belongs to Prometheus
}

// A simulated job's series (issue 26) carry simulated="true", from the moment the manager
// says so; a real job's series never carry the label.
TEST(MetricsExporter, ASimulatedJobsSeriesSaySimulated) {
  LiveMetrics live;
  live.JobStarted("job-7", {"resnet50", "amp", 256, 1});
  live.JobStarted("job-8", {"resnet50", "amp", 256, 1});
  for (const char* id : {"job-7", "job-8"}) {
    live.RecordIteration(id, "dgx-1", Iteration(0, 1, 0.5, 256));
    GpuSample g = Reading(0, 1, 350);
    g.job_id = id;
    live.RecordGpuSample(id, "dgx-1", g);
  }
  Job job;
  job.id = "job-8";
  job.simulated = true;
  live.OnSimulated(job);
  std::string text = RenderMetrics({}, live.Take(absl::Now()));
  EXPECT_THAT(text, HasSubstr("bench_job_images_per_second{bench_job=\"job-7\",model=\"resnet50\","
                              "precision=\"amp\",batch_size=\"256\",devices=\"1\"} 512"));
  EXPECT_THAT(text, HasSubstr("bench_job_images_per_second{bench_job=\"job-8\",model=\"resnet50\","
                              "precision=\"amp\",batch_size=\"256\",devices=\"1\","
                              "simulated=\"true\"} 512"));
  EXPECT_THAT(text, HasSubstr("bench_gpu_power_watts{node=\"dgx-1\",gpu=\"0\",uuid=\"GPU-fake-0\","
                              "bench_job=\"job-8\",rank=\"0\",model=\"resnet50\","
                              "precision=\"amp\",simulated=\"true\"} 350"));
  EXPECT_THAT(text, Not(ContainsRegex("bench_job=\"job-7\"[^}]*simulated")));
}

}  // namespace
}  // namespace bench
