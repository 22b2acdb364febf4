// The web API's routing, its shared helpers (web_api_internal.h) and the handlers of
// lists and single answers; samples, logs and history are in web_api_samples.cc.
#include "server/http/web_api.h"

#include <iterator>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "benchfleet/v1/controller.pb.h"
#include "report/compare.h"
#include "report/grid.h"
#include "report/grid_view.h"
#include "report/job_figures.h"
#include "report/json_output.h"
#include "server/http/web_api_internal.h"
#include "server/rpc/proto_convert.h"

namespace bench {
namespace web_api {

absl::Status CheckParams(const HttpRequest& request, std::initializer_list<const char*> allowed) {
  for (const auto& [name, value] : request.query) {
    bool known = false;
    for (const char* a : allowed) known = known || name == a;
    if (known) continue;
    if (allowed.size() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": unknown parameter (this path takes none)"));
    }
    return absl::InvalidArgumentError(absl::StrCat(name, ": unknown parameter (expected ",
                                                   absl::StrJoin(allowed, ", "), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<int64_t>> IntParam(const HttpRequest& request, const char* name,
                                                int64_t min, int64_t max) {
  std::optional<std::string> text = request.Query(name);
  if (!text) return std::optional<int64_t>();
  int64_t value = 0;
  if (!absl::SimpleAtoi(*text, &value) || value < min || value > max) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": expected an integer from ", min,
                                                   " to ", max, ", got \"", *text, "\""));
  }
  return std::optional<int64_t>(value);
}

std::string EncodeToken(absl::string_view kind, absl::string_view value) {
  return absl::WebSafeBase64Escape(absl::StrCat(kind, ":", value));
}

absl::StatusOr<std::string> DecodeToken(absl::string_view kind, absl::string_view token) {
  std::string decoded;
  absl::string_view text;
  if (absl::WebSafeBase64Unescape(token, &decoded)) text = decoded;
  if (!absl::ConsumePrefix(&text, kind) || !absl::ConsumePrefix(&text, ":")) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token: \"", token, "\" is not a page token of this list"));
  }
  return std::string(text);
}

std::string WithField(std::string object, absl::string_view key, absl::string_view value_json) {
  const bool newline = !object.empty() && object.back() == '\n';
  if (newline) object.pop_back();
  object.pop_back();  // '}'
  absl::StrAppend(&object, object.back() == '{' ? "" : ",", report::JsonQuote(key), ":",
                  value_json, "}", newline ? "\n" : "");
  return object;
}

HttpResponse JsonOk(std::string body) {
  HttpResponse response;
  response.content_type = "application/json";
  response.body = std::move(body);
  response.headers.push_back({"Cache-Control", "no-store"});
  return response;
}

HttpResponse JsonError(const absl::Status& status) {
  return JsonErrorResponse(status);  // it carries Cache-Control: no-store already
}

std::string JobJson(const JobView& view) {
  benchfleet::v1::JobStatus status;
  ToProto(view, &status);
  std::string json = report::ToJson(status);
  json.pop_back();
  return json;
}

}  // namespace web_api

