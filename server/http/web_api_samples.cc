// The web API's handlers over one job's iterations (its samples, paged or downsampled,
// and its logs) and over one configuration's history (docs/web-api.md).
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchfleet/v1/controller.pb.h"
#include "common/spec_names.h"
#include "report/job_logs.h"
#include "report/json_output.h"
#include "server/http/web_api.h"
#include "server/http/web_api_internal.h"
#include "server/results/results.h"
#include "server/rpc/proto_convert.h"

namespace bench {
namespace {

namespace v1 = benchfleet::v1;
using report::JsonNumber;
using report::JsonQuote;
using web_api::CheckParams;
using web_api::IntParam;
using web_api::JsonError;
using web_api::JobJson;
using web_api::JsonOk;

std::string SampleJson(const IterationSample& sample) {
  v1::IterationSample proto;
  ToProto(sample, &proto);
  std::string json = report::ToJson(proto);
  json.pop_back();
  return json;
}

std::string Int64(int64_t value) { return absl::StrCat("\"", value, "\""); }

// The step split's means (docs/web-api.md), each only where some iteration of the bucket
// has it: ",\"compute_time_s\":…" and so on, or "".
std::string StepSplitJson(const Store::SampleBucket& b) {
  std::string json;
  for (const auto& [name, mean] : {std::pair<const char*, const std::optional<double>&>{
                                       "compute_time_s", b.mean_compute_time_s},
                                   {"forward_backward_time_s", b.mean_forward_backward_time_s},
                                   {"allreduce_wait_time_s", b.mean_allreduce_wait_time_s},
                                   {"optimizer_time_s", b.mean_optimizer_time_s}}) {
    if (mean) absl::StrAppend(&json, ",\"", name, "\":", JsonNumber(*mean));
  }
  return json;
}

// One chart point (docs/web-api.md: /samples?points=N).
std::string PointJson(const Store::SampleBucket& b) {
  const std::string ips =
      b.step_time_sum_s > 0 ? JsonNumber(static_cast<double>(b.images) / b.step_time_sum_s)
                            : "null";
  return absl::StrCat(
      "{\"rank\":", b.rank, ",\"first_iteration\":", b.first_iteration,
      ",\"last_iteration\":", b.last_iteration, ",\"samples\":", Int64(b.samples),
      ",\"step_time_s\":", JsonNumber(b.mean_step_time_s),
      ",\"data_time_s\":", JsonNumber(b.mean_data_time_s), StepSplitJson(b),
      ",\"images\":", Int64(b.images),
      ",\"images_per_second\":", ips,
      ",\"loss\":", b.mean_loss ? report::JsonDouble(*b.mean_loss) : "null",
      ",\"nonfinite_losses\":", Int64(b.nonfinite_losses), ",\"elapsed_s\":", JsonNumber(b.elapsed_s),
      ",\"warmup\":", b.warmup ? "true" : "false",
      ",\"received_unix_ns\":", Int64(b.received_unix_ns), "}");
}

// A samples page token: "attempt:rank:iteration" of the page's last sample.
absl::StatusOr<Store::SampleCursor> DecodeSampleCursor(const std::string& token, int attempt) {
  absl::StatusOr<std::string> text = web_api::DecodeToken("samples", token);
  if (!text.ok()) return text.status();
  std::vector<std::string> parts = absl::StrSplit(*text, ':');
  int token_attempt = 0;
  Store::SampleCursor cursor;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &token_attempt) ||
      !absl::SimpleAtoi(parts[1], &cursor.rank) || !absl::SimpleAtoi(parts[2], &cursor.iteration)) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token: \"", token, "\" is not a page token of this list"));
  }
  if (token_attempt != attempt) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page_token: the job has started attempt ", attempt, " since the token's attempt ",
        token_attempt, "; start again without page_token"));
  }
  return cursor;
}

}  // namespace

