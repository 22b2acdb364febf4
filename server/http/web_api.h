// benchd's read-only JSON API on the web port, under /api/v1/ (docs/web-api.md): jobs
// (filtered and paged), one job (and its figures in benchctl status's words), its samples
// (paged, or downsampled for charts), its logs, the results grid (its cells, and its grids
// as benchctl prints them), agents, the queue, baselines, GPU variability, a comparison of
// two jobs and one configuration's history. Nothing here changes state: writes stay on
// gRPC (controller.proto).
//
// One JSON convention, benchctl's (report/json_output.h): protobuf's JSON mapping with
// the proto field names and every field printed (int64 as strings, enums by name).
// Where benchctl prints the same thing (results, compare, logs) the bytes come from the
// same report/ function. Paged lists are wrapped in an object with `next_page_token`
// ("" on the last page). Errors are JsonErrorResponse (http_server.h): a bad parameter
// is 400 naming it, an unknown job 404, an unknown /api/v1/ path 404.
//
// An HTTP adapter like controller_service is a gRPC one: parameters ⇄ domain calls on
// JobManager, ReadService and the store's sample reads, domain ⇄ proto (proto_convert.h),
// proto → JSON (report/). Thread-safe: handlers hold no state of their own and may run
// concurrently.
#pragma once

#include <memory>
#include <string>

#include "httpd/http_server.h"
#include "server/core/job_manager.h"
#include "server/core/read_service.h"
#include "server/store/store.h"

namespace bench {

// Limits of the API's paging (docs/web-api.md).
inline constexpr int kDefaultJobsPageSize = 100;
inline constexpr int kMaxJobsPageSize = 1000;
inline constexpr int kDefaultSamplesPageSize = 1000;
inline constexpr int kMaxSamplesPageSize = 10000;
inline constexpr int kMaxChartPoints = 10000;

// The handlers as plain functions (tests call them with an HttpRequest); Serve routes
// any path under /api/v1/. None of the pointers is owned; all must outlive the API.
class WebApi {
 public:
  WebApi(JobManager* manager, ReadService* reads, Store* store)
      : manager_(manager), reads_(reads), store_(store) {}

  // Routes request.path (which starts with "/api/v1/") to the handlers below; 404 JSON
  // for any other path. Parameters with an empty value are dropped first (absent).
  HttpResponse Serve(const HttpRequest& request) const;

  HttpResponse Jobs(const HttpRequest& request) const;
  HttpResponse Job(const HttpRequest& request, const std::string& job_id) const;
  // The job's figures in benchctl status's words where the page shows them as text
  // (report/job_figures.h: data vs compute).
  HttpResponse JobText(const HttpRequest& request, const std::string& job_id) const;
  HttpResponse Samples(const HttpRequest& request, const std::string& job_id) const;
  HttpResponse Logs(const HttpRequest& request, const std::string& job_id) const;
  HttpResponse Results(const HttpRequest& request) const;
  // The results grids laid out as `benchctl results [--metric M]` prints them, with each
  // cell's figures (report/grid_view.h): what the page shows, rendered here, not there.
  HttpResponse ResultsGrids(const HttpRequest& request) const;
  HttpResponse Agents(const HttpRequest& request) const;
  HttpResponse Queue(const HttpRequest& request) const;
  HttpResponse Baselines(const HttpRequest& request) const;
  HttpResponse Variability(const HttpRequest& request) const;
  HttpResponse Compare(const HttpRequest& request) const;
  HttpResponse History(const HttpRequest& request) const;
  // Fleet screenings (web_api_screenings.cc): the list, newest first, and one screening's
  // verdicts (the v1 ScreeningReport) with "text", benchctl screen --show's lines.
  HttpResponse Screenings(const HttpRequest& request) const;
  HttpResponse Screening(const HttpRequest& request, const std::string& screening_id) const;

 private:
  JobManager* const manager_;
  ReadService* const reads_;
  Store* const store_;
};

// Registers the API on `http` (before Start) as the prefix route "/api/v1/". The
// pointers are not owned and must outlive `http`'s serving.
void RegisterWebApi(HttpServer& http, JobManager* manager, ReadService* reads, Store* store);

}  // namespace bench