namespace {

namespace v1 = benchfleet::v1;
using web_api::CheckParams;
using web_api::IntParam;
using web_api::JsonError;
using web_api::JobJson;
using web_api::JsonOk;

// Jobs list filters (docs/web-api.md).
struct JobFilter {
  std::set<JobState> states;  // empty: any
  std::string model;
  std::map<std::string, std::string> labels;
  absl::Time since = absl::InfinitePast();
  absl::Time until = absl::InfiniteFuture();
  std::string name;  // substring
  bool Matches(const Job& job) const {
    if (!states.empty() && states.count(job.state) == 0) return false;
    if (!model.empty() && job.spec.model != model) return false;
    if (job.created < since || job.created >= until) return false;
    if (!name.empty() && !absl::StrContains(job.spec.name, name)) return false;
    for (const auto& [key, value] : labels) {
      auto it = job.spec.labels.find(key);
      if (it == job.spec.labels.end() || it->second != value) return false;
    }
    return true;
  }
};

absl::StatusOr<std::map<std::string, std::string>> LabelParams(const HttpRequest& request) {
  std::map<std::string, std::string> labels;
  auto [begin, end] = request.query.equal_range("label");
  for (auto it = begin; it != end; ++it) {
    std::pair<std::string, std::string> kv = absl::StrSplit(it->second, absl::MaxSplits('=', 1));
    if (kv.first.empty() || !absl::StrContains(it->second, '=')) {
      return absl::InvalidArgumentError(
          absl::StrCat("label: expected key=value, got \"", it->second, "\""));
    }
    labels[kv.first] = kv.second;
  }
  return labels;
}

// since / until in unix milliseconds (0: no bound, as ResultsRequest).
absl::Status TimeParams(const HttpRequest& request, int64_t* since_ms, int64_t* until_ms) {
  absl::StatusOr<std::optional<int64_t>> since = IntParam(request, "since", 0, INT64_MAX);
  if (!since.ok()) return since.status();
  absl::StatusOr<std::optional<int64_t>> until = IntParam(request, "until", 0, INT64_MAX);
  if (!until.ok()) return until.status();
  *since_ms = since->value_or(0);
  *until_ms = until->value_or(0);
  return absl::OkStatus();
}

absl::StatusOr<JobFilter> JobFilterOf(const HttpRequest& request) {
  JobFilter filter;
  auto [begin, end] = request.query.equal_range("state");
  for (auto it = begin; it != end; ++it) {
    const std::string name = absl::AsciiStrToUpper(it->second);
    bool found = false;
    for (JobState state : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded,
                           JobState::kFailed, JobState::kCancelled}) {
      if (name == JobStateText(state)) {
        filter.states.insert(state);
        found = true;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat(
          "state: unknown job state \"", it->second,
          "\" (expected QUEUED, RUNNING, SUCCEEDED, FAILED or CANCELLED)"));
    }
  }
  filter.model = request.Query("model").value_or("");
  filter.name = request.Query("name").value_or("");
  absl::StatusOr<std::map<std::string, std::string>> labels = LabelParams(request);
  if (!labels.ok()) return labels.status();
  filter.labels = std::move(*labels);
  int64_t since_ms = 0;
  int64_t until_ms = 0;
  if (absl::Status s = TimeParams(request, &since_ms, &until_ms); !s.ok()) return s;
  if (since_ms > 0) filter.since = absl::FromUnixMillis(since_ms);
  if (until_ms > 0) filter.until = absl::FromUnixMillis(until_ms);
  return filter;
}

// The filters of /results and /results/grids, as benchctl's ResultsRequest.
absl::StatusOr<v1::ResultsRequest> ResultsRequestOf(const HttpRequest& request) {
  v1::ResultsRequest proto;
  proto.set_model(request.Query("model").value_or(""));
  proto.set_gpu_model(request.Query("gpu_model").value_or(""));
  proto.set_node(request.Query("node").value_or(""));
  int64_t since_ms = 0;
  int64_t until_ms = 0;
  if (absl::Status s = TimeParams(request, &since_ms, &until_ms); !s.ok()) return s;
  proto.set_since_unix_ms(since_ms);
  proto.set_until_unix_ms(until_ms);
  absl::StatusOr<std::map<std::string, std::string>> labels = LabelParams(request);
  if (!labels.ok()) return labels.status();
  for (const auto& [key, value] : *labels) (*proto.mutable_labels())[key] = value;
  // simulated=true: the simulated jobs' cells (bench-sim-train, issue 26) instead of the
  // real ones; the two are never mixed.
  const std::string simulated = request.Query("simulated").value_or("false");
  if (simulated != "true" && simulated != "false") {
    return absl::InvalidArgumentError(
        absl::StrCat("simulated: expected true or false, got \"", simulated.substr(0, 32), "\""));
  }
  proto.set_simulated(simulated == "true");
  // strict=1 (or true): without the runs whose diagnosis has a failing check.
  const std::string strict = request.Query("strict").value_or("");
  if (!strict.empty() && strict != "1" && strict != "0" && strict != "true" && strict != "false") {
    return absl::InvalidArgumentError(
        absl::StrCat("strict: expected 1 or 0, got \"", strict.substr(0, 32), "\""));
  }
  proto.set_strict(strict == "1" || strict == "true");
  return proto;
}

// As ControllerService::Results answers benchctl (without the cells' job ids if asked).
v1::ResultsResponse ResultsResponseOf(ReadService& reads, const v1::ResultsRequest& proto,
                                      bool job_ids) {
  v1::ResultsResponse response;
  for (const ResultCell& cell : reads.Results(FromProto(proto))) {
    v1::ResultCell* out = response.add_cells();
    ToProto(cell, out);
    if (!job_ids) out->clear_job_ids();
  }
  return response;
}

// {"<key>":[items],"next_page_token":"..."}\n
std::string PageJson(absl::string_view key, const std::vector<std::string>& items,
                     absl::string_view next_page_token) {
  return absl::StrCat("{", report::JsonQuote(key), ":[", absl::StrJoin(items, ","),
                      "],\"next_page_token\":", report::JsonQuote(next_page_token), "}\n");
}

}  // namespace