HttpResponse WebApi::Samples(const HttpRequest& request, const std::string& job_id) const {
  if (absl::Status s = CheckParams(request, {"rank", "from_iteration", "page_size",
                                             "page_token", "points"});
      !s.ok()) {
    return JsonError(s);
  }
  absl::StatusOr<std::optional<int64_t>> rank = IntParam(request, "rank", 0, INT32_MAX);
  if (!rank.ok()) return JsonError(rank.status());
  absl::StatusOr<std::optional<int64_t>> from = IntParam(request, "from_iteration", 0, INT32_MAX);
  if (!from.ok()) return JsonError(from.status());
  absl::StatusOr<std::optional<int64_t>> page_size =
      IntParam(request, "page_size", 1, kMaxSamplesPageSize);
  if (!page_size.ok()) return JsonError(page_size.status());
  absl::StatusOr<std::optional<int64_t>> points = IntParam(request, "points", 1, kMaxChartPoints);
  if (!points.ok()) return JsonError(points.status());
  const std::string token = request.Query("page_token").value_or("");
  if (*points && (!token.empty() || *page_size)) {
    return JsonError(absl::InvalidArgumentError(
        "points: a downsampled answer is not paged (leave out page_size and page_token)"));
  }
  absl::StatusOr<JobView> view = manager_->Get(job_id);
  if (!view.ok()) return JsonError(view.status());
  const bench::Job& job = view->job;
  const std::optional<int> only_rank =
      *rank ? std::optional<int>(static_cast<int>(**rank)) : std::nullopt;
  const int from_iteration = static_cast<int>(from->value_or(0));

  if (*points) {
    std::vector<std::string> items;
    if (job.attempt >= 1) {
      absl::StatusOr<std::vector<Store::SampleBucket>> buckets = store_->ReadSampleBuckets(
          job.id, job.attempt, from_iteration, only_rank, static_cast<int>(**points));
      if (!buckets.ok()) return JsonError(buckets.status());
      items.reserve(buckets->size());
      for (const Store::SampleBucket& bucket : *buckets) items.push_back(PointJson(bucket));
    }
    return JsonOk(absl::StrCat("{\"job\":", JobJson(*view), ",\"points_per_rank\":", **points,
                               ",\"points\":[", absl::StrJoin(items, ","), "]}\n"));
  }

  std::optional<Store::SampleCursor> after;
  if (!token.empty()) {
    absl::StatusOr<Store::SampleCursor> cursor = DecodeSampleCursor(token, job.attempt);
    if (!cursor.ok()) return JsonError(cursor.status());
    after = *cursor;
  }
  const int limit = static_cast<int>(page_size->value_or(kDefaultSamplesPageSize));
  std::vector<IterationSample> samples;
  if (job.attempt >= 1) {
    absl::StatusOr<std::vector<IterationSample>> page =
        store_->ReadSamplesPage(job.id, job.attempt, from_iteration, only_rank, after, limit + 1);
    if (!page.ok()) return JsonError(page.status());
    samples = std::move(*page);
  }
  std::string next;
  if (static_cast<int>(samples.size()) > limit) {
    samples.resize(limit);
    const IterationSample& last = samples.back();
    next = web_api::EncodeToken("samples",
                                absl::StrCat(job.attempt, ":", last.rank, ":", last.iteration));
  }
  std::vector<std::string> items;
  items.reserve(samples.size());
  for (const IterationSample& sample : samples) items.push_back(SampleJson(sample));
  return JsonOk(absl::StrCat("{\"job\":", JobJson(*view), ",\"samples\":[",
                             absl::StrJoin(items, ","), "],\"next_page_token\":", JsonQuote(next),
                             "}\n"));
}

