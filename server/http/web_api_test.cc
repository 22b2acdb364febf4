// The web API's handlers as plain functions over a real store and job manager: job
// filters and paging (every page token walks each job once), errors, and the answers
// benchctl prints the same way (results, compare) against report/. Samples, logs and
// history: web_api_samples_test.cc.
#include "server/http/web_api_test_fixture.h"

#include <future>
#include "httpd/http_test_client.h"

#include "report/diagnosis_view.h"
#include "report/grid_view.h"
#include "report/job_figures.h"

namespace bench::web_api_test {
namespace {

using ::testing::Not;

// benchctl results' request for the query the page sends (its model and its team=a label).
v1::ResultsRequest ResultsRequestOf(const std::multimap<std::string, std::string>& query) {
  v1::ResultsRequest request;
  if (query.count("model")) request.set_model(query.find("model")->second);
  if (query.count("label")) (*request.mutable_labels())["team"] = "a";
  return request;
}

TEST_F(WebApiTest, JobsAreNewestFirstAndTheTokensWalkEveryJobOnce) {
  std::vector<std::string> expected;
  for (int seq = 1; seq <= 25; ++seq) {
    expected.insert(expected.begin(), StoreJob(seq, "resnet50", JobState::kSucceeded).id);
  }
  StartManager();
  EXPECT_EQ(WalkJobs({{"page_size", "7"}}), expected);
  EXPECT_EQ(WalkJobs({{"page_size", "25"}}), expected);
  EXPECT_EQ(WalkJobs({}), expected);  // default page size 100: one page

  HttpResponse first = Get("/api/v1/jobs", {{"page_size", "1"}});
  EXPECT_EQ(first.content_type, "application/json");
  Struct page = Parse(first.body);
  const Struct& job = Field(page, "jobs").list_value().values(0).struct_value();
  // The proto JSON convention: int64 as strings, enums by name, every field printed.
  EXPECT_EQ(job.fields().at("created_unix_ms").string_value(),
            absl::StrCat(absl::ToUnixMillis(kEpoch + absl::Seconds(25))));
  EXPECT_EQ(job.fields().at("state").string_value(), "JOB_STATE_SUCCEEDED");
  EXPECT_EQ(job.fields().at("requeues").number_value(), 0);
}

TEST_F(WebApiTest, JobsFilterByStateModelLabelTimeAndName) {
  StoreJob(1, "resnet50", JobState::kSucceeded, 1, 2.0, {{"team", "a"}});
  StoreJob(2, "resnet50", JobState::kFailed, 1, 2.0, {{"team", "b"}});
  StoreJob(3, "resnet18", JobState::kSucceeded, 1, 2.0, {{"team", "a"}});
  StoreJob(4, "resnet50", JobState::kCancelled);
  StoreJob(12, "resnet50", JobState::kSucceeded, 1, 2.0, {{"team", "a"}, {"run", "x"}});
  StartManager();
  auto ids = [](std::vector<int> seqs) {
    std::vector<std::string> out;
    for (int seq : seqs) out.push_back(absl::StrCat("job-", 100000 + seq));
    return out;
  };
  EXPECT_EQ(WalkJobs({{"state", "SUCCEEDED"}, {"state", "failed"}, {"page_size", "1"}}),
            ids({12, 3, 2, 1}));
  EXPECT_EQ(WalkJobs({{"model", "resnet50"}, {"label", "team=a"}}), ids({12, 1}));
  EXPECT_EQ(WalkJobs({{"label", "team=a"}, {"label", "run=x"}}), ids({12}));
  const int64_t ms2 = absl::ToUnixMillis(kEpoch + absl::Seconds(2));
  const int64_t ms4 = absl::ToUnixMillis(kEpoch + absl::Seconds(4));
  EXPECT_EQ(WalkJobs({{"since", absl::StrCat(ms2)}, {"until", absl::StrCat(ms4)}}), ids({3, 2}));
  EXPECT_EQ(WalkJobs({{"name", "run 1"}}), ids({12, 1}));
  EXPECT_TRUE(WalkJobs({{"model", "vgg"}}).empty());
}

TEST_F(WebApiTest, BadParametersAre400NamingTheParameter) {
  StoreJob(1, "resnet50", JobState::kSucceeded);
  StartManager();
  const std::vector<std::pair<std::multimap<std::string, std::string>, std::string>> cases = {
      {{{"page_size", "0"}}, "page_size"},   {{{"page_size", "1001"}}, "page_size"},
      {{{"page_size", "x"}}, "page_size"},   {{{"state", "DONE"}}, "state"},
      {{{"label", "team"}}, "label"},        {{{"since", "yesterday"}}, "since"},
      {{{"page_token", "%%%"}}, "page_token"}, {{{"sate", "QUEUED"}}, "sate"},
  };
  for (const auto& [query, name] : cases) {
    HttpResponse response = Get("/api/v1/jobs", query);
    EXPECT_EQ(response.status, 400) << name;
    Struct error = Parse(response.body);
    const Struct& e = Field(error, "error").struct_value();
    EXPECT_EQ(e.fields().at("code").string_value(), "INVALID_ARGUMENT");
    EXPECT_THAT(e.fields().at("message").string_value(), HasSubstr(name + ": "));
  }
  EXPECT_EQ(Get("/api/v1/results", {{"until", "-1"}}).status, 400);
  EXPECT_EQ(Get("/api/v1/variability", {{"threshold_pct", "-3"}}).status, 400);
  EXPECT_EQ(Get("/api/v1/variability", {{"threshold_pct", "many"}}).status, 400);
  EXPECT_EQ(Get("/api/v1/compare", {{"a", "job-100001"}}).status, 400);
  EXPECT_EQ(Get("/api/v1/history").status, 400);
  EXPECT_EQ(Get("/api/v1/history", {{"model", "resnet50"}, {"precision", "fp8"}}).status, 400);
  EXPECT_EQ(Get("/api/v1/agents", {{"x", "1"}}).status, 400);
  // An empty value is an absent parameter.
  EXPECT_EQ(Get("/api/v1/jobs", {{"page_size", ""}, {"state", ""}, {"model", ""}}).status, 200);
}

TEST_F(WebApiTest, UnknownJobsAndPathsAre404Json) {
  StoreJob(1, "resnet50", JobState::kSucceeded);
  StartManager();
  for (const std::string path :
       {"/api/v1/jobs/job-404", "/api/v1/jobs/job-404/samples", "/api/v1/jobs/job-404/logs",
        "/api/v1/nothing", "/api/v1/jobs/job-100001/other", "/api/v1/"}) {
    HttpResponse response = Get(path);
    EXPECT_EQ(response.status, 404) << path;
    EXPECT_EQ(Field(Field(Parse(response.body), "error").struct_value(), "code").string_value(),
              "NOT_FOUND")
        << path;
  }
  EXPECT_EQ(Get("/api/v1/compare", {{"a", "job-100001"}, {"b", "job-404"}}).status, 404);
  HttpResponse job = Get("/api/v1/jobs/job-100001");
  EXPECT_EQ(job.status, 200);
  EXPECT_EQ(Field(Parse(job.body), "id").string_value(), "job-100001");
}

TEST_F(WebApiTest, ResultsAreTheBytesBenchctlPrints) {
  StoreResultsJobs();
  StartManager();
  for (const std::multimap<std::string, std::string>& query :
       std::vector<std::multimap<std::string, std::string>>{
           {}, {{"model", "resnet50"}}, {{"label", "team=a"}}, {{"model", "vgg"}}}) {
    // benchctl: ResultsRequest → the Results RPC's cells → RenderCellsJson of the matches.
    const v1::ResultsResponse response = ResultsRpc(ResultsRequestOf(query));
    std::vector<v1::ResultCell> cells(response.cells().begin(), response.cells().end());
    HttpResponse got = Get("/api/v1/results", query);
    EXPECT_EQ(got.status, 200);
    EXPECT_EQ(got.body, report::RenderCellsJson(cells));
  }
  EXPECT_EQ(Get("/api/v1/results", {{"model", "vgg"}}).body, "[]\n");
}

// A simulated job (bench-sim-train, issue 26): its JSON says "simulated": true; it stays out
// of the real results and has cells of its own with simulated=true; a bad value is refused.
TEST_F(WebApiTest, SimulatedJobsAreMarkedAndNeverInRealResults) {
  StoreJob(1, "resnet50", JobState::kSucceeded, 1, 2.0);
  Job simulated = StoreJob(2, "resnet50", JobState::kSucceeded, 1, 1.0);
  simulated.simulated = true;
  ASSERT_TRUE(store_->UpdateJob(simulated).ok());
  StartManager();

  Struct job = Parse(Get("/api/v1/jobs/" + simulated.id).body);
  EXPECT_TRUE(job.fields().at("simulated").bool_value());
  EXPECT_FALSE(Parse(Get("/api/v1/jobs/job-100001").body).fields().at("simulated").bool_value());

  const std::string real = Get("/api/v1/results").body;
  EXPECT_THAT(real, HasSubstr("\"job_ids\":[\"job-100001\"]"));
  EXPECT_THAT(real, Not(HasSubstr(simulated.id)));
  EXPECT_THAT(real, Not(HasSubstr("\"simulated\":true")));
  const std::string sim = Get("/api/v1/results", {{"simulated", "true"}}).body;
  EXPECT_THAT(sim, HasSubstr(absl::StrCat("\"job_ids\":[\"", simulated.id, "\"]")));
  EXPECT_THAT(sim, HasSubstr("\"simulated\":true"));
  EXPECT_THAT(sim, Not(HasSubstr("job-100001")));
  EXPECT_THAT(Get("/api/v1/results/grids", {{"simulated", "true"}}).body, HasSubstr("simulated"));
  HttpResponse bad = Get("/api/v1/results", {{"simulated", "yes"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("simulated: expected true or false"));
}

TEST_F(WebApiTest, ResultsWithoutJobIdsDifferOnlyInTheEmptiedIds) {
  StoreJob(1, "resnet50", JobState::kSucceeded, 1, 2.0);
  StoreJob(2, "resnet50", JobState::kSucceeded, 1, 4.0);
  StartManager();
  const v1::ResultsResponse response = ResultsRpc(v1::ResultsRequest());
  ASSERT_EQ(response.cells_size(), 1);
  ASSERT_EQ(response.cells(0).job_ids_size(), 2);
  std::vector<v1::ResultCell> cells(response.cells().begin(), response.cells().end());
  cells[0].clear_job_ids();
  HttpResponse got = Get("/api/v1/results", {{"job_ids", "false"}});
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, report::RenderCellsJson(cells));
  EXPECT_NE(got.body.find("\"job_ids\":[]"), std::string::npos) << got.body;
  EXPECT_NE(got.body, Get("/api/v1/results", {}).body);
  EXPECT_EQ(Get("/api/v1/results", {{"job_ids", "true"}}).body, Get("/api/v1/results", {}).body);
  HttpResponse bad = Get("/api/v1/results", {{"job_ids", "no"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("job_ids: expected true or false"), std::string::npos) << bad.body;
}

TEST_F(WebApiTest, ResultsGridsAreTheGridsBenchctlPrintsWithTheirFigures) {
  StoreResultsJobs();
  StartManager();
  for (const std::multimap<std::string, std::string>& query :
       std::vector<std::multimap<std::string, std::string>>{
           {}, {{"model", "resnet50"}}, {{"label", "team=a"}}, {{"metric", "power"}}}) {
    // benchctl results [--metric M]: the Results RPC's cells → BuildGrids of the matches.
    const v1::ResultsRequest request = ResultsRequestOf(query);
    const report::GridMetric metric =
        query.count("metric") ? report::GridMetric::kPower : report::GridMetric::kImagesPerSecond;
    v1::ResultsResponse response = ResultsRpc(request);
    for (v1::ResultCell& cell : *response.mutable_cells()) cell.clear_job_ids();
    HttpResponse got = Get("/api/v1/results/grids", query);
    EXPECT_EQ(got.status, 200);
    EXPECT_EQ(got.content_type, "application/json");
    EXPECT_EQ(got.body, report::RenderResultsGridsJson(request, response, metric));
  }
  // A cell's text is the text table's, beside its figures.
  const Struct view = Parse(Get("/api/v1/results/grids", {{"model", "resnet50"}}).body);
  ASSERT_EQ(Field(view, "grids").list_value().values_size(), 1);
  const Struct& grid = Field(view, "grids").list_value().values(0).struct_value();
  ASSERT_GE(grid.fields().at("tables").list_value().values_size(), 1);
  const Struct& table = grid.fields().at("tables").list_value().values(0).struct_value();
  const Struct& cell = table.fields()
                           .at("rows")
                           .list_value()
                           .values(0)
                           .struct_value()
                           .fields()
                           .at("cells")
                           .list_value()
                           .values(0)
                           .struct_value();
  const std::string text = cell.fields().at("text").string_value();
  EXPECT_THAT(text, HasSubstr("n=2"));
  const v1::ResultsResponse all = ResultsRpc(v1::ResultsRequest());
  EXPECT_THAT(report::RenderGridsTable(
                  report::BuildGrids(report::CellsMatching(v1::ResultsRequest(), all))),
              HasSubstr(text));
  EXPECT_GT(cell.fields().at("value").number_value(), 0);
  EXPECT_EQ(Get("/api/v1/results/grids", {{"model", "vgg"}}).body,
            "{\"metric\": \"images_per_second\", \"grids\": [], \"footnote\": \"\"}\n");
  HttpResponse bad = Get("/api/v1/results/grids", {{"metric", "joules"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("metric: unknown metric \\\"joules\\\""));
  EXPECT_EQ(Get("/api/v1/results/grids", {{"job_ids", "false"}}).status, 400);
  EXPECT_EQ(Get("/api/v1/results/grids/more").status, 404);
}

TEST_F(WebApiTest, JobTextIsDataVsComputeAsBenchctlStatusWordsIt) {
  Job plain = StoreJob(1, "resnet50", JobState::kSucceeded);
  Job job = plain;  // the same run with --data-vs-compute
  job.seq = 2;
  job.id = "job-100002";
  job.spec.data_vs_compute = true;
  job.summaries[0].synthetic_images_per_second = 8.0;  // its data: 8 images in 2 s
  ASSERT_TRUE(store_->InsertJob(job).ok());
  ASSERT_TRUE(store_->UpdateJob(job).ok());
  StartManager();
  v1::JobStatus status;
  ToProto(*manager_->Get(job.id), &status);
  ASSERT_TRUE(status.spec().data_vs_compute());
  HttpResponse got = Get(absl::StrCat("/api/v1/jobs/", job.id, "/text"));
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, report::JobFiguresJson(status));
  EXPECT_EQ(Field(Parse(got.body), "vs_compute").string_value(),
            "0.50 of compute: 4.0 images/s on its data, 8.0 on synthetic data");
  EXPECT_EQ(Get(absl::StrCat("/api/v1/jobs/", plain.id, "/text")).body,
            "{\"vs_compute\": \"\", \"diagnosis\": \"\"}\n");
  EXPECT_EQ(Get("/api/v1/jobs/job-404/text").status, 404);
  EXPECT_EQ(Get(absl::StrCat("/api/v1/jobs/", job.id, "/text"), {{"x", "1"}}).status, 400);
}

// A job's diagnosis: in its JSON (the proto's mapping) and as benchctl status's text.
TEST_F(WebApiTest, AJobsDiagnosisIsInItsJsonAndItsText) {
  Job job = StoreJob(1, "resnet50", JobState::kSucceeded);
  std::vector<IterationSample> samples;
  for (int i = 1; i <= 6; ++i) {
    samples.push_back({job.id, 1, 0, i, 0.25, 8, 1.0, 0.001, 0.25 * i, i == 1, 0});
  }
  ASSERT_TRUE(store_->AppendSamplesSync(samples).ok());
  std::promise<absl::StatusOr<JobDiagnosis>> done;
  ASSERT_TRUE(store_->DiagnoseJobAsync(
      JobInputsOf(job), 1, [&](absl::StatusOr<JobDiagnosis> d) { done.set_value(std::move(d)); }));
  ASSERT_TRUE(done.get_future().get().ok());
  StartManager();
  v1::JobStatus status;
  ToProto(*manager_->Get(job.id), &status);
  ASSERT_TRUE(status.has_diagnosis());
  EXPECT_TRUE(status.diagnosis().available());
  HttpResponse text = Get(absl::StrCat("/api/v1/jobs/", job.id, "/text"));
  EXPECT_EQ(text.body, report::JobFiguresJson(status));
  EXPECT_EQ(Field(Parse(text.body), "diagnosis").string_value(),
            report::DiagnosisText(status.diagnosis()));
  EXPECT_THAT(Field(Parse(text.body), "diagnosis").string_value(), HasSubstr("\nchecks: "));
  const Struct json = Parse(Get(absl::StrCat("/api/v1/jobs/", job.id)).body);
  const Struct& diagnosis = Field(json, "diagnosis").struct_value();
  EXPECT_TRUE(diagnosis.fields().at("available").bool_value());
  EXPECT_GT(diagnosis.fields().at("checks").list_value().values_size(), 0);
}

// results?strict=1 leaves out the runs with a failing check; a bad value is refused.
TEST_F(WebApiTest, ResultsStrictLeavesOutRunsWithFailingChecks) {
  StoreJob(1, "resnet50", JobState::kSucceeded, 2);
  // Two ranks, only rank 0 stored its iterations: same_iterations fails.
  Job failing = StoreJob(2, "resnet50", JobState::kSucceeded, 2);
  std::vector<IterationSample> samples;
  for (int i = 1; i <= 6; ++i) {
    samples.push_back({failing.id, 1, 0, i, 0.25, 8, 1.0, 0.001, 0.25 * i, i == 1, 0});
  }
  ASSERT_TRUE(store_->AppendSamplesSync(samples).ok());
  std::promise<absl::StatusOr<JobDiagnosis>> done;
  ASSERT_TRUE(store_->DiagnoseJobAsync(
      JobInputsOf(failing), 1,
      [&](absl::StatusOr<JobDiagnosis> d) { done.set_value(std::move(d)); }));
  absl::StatusOr<JobDiagnosis> diagnosis = done.get_future().get();
  ASSERT_TRUE(diagnosis.ok()) << diagnosis.status();
  ASSERT_GT(diagnosis->FailingChecks(), 0);
  StartManager();
  EXPECT_THAT(Get("/api/v1/results").body, HasSubstr("\"job-100002\""));
  EXPECT_THAT(Get("/api/v1/results").body, HasSubstr("\"failing_check_runs\":1"));
  EXPECT_THAT(Get("/api/v1/results", {{"strict", "1"}}).body, Not(HasSubstr("job-100002")));
  EXPECT_THAT(Get("/api/v1/results/grids").body, HasSubstr("! 1 run with failing checks"));
  EXPECT_EQ(Get("/api/v1/results", {{"strict", "1"}}).status, 200);
  EXPECT_EQ(Get("/api/v1/results/grids", {{"strict", "true"}}).status, 200);
  HttpResponse bad = Get("/api/v1/results", {{"strict", "yes"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("strict: "));
  EXPECT_THAT(Get("/api/v1/results", {{"strict", "1"}}).body, HasSubstr("\"job-100001\""));
}

TEST_F(WebApiTest, CompareIsBenchctlsComparisonJson) {
  Job a = StoreJob(1, "resnet50", JobState::kSucceeded, 1, 2.0);
  Job b = StoreJob(2, "resnet50", JobState::kSucceeded, 1, 4.0);
  StartManager();
  v1::JobStatus pa;
  v1::JobStatus pb;
  ToProto(*manager_->Get(a.id), &pa);
  ToProto(*manager_->Get(b.id), &pb);
  HttpResponse got = Get("/api/v1/compare", {{"a", a.id}, {"b", b.id}});
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, report::ComparisonJson(pa, pb));
  EXPECT_DOUBLE_EQ(Field(Parse(got.body), "throughput_ratio").number_value(), 0.5);
}

TEST_F(WebApiTest, AgentsQueueBaselinesAndVariabilityAreTheResponseMessages) {
  Job job = StoreJob(1, "resnet50", JobState::kSucceeded);
  StoreJob(2, "resnet50", JobState::kQueued);
  StoreBaseline(job, 4);
  StartManager();
  EXPECT_EQ(Field(Parse(Get("/api/v1/agents").body), "agents").list_value().values_size(), 0);
  const Struct queue = Parse(Get("/api/v1/queue").body);
  ASSERT_EQ(Field(queue, "jobs").list_value().values_size(), 1);
  const Struct baselines = Parse(Get("/api/v1/baselines").body);
  ASSERT_EQ(Field(baselines, "baselines").list_value().values_size(), 1);
  EXPECT_EQ(Field(baselines, "baselines").list_value().values(0).struct_value().fields().at(
                "job_id").string_value(),
            job.id);
  const Struct variability = Parse(Get("/api/v1/variability", {{"threshold_pct", "7"}}).body);
  EXPECT_EQ(Field(variability, "threshold_pct").number_value(), 7);
}

TEST_F(WebApiTest, RegisteredOnTheWebPortItAnswersOverHttp) {
  StoreJob(1, "resnet50", JobState::kSucceeded, 1, 2.0, {{"team", "a"}});
  StoreJob(2, "resnet50", JobState::kSucceeded, 1, 2.0, {{"team", "b"}});
  StartManager();
  HttpServer http;
  RegisterWebApi(http, manager_.get(), reads_.get(), store_.get());
  absl::StatusOr<int> port = http.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();
  // Percent-encoded query values are decoded before the handlers see them.
  const std::string jobs = http_test::Get(*port, "/api/v1/jobs?label=team%3Da&page_size=5");
  EXPECT_THAT(jobs, ::testing::StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(jobs, HasSubstr("application/json"));
  const std::string body = jobs.substr(jobs.find("\r\n\r\n") + 4);
  Struct page = Parse(body);
  ASSERT_EQ(Field(page, "jobs").list_value().values_size(), 1);
  EXPECT_EQ(Field(page, "jobs").list_value().values(0).struct_value().fields().at("id").string_value(),
            "job-100001");
  EXPECT_THAT(http_test::Get(*port, "/api/v1/nothing"), ::testing::StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(http_test::Get(*port, "/api/v1/jobs?page_size=0"),
              ::testing::StartsWith("HTTP/1.1 400"));
  http.Stop();
}

}  // namespace
}  // namespace bench::web_api_test