HttpResponse WebApi::Serve(const HttpRequest& original) const {
  // A parameter with an empty value counts as absent (a form's empty field).
  HttpRequest request = original;
  for (auto it = request.query.begin(); it != request.query.end();) {
    it = it->second.empty() ? request.query.erase(it) : std::next(it);
  }
  absl::string_view path = request.path;
  if (!absl::ConsumePrefix(&path, "/api/v1/")) {
    return JsonError(absl::NotFoundError(absl::StrCat("no such path ", request.path)));
  }
  if (path == "jobs") return Jobs(request);
  if (path == "results") return Results(request);
  if (path == "results/grids") return ResultsGrids(request);
  if (path == "agents") return Agents(request);
  if (path == "queue") return Queue(request);
  if (path == "baselines") return Baselines(request);
  if (path == "variability") return Variability(request);
  if (path == "compare") return Compare(request);
  if (path == "history") return History(request);
  if (path == "screenings") return Screenings(request);
  if (absl::ConsumePrefix(&path, "screenings/") && !path.empty() &&
      !absl::StrContains(path, '/')) {
    return Screening(request, std::string(path));
  }
  if (absl::ConsumePrefix(&path, "jobs/")) {
    std::vector<std::string> parts = absl::StrSplit(path, '/');
    if (parts.size() == 1 && !parts[0].empty()) return Job(request, parts[0]);
    if (parts.size() == 2 && !parts[0].empty() && parts[1] == "samples") {
      return Samples(request, parts[0]);
    }
    if (parts.size() == 2 && !parts[0].empty() && parts[1] == "logs") {
      return Logs(request, parts[0]);
    }
    if (parts.size() == 2 && !parts[0].empty() && parts[1] == "text") {
      return JobText(request, parts[0]);
    }
  }
  return JsonError(absl::NotFoundError(absl::StrCat(
      "no such API path ", request.path,
      " (the API is jobs, jobs/{id}, jobs/{id}/samples, jobs/{id}/logs, jobs/{id}/text, "
      "results, results/grids, agents, "
      "queue, baselines, variability, compare, history, screenings, screenings/{id}; "
      "docs/web-api.md)")));
}

HttpResponse WebApi::Jobs(const HttpRequest& request) const {
  if (absl::Status s = CheckParams(request, {"state", "model", "label", "since", "until", "name",
                                             "page_size", "page_token"});
      !s.ok()) {
    return JsonError(s);
  }
  absl::StatusOr<JobFilter> filter = JobFilterOf(request);
  if (!filter.ok()) return JsonError(filter.status());
  absl::StatusOr<std::optional<int64_t>> page_size =
      IntParam(request, "page_size", 1, kMaxJobsPageSize);
  if (!page_size.ok()) return JsonError(page_size.status());
  int64_t before_seq = 0;
  if (std::optional<std::string> token = request.Query("page_token"); token && !token->empty()) {
    absl::StatusOr<std::string> seq = web_api::DecodeToken("jobs", *token);
    if (!seq.ok()) return JsonError(seq.status());
    if (!absl::SimpleAtoi(*seq, &before_seq) || before_seq < 1) {
      return JsonError(absl::InvalidArgumentError(
          absl::StrCat("page_token: \"", *token, "\" is not a page token of this list")));
    }
  }
  const JobManager::JobPage page = manager_->ListNewestFirst(
      [&filter](const bench::Job& job) { return filter->Matches(job); }, before_seq,
      static_cast<size_t>(page_size->value_or(kDefaultJobsPageSize)));
  std::vector<std::string> items;
  items.reserve(page.views.size());
  for (const JobView& view : page.views) items.push_back(JobJson(view));
  const std::string next =
      page.more ? web_api::EncodeToken("jobs", absl::StrCat(page.views.back().job.seq)) : "";
  return JsonOk(PageJson("jobs", items, next));
}

HttpResponse WebApi::Job(const HttpRequest& request, const std::string& job_id) const {
  if (absl::Status s = CheckParams(request, {}); !s.ok()) return JsonError(s);
  absl::StatusOr<JobView> view = manager_->Get(job_id);
  if (!view.ok()) return JsonError(view.status());
  return JsonOk(JobJson(*view) + "\n");
}

HttpResponse WebApi::JobText(const HttpRequest& request, const std::string& job_id) const {
  if (absl::Status s = CheckParams(request, {}); !s.ok()) return JsonError(s);
  absl::StatusOr<JobView> view = manager_->Get(job_id);
  if (!view.ok()) return JsonError(view.status());
  v1::JobStatus status;
  ToProto(*view, &status);
  return JsonOk(report::JobFiguresJson(status));
}