HttpResponse WebApi::Logs(const HttpRequest& request, const std::string& job_id) const {
  if (absl::Status s = CheckParams(request, {"format"}); !s.ok()) return JsonError(s);
  absl::StatusOr<report::LogFormat> format =
      report::ParseLogFormat(request.Query("format").value_or("dllogger"));
  if (!format.ok()) return JsonError(absl::InvalidArgumentError(
                             absl::StrCat("format: ", format.status().message())));
  // What benchctl logs asks GetSamples for, rendered by the same writer.
  const std::optional<int> rank = report::JobLogWriter(*format).RankOfInterest();
  absl::StatusOr<SamplesView> read = reads_->GetSamples(job_id, 0, rank);
  if (!read.ok()) return JsonError(read.status());
  v1::JobStatus status;
  ToProto(read->view, &status);
  std::vector<v1::IterationSample> samples(read->samples.size());
  for (size_t i = 0; i < read->samples.size(); ++i) ToProto(read->samples[i], &samples[i]);
  HttpResponse response;
  response.body = report::RenderJobLog(*format, status, samples);
  const bool jsonl = *format == report::LogFormat::kJsonl;
  response.content_type = jsonl ? "application/x-ndjson" : "text/plain; charset=utf-8";
  response.headers.push_back(
      {"Content-Disposition",
       absl::StrCat("attachment; filename=\"", job_id, ".",
                    report::LogFormatName(*format), jsonl ? "\"" : ".log\"")});
  response.headers.push_back({"Cache-Control", "no-store"});
  return response;
}

