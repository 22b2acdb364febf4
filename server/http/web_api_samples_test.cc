// The web API over one job's iterations and one configuration's history: samples paged
// (every token walks each (rank, iteration) once) or downsampled (at most N points per
// rank, covering every stored iteration), logs as benchctl writes them, history with its
// baseline band and regressions.
#include <map>
#include <utility>

#include "server/http/web_api_test_fixture.h"

namespace bench::web_api_test {
namespace {

TEST_F(WebApiTest, SamplePagesWalkEveryIterationOnceInRankOrder) {
  Job job = StoreJob(1, "resnet50", JobState::kSucceeded, 2);
  StoreSamples(job, 2, 50);
  StartManager();
  for (const std::multimap<std::string, std::string>& base :
       std::vector<std::multimap<std::string, std::string>>{
           {{"page_size", "13"}}, {{"page_size", "1"}}, {{"page_size", "100"}}, {}}) {
    std::vector<std::pair<int, int>> seen;
    std::string token;
    for (int pages = 0; pages < 200; ++pages) {
      auto query = base;
      if (!token.empty()) query.insert({"page_token", token});
      HttpResponse response = Get("/api/v1/jobs/" + job.id + "/samples", query);
      ASSERT_EQ(response.status, 200) << response.body;
      Struct page = Parse(response.body);
      EXPECT_EQ(Field(Field(page, "job").struct_value(), "id").string_value(), job.id);
      for (const Value& s : Field(page, "samples").list_value().values()) {
        seen.push_back({static_cast<int>(s.struct_value().fields().at("rank").number_value()),
                        static_cast<int>(s.struct_value().fields().at("iteration").number_value())});
      }
      token = Field(page, "next_page_token").string_value();
      if (token.empty()) break;
    }
    std::vector<std::pair<int, int>> expected;
    for (int rank = 0; rank < 2; ++rank) {
      for (int it = 1; it <= 50; ++it) expected.push_back({rank, it});
    }
    EXPECT_EQ(seen, expected);
  }
  // One rank, from an iteration; a NaN loss is the string "NaN" as in benchctl's jsonl.
  Struct page = Parse(Get("/api/v1/jobs/" + job.id + "/samples",
                          {{"rank", "1"}, {"from_iteration", "3"}, {"page_size", "2"}})
                          .body);
  const auto& samples = Field(page, "samples").list_value();
  ASSERT_EQ(samples.values_size(), 2);
  EXPECT_EQ(samples.values(0).struct_value().fields().at("rank").number_value(), 1);
  EXPECT_EQ(samples.values(0).struct_value().fields().at("iteration").number_value(), 3);
  EXPECT_EQ(samples.values(0).struct_value().fields().at("loss").string_value(), "NaN");
  EXPECT_FALSE(Field(page, "next_page_token").string_value().empty());

  EXPECT_EQ(Get("/api/v1/jobs/" + job.id + "/samples", {{"page_size", "10001"}}).status, 400);
  EXPECT_EQ(Get("/api/v1/jobs/" + job.id + "/samples", {{"rank", "-1"}}).status, 400);
  EXPECT_EQ(Get("/api/v1/jobs/" + job.id + "/samples", {{"page_token", "abc"}}).status, 400);
}

TEST_F(WebApiTest, DownsampledSamplesHaveAtMostNPointsPerRankCoveringEveryIteration) {
  Job job = StoreJob(1, "resnet50", JobState::kSucceeded, 2);
  StoreSamples(job, 2, 95);
  Job queued = StoreJob(2, "resnet50", JobState::kQueued);
  StartManager();
  for (int n : {1, 7, 10, 95, 1000}) {
    HttpResponse response =
        Get("/api/v1/jobs/" + job.id + "/samples", {{"points", absl::StrCat(n)}});
    ASSERT_EQ(response.status, 200) << response.body;
    Struct answer = Parse(response.body);
    EXPECT_EQ(Field(answer, "points_per_rank").number_value(), n);
    std::map<int, std::vector<const Struct*>> by_rank;
    for (const Value& p : Field(answer, "points").list_value().values()) {
      by_rank[static_cast<int>(p.struct_value().fields().at("rank").number_value())].push_back(
          &p.struct_value());
    }
    ASSERT_EQ(by_rank.size(), 2u) << n;
    for (const auto& [rank, points] : by_rank) {
      EXPECT_LE(points.size(), static_cast<size_t>(n));
      EXPECT_EQ(points.size(), static_cast<size_t>(std::min(n, 95)));
      int next = 1;
      int64_t total = 0;
      for (const Struct* p : points) {  // consecutive, disjoint, in order
        EXPECT_EQ(p->fields().at("first_iteration").number_value(), next);
        next = static_cast<int>(p->fields().at("last_iteration").number_value()) + 1;
        int64_t count = 0;
        ASSERT_TRUE(absl::SimpleAtoi(p->fields().at("samples").string_value(), &count));
        total += count;
        // 2 images per 0.5 s step on this rank.
        EXPECT_DOUBLE_EQ(p->fields().at("images_per_second").number_value(), 4);
        EXPECT_DOUBLE_EQ(p->fields().at("step_time_s").number_value(), 0.5);
      }
      EXPECT_EQ(next, 96);
      EXPECT_EQ(total, 95);
    }
  }
  // The NaN loss of iteration 3 is counted apart, not averaged in.
  Struct one = Parse(Get("/api/v1/jobs/" + job.id + "/samples",
                         {{"points", "1"}, {"rank", "0"}, {"from_iteration", "2"}})
                         .body);
  ASSERT_EQ(Field(one, "points").list_value().values_size(), 1);
  const Struct& p = Field(one, "points").list_value().values(0).struct_value();
  EXPECT_EQ(p.fields().at("first_iteration").number_value(), 2);
  EXPECT_EQ(p.fields().at("nonfinite_losses").string_value(), "1");
  EXPECT_DOUBLE_EQ(p.fields().at("loss").number_value(), 1.0);
  EXPECT_FALSE(p.fields().at("warmup").bool_value());

  EXPECT_EQ(Get("/api/v1/jobs/" + job.id + "/samples", {{"points", "0"}}).status, 400);
  EXPECT_EQ(Get("/api/v1/jobs/" + job.id + "/samples", {{"points", "10"}, {"page_size", "5"}})
                .status,
            400);
  // A job never placed has no points.
  EXPECT_EQ(Field(Parse(Get("/api/v1/jobs/" + queued.id + "/samples", {{"points", "5"}}).body),
                  "points")
                .list_value()
                .values_size(),
            0);
}

// The step split (issue 26): a sample's figures the trainer wrote are in its JSON (0
// included) and one it did not write is absent (no data, never 0), paged and downsampled.
TEST_F(WebApiTest, SamplesCarryTheStepSplitOnlyWhereTheTrainerWroteIt) {
  Job job = StoreJob(1, "resnet50", JobState::kSucceeded, 1);
  std::vector<IterationSample> samples;
  for (int it = 1; it <= 4; ++it) {
    IterationSample s;
    s.job_id = job.id;
    s.attempt = 1;
    s.iteration = it;
    s.step_time_s = 0.5;
    s.images = 2;
    s.loss = 1.0;
    s.elapsed_s = 0.5 * it;
    if (it <= 2) {
      s.compute_time_s = 0.5;
      s.forward_backward_time_s = 0.375;
      s.allreduce_wait_time_s = 0.0;
      s.optimizer_time_s = 0.125;
    }
    samples.push_back(s);
  }
  ASSERT_TRUE(store_->AppendSamplesSync(samples).ok());
  StartManager();
  const char* const kSplit[] = {"compute_time_s", "forward_backward_time_s",
                                "allreduce_wait_time_s", "optimizer_time_s"};
  const std::map<std::string, double> expected = {{"compute_time_s", 0.5},
                                                  {"forward_backward_time_s", 0.375},
                                                  {"allreduce_wait_time_s", 0.0},
                                                  {"optimizer_time_s", 0.125}};

  HttpResponse response = Get("/api/v1/jobs/" + job.id + "/samples");
  ASSERT_EQ(response.status, 200) << response.body;
  Struct page = Parse(response.body);
  const auto& list = Field(page, "samples").list_value();
  ASSERT_EQ(list.values_size(), 4);
  for (int i = 0; i < 4; ++i) {
    const auto& fields = list.values(i).struct_value().fields();
    for (const char* name : kSplit) {
      if (i < 2) {
        ASSERT_TRUE(fields.count(name) > 0) << name << " " << response.body;
        EXPECT_EQ(fields.at(name).number_value(), expected.at(name)) << name;
      } else {
        EXPECT_FALSE(fields.count(name) > 0) << name << " " << response.body;
      }
    }
  }

  // Points of 2 iterations: the first averages its split, the second has none.
  Struct chart = Parse(Get("/api/v1/jobs/" + job.id + "/samples", {{"points", "2"}}).body);
  const auto& points = Field(chart, "points").list_value();
  ASSERT_EQ(points.values_size(), 2);
  for (const char* name : kSplit) {
    const auto& first = points.values(0).struct_value().fields();
    ASSERT_TRUE(first.count(name) > 0) << name;
    EXPECT_EQ(first.at(name).number_value(), expected.at(name)) << name;
    EXPECT_FALSE(points.values(1).struct_value().fields().count(name) > 0) << name;
  }
}

TEST_F(WebApiTest, LogsAreWhatBenchctlLogsWritesAsADownload) {
  Job job = StoreJob(1, "resnet50", JobState::kSucceeded, 2);
  StoreSamples(job, 2, 5);
  StartManager();
  for (report::LogFormat format :
       {report::LogFormat::kDllogger, report::LogFormat::kMllog, report::LogFormat::kJsonl}) {
    const std::optional<int> rank = report::JobLogWriter(format).RankOfInterest();
    absl::StatusOr<SamplesView> read = reads_->GetSamples(job.id, 0, rank);
    ASSERT_TRUE(read.ok());
    v1::JobStatus status;
    ToProto(read->view, &status);
    std::vector<v1::IterationSample> samples(read->samples.size());
    for (size_t i = 0; i < samples.size(); ++i) ToProto(read->samples[i], &samples[i]);

    HttpResponse response = Get("/api/v1/jobs/" + job.id + "/logs",
                                {{"format", report::LogFormatName(format)}});
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, report::RenderJobLog(format, status, samples));
    bool attachment = false;
    for (const auto& [name, value] : response.headers) {
      if (name == "Content-Disposition") {
        attachment = true;
        EXPECT_THAT(value, HasSubstr("attachment; filename=\"" + job.id + "."));
      }
    }
    EXPECT_TRUE(attachment);
  }
  EXPECT_THAT(Get("/api/v1/jobs/" + job.id + "/logs").body, HasSubstr("DLLL "));  // default
  HttpResponse bad = Get("/api/v1/jobs/" + job.id + "/logs", {{"format", "csv"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("format: "));
}

TEST_F(WebApiTest, HistoryListsOneConfigurationsSuccessesWithItsBaselineBand) {
  Job reference = StoreJob(1, "resnet50", JobState::kSucceeded, 1, 2.0);  // 4 images/s
  StoreJob(2, "resnet50", JobState::kSucceeded, 1, 4.0);                  // 2: regression
  StoreJob(3, "resnet50", JobState::kFailed, 1, 2.0);
  StoreJob(4, "resnet50", JobState::kSucceeded, 2, 2.0);                  // other devices
  StoreJob(5, "resnet18", JobState::kSucceeded, 1, 2.0);
  StoreBaseline(reference, 4);
  StartManager();
  HttpResponse response = Get("/api/v1/history", {{"model", "resnet50"}, {"devices", "1"},
                                                  {"precision", "fp32"}, {"batch_size", "2"}});
  ASSERT_EQ(response.status, 200) << response.body;
  Struct history = Parse(response.body);
  const auto& points = Field(history, "points").list_value();
  ASSERT_EQ(points.values_size(), 2);
  const Struct& first = points.values(0).struct_value();
  const Struct& second = points.values(1).struct_value();
  EXPECT_EQ(first.fields().at("job_id").string_value(), reference.id);
  EXPECT_DOUBLE_EQ(first.fields().at("images_per_second").number_value(), 4);
  EXPECT_FALSE(first.fields().at("regression").bool_value());
  EXPECT_EQ(first.fields().at("submitted_unix_ms").string_value(),
            absl::StrCat(absl::ToUnixMillis(kEpoch + absl::Seconds(1))));
  EXPECT_EQ(first.fields().at("finished_unix_ms").string_value(),
            absl::StrCat(absl::ToUnixMillis(kEpoch + absl::Milliseconds(1500))));
  EXPECT_TRUE(second.fields().at("regression").bool_value());
  EXPECT_EQ(second.fields().at("baseline").struct_value().fields().at("verdict").string_value(),
            "BASELINE_VERDICT_BELOW");
  const auto& bands = Field(history, "baselines").list_value();
  ASSERT_EQ(bands.values_size(), 1);
  EXPECT_DOUBLE_EQ(
      bands.values(0).struct_value().fields().at("lower_images_per_second").number_value(), 3.8);
  EXPECT_DOUBLE_EQ(
      bands.values(0).struct_value().fields().at("upper_images_per_second").number_value(), 4.2);
  // Without the devices filter the 2-device job joins (its own configuration, no band).
  EXPECT_EQ(Field(Parse(Get("/api/v1/history", {{"model", "resnet50"}}).body), "points")
                .list_value()
                .values_size(),
            3);
}

TEST_F(WebApiTest, HistoryGroupsItsPointsByConfigurationEachWithItsBaselineBand) {
  Job reference = StoreJob(1, "resnet50", JobState::kSucceeded, 1, 2.0);
  StoreJob(2, "resnet50", JobState::kSucceeded, 2, 2.0);  // another configuration: 2 devices
  StoreJob(3, "resnet50", JobState::kSucceeded, 1, 4.0);
  StoreJob(4, "resnet50", JobState::kFailed, 1, 2.0);  // no point
  StoreBaseline(reference, 4);
  StartManager();
  HttpResponse response = Get("/api/v1/history", {{"model", "resnet50"}});
  ASSERT_EQ(response.status, 200) << response.body;
  const Struct history = Parse(response.body);
  const auto& groups = Field(history, "configurations").list_value();
  ASSERT_EQ(groups.values_size(), 2) << response.body;  // in the order of their first point
  const Struct& one = groups.values(0).struct_value();
  const Struct& two = groups.values(1).struct_value();
  EXPECT_EQ(one.fields().at("devices").number_value(), 1);
  EXPECT_EQ(one.fields().at("precision").string_value(), "PRECISION_FP32");
  EXPECT_EQ(one.fields().at("device_kind").string_value(), "cpu");
  const auto& ids = one.fields().at("job_ids").list_value();
  ASSERT_EQ(ids.values_size(), 2);
  EXPECT_EQ(ids.values(0).string_value(), reference.id);
  EXPECT_EQ(ids.values(1).string_value(), "job-100003");
  const Struct& band = one.fields().at("baseline").struct_value();
  EXPECT_EQ(band.fields().at("job_id").string_value(), reference.id);
  EXPECT_DOUBLE_EQ(band.fields().at("lower_images_per_second").number_value(), 3.8);
  EXPECT_EQ(two.fields().at("devices").number_value(), 2);
  EXPECT_EQ(two.fields().at("job_ids").list_value().values(0).string_value(), "job-100002");
  EXPECT_EQ(two.fields().at("baseline").kind_case(), Value::kNullValue);
}

}  // namespace
}  // namespace bench::web_api_test