HttpResponse WebApi::Results(const HttpRequest& request) const {
  if (absl::Status s = CheckParams(request, {"model", "gpu_model", "node", "since", "until",
                                             "label", "job_ids", "simulated", "strict"});
      !s.ok()) {
    return JsonError(s);
  }
  absl::StatusOr<v1::ResultsRequest> proto = ResultsRequestOf(request);
  if (!proto.ok()) return JsonError(proto.status());
  // job_ids=false: each cell's job_ids left empty. A grid of many runs lists every job
  // id (1.4 MB over 100,000 jobs); the page needs none of them (a cell links to its runs
  // by filters), so it asks for this and loads the grid in a fraction of the time.
  const std::string job_ids = request.Query("job_ids").value_or("");
  if (!job_ids.empty() && job_ids != "true" && job_ids != "false") {
    return JsonError(absl::InvalidArgumentError(
        absl::StrCat("job_ids: expected true or false, got \"", job_ids.substr(0, 32), "\"")));
  }
  return JsonOk(
      report::RenderResultsJson(*proto, ResultsResponseOf(*reads_, *proto, job_ids != "false")));
}

HttpResponse WebApi::ResultsGrids(const HttpRequest& request) const {
  if (absl::Status s = CheckParams(request, {"model", "gpu_model", "node", "since", "until",
                                             "label", "metric", "simulated", "strict"});
      !s.ok()) {
    return JsonError(s);
  }
  absl::StatusOr<v1::ResultsRequest> proto = ResultsRequestOf(request);
  if (!proto.ok()) return JsonError(proto.status());
  absl::StatusOr<report::GridMetric> metric =
      report::ParseGridMetric(request.Query("metric").value_or("images_per_second"));
  if (!metric.ok()) {  // "--metric: unknown metric ..." names benchctl's flag
    return JsonError(
        absl::InvalidArgumentError(absl::StripPrefix(metric.status().message(), "--")));
  }
  // The grids view carries no job ids (a cell links to its runs by filters).
  return JsonOk(report::RenderResultsGridsJson(
      *proto, ResultsResponseOf(*reads_, *proto, /*job_ids=*/false), *metric));
}

HttpResponse WebApi::Agents(const HttpRequest& request) const {
  if (absl::Status s = CheckParams(request, {}); !s.ok()) return JsonError(s);
  v1::ListAgentsResponse response;
  for (const AgentView& view : manager_->ListAgents()) ToProto(view, response.add_agents());
  return JsonOk(report::ToJson(response));
}

HttpResponse WebApi::Queue(const HttpRequest& request) const {
  if (absl::Status s = CheckParams(request, {}); !s.ok()) return JsonError(s);
  v1::ListQueueResponse response;
  for (const JobView& view : manager_->Queue()) ToProto(view, response.add_jobs());
  return JsonOk(report::ToJson(response));
}

HttpResponse WebApi::Baselines(const HttpRequest& request) const {
  if (absl::Status s = CheckParams(request, {}); !s.ok()) return JsonError(s);
  v1::ListBaselinesResponse response;
  for (const Baseline& baseline : reads_->ListBaselines()) {
    ToProto(baseline, response.add_baselines());
  }
  return JsonOk(report::ToJson(response));
}

HttpResponse WebApi::Variability(const HttpRequest& request) const {
  if (absl::Status s = CheckParams(request, {"threshold_pct", "model"}); !s.ok()) {
    return JsonError(s);
  }
  double threshold_pct = 0;
  if (std::optional<std::string> text = request.Query("threshold_pct")) {
    if (!absl::SimpleAtod(*text, &threshold_pct)) {
      return JsonError(absl::InvalidArgumentError(
          absl::StrCat("threshold_pct: expected a number, got \"", *text, "\"")));
    }
  }
  absl::StatusOr<VariabilityReport> report =
      reads_->Variability(threshold_pct, request.Query("model").value_or(""));
  if (!report.ok()) return JsonError(report.status());
  v1::GpuVariabilityResponse response;
  for (const GpuVariability& gpu : report->gpus) ToProto(gpu, response.add_gpus());
  response.set_threshold_pct(report->threshold_pct);
  return JsonOk(report::ToJson(response));
}

HttpResponse WebApi::Compare(const HttpRequest& request) const {
  if (absl::Status s = CheckParams(request, {"a", "b"}); !s.ok()) return JsonError(s);
  v1::JobStatus jobs[2];
  const char* names[2] = {"a", "b"};
  for (int i = 0; i < 2; ++i) {
    std::optional<std::string> id = request.Query(names[i]);
    if (!id || id->empty()) {
      return JsonError(absl::InvalidArgumentError(
          absl::StrCat(names[i], ": required (a job id; compare?a=ID&b=ID)")));
    }
    absl::StatusOr<JobView> view = manager_->Get(*id);
    if (!view.ok()) return JsonError(view.status());
    ToProto(*view, &jobs[i]);
  }
  return JsonOk(report::ComparisonJson(jobs[0], jobs[1]));
}

void RegisterWebApi(HttpServer& http, JobManager* manager, ReadService* reads, Store* store) {
  auto api = std::make_shared<const WebApi>(manager, reads, store);
  http.HandlePrefix("/api/v1/", [api](const HttpRequest& request) { return api->Serve(request); });
}

}  // namespace bench