HttpResponse WebApi::History(const HttpRequest& request) const {
  if (absl::Status s = CheckParams(request, {"model", "devices", "precision", "batch_size",
                                             "gpu_model"});
      !s.ok()) {
    return JsonError(s);
  }
  // The configurations asked for: a model, and any of the others.
  ConfigurationFilter filter;
  filter.model = request.Query("model").value_or("");
  if (filter.model->empty()) {
    return JsonError(absl::InvalidArgumentError("model: required (history?model=resnet50)"));
  }
  absl::StatusOr<std::optional<int64_t>> devices = IntParam(request, "devices", 1, INT32_MAX);
  if (!devices.ok()) return JsonError(devices.status());
  if (*devices) filter.devices = static_cast<int>(**devices);
  absl::StatusOr<std::optional<int64_t>> batch = IntParam(request, "batch_size", 1, INT32_MAX);
  if (!batch.ok()) return JsonError(batch.status());
  if (*batch) filter.batch_size = static_cast<int>(**batch);
  if (std::optional<std::string> text = request.Query("precision")) {
    absl::StatusOr<v1::Precision> parsed = ParsePrecision(*text);
    if (!parsed.ok()) return JsonError(parsed.status());  // "precision: unknown ..."
    filter.precision = PrecisionFromText(PrecisionName(*parsed)).value_or(Precision::kUnspecified);
  }
  filter.gpu_model = request.Query("gpu_model");
  JobManager::ReadSnapshot snapshot = manager_->Snapshot([&](const bench::Job& job) {
    return job.state == JobState::kSucceeded && filter.Matches(ConfigurationOf(job));
  });
  std::vector<std::string> points;
  // The configurations of the points, in the order of their first point, each with its
  // points' job ids: the page groups by these instead of matching fields itself.
  struct Group {
    ConfigurationKey configuration;
    std::string precision;  // the API's enum name
    std::vector<std::string> job_ids;
  };
  std::map<ConfigurationKey, size_t> configuration_index;
  std::vector<Group> configurations;
  for (const bench::Job& job : snapshot.jobs) {
    const std::optional<double> ips = ThroughputOf(job);
    if (!ips) continue;
    absl::Time finished = absl::InfinitePast();
    for (const StateTransition& t : job.history) {
      if (IsTerminal(t.state)) finished = t.time;
    }
    const ConfigurationKey c = ConfigurationOf(job);
    v1::BaselineComparison comparison;
    bool regression = false;
    if (std::optional<BaselineComparison> b = CompareWithBaselines(*ips, c, snapshot.baselines)) {
      comparison.set_verdict(b->verdict == BaselineVerdict::kBelow   ? v1::BASELINE_VERDICT_BELOW
                             : b->verdict == BaselineVerdict::kAbove ? v1::BASELINE_VERDICT_ABOVE
                                                                     : v1::BASELINE_VERDICT_WITHIN);
      comparison.set_baseline_job_id(b->baseline_job_id);
      comparison.set_baseline_images_per_second(b->baseline_images_per_second);
      comparison.set_ratio(b->ratio);
      regression = b->verdict == BaselineVerdict::kBelow;
    }
    v1::JobSpec spec;
    ToProto(job.spec, &spec);
    auto [at, added] = configuration_index.emplace(c, configurations.size());
    if (added) configurations.push_back({c, v1::Precision_Name(spec.precision()), {}});
    configurations[at->second].job_ids.push_back(job.id);
    std::string baseline_json = report::ToJson(comparison);
    baseline_json.pop_back();
    points.push_back(absl::StrCat(
        "{\"job_id\":", JsonQuote(job.id),
        ",\"submitted_unix_ms\":", Int64(absl::ToUnixMillis(job.created)),
        ",\"finished_unix_ms\":",
        Int64(finished == absl::InfinitePast() ? 0 : absl::ToUnixMillis(finished)),
        ",\"images_per_second\":", JsonNumber(*ips), ",\"model\":", JsonQuote(c.model),
        ",\"devices\":", c.devices, ",\"precision\":",
        JsonQuote(v1::Precision_Name(spec.precision())), ",\"batch_size\":", c.batch_size,
        ",\"image_size\":", c.image_size, ",\"device_kind\":",
        JsonQuote(DeviceKindText(c.device_kind)), ",\"gpu_model\":", JsonQuote(c.gpu_model),
        ",\"baseline\":", baseline_json, ",\"regression\":", regression ? "true" : "false",
        "}"));
  }
  // A baseline with its band: × (1 − lower tolerance) … × (1 + upper tolerance).
  auto band_json = [](const Baseline& baseline) {
    v1::Baseline proto;
    ToProto(baseline, &proto);
    std::string json = report::ToJson(proto);
    json = web_api::WithField(
        json, "lower_images_per_second",
        JsonNumber(baseline.images_per_second * (1 - baseline.lower_tolerance_pct / 100)));
    json = web_api::WithField(
        json, "upper_images_per_second",
        JsonNumber(baseline.images_per_second * (1 + baseline.upper_tolerance_pct / 100)));
    json.pop_back();
    return json;
  };
  std::vector<std::string> bands;
  for (const auto& [configuration, baseline] : snapshot.baselines) {
    if (filter.Matches(configuration)) bands.push_back(band_json(baseline));
  }
  std::vector<std::string> groups;
  for (const Group& group : configurations) {
    const ConfigurationKey& c = group.configuration;
    std::vector<std::string> ids;
    for (const std::string& id : group.job_ids) ids.push_back(JsonQuote(id));
    auto baseline = snapshot.baselines.find(c);
    groups.push_back(absl::StrCat(
        "{\"model\":", JsonQuote(c.model), ",\"devices\":", c.devices,
        ",\"precision\":", JsonQuote(group.precision), ",\"batch_size\":", c.batch_size,
        ",\"image_size\":", c.image_size, ",\"device_kind\":",
        JsonQuote(DeviceKindText(c.device_kind)), ",\"gpu_model\":", JsonQuote(c.gpu_model),
        ",\"job_ids\":[", absl::StrJoin(ids, ","), "],\"baseline\":",
        baseline == snapshot.baselines.end() ? "null" : band_json(baseline->second), "}"));
  }
  return JsonOk(absl::StrCat("{\"points\":[", absl::StrJoin(points, ","), "],\"baselines\":[",
                             absl::StrJoin(bands, ","), "],\"configurations\":[",
                             absl::StrJoin(groups, ","), "]}\n"));
}

}  // namespace bench
