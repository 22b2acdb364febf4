#include "report/job_logs.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/names.h"
#include "common/spec_names.h"
#include "report/json_output.h"

namespace bench::report {
namespace {

namespace v1 = benchfleet::v1;

int64_t StartMs(const v1::JobStatus& job) {
  for (const auto& transition : job.history()) {
    if (transition.state() == v1::JOB_STATE_RUNNING && transition.time_unix_ms() > 0) {
      return transition.time_unix_ms();
    }
  }
  return job.created_unix_ms();
}

int64_t EndMs(const v1::JobStatus& job, int64_t fallback) {
  for (auto it = job.history().rbegin(); it != job.history().rend(); ++it) {
    if (IsTerminal(it->state()) && it->time_unix_ms() > 0) return it->time_unix_ms();
  }
  return fallback;
}

int GlobalBatch(const v1::JobStatus& job) {
  return job.spec().batch_size() * std::max(job.spec().devices(), 1);
}

// Planned measured images: (iterations - warm-up) x global batch; 0 when nothing is measured.
int64_t PlannedTrainSamples(const v1::JobStatus& job) {
  const int64_t measured = job.spec().iterations() - job.spec().warmup_iterations();
  return measured > 0 ? measured * GlobalBatch(job) : 0;
}

bool HasThroughput(const v1::JobStatus& job) {
  return job.has_throughput() && job.has_images_per_second();
}

std::string NoThroughputNote(const v1::JobStatus& job) {
  std::string note = absl::StrCat("no throughput: job ", JobStateName(job.state()));
  if (!job.reason().empty()) absl::StrAppend(&note, " (", job.reason(), ")");
  return note;
}

std::string UnixSeconds(int64_t ms) { return absl::StrFormat("%.3f", ms / 1000.0); }

std::string DateTime(int64_t ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%E6S", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

using RawFields = std::vector<std::pair<std::string, std::string>>;

// One DLLogger JSONStreamBackend line; `fields` (already JSON) follow "type".
std::string Dllog(int64_t time_ms, double elapsed_s, const char* type, const RawFields& fields) {
  JsonObject line;
  line.Add("timestamp", UnixSeconds(time_ms))
      .Add("datetime", DateTime(time_ms))
      .Add("elapsedtime", absl::StrFormat("%.3f", elapsed_s))
      .Add("type", type);
  for (const auto& [key, json] : fields) line.AddRaw(key, json);
  return absl::StrCat("DLLL ", line.Build(), "\n");
}

std::string DllogMetadata(int64_t time_ms, const char* metric, const char* unit) {
  JsonObject metadata;
  if (unit[0] != '\0') metadata.Add("unit", unit);
  return Dllog(time_ms, 0, "METADATA", {{"metric", JsonQuote(metric)}, {"metadata", metadata.Build()}});
}

// The registry's MLLOG name ("resnet", "ssd"); a model it does not know keeps its own.
std::string SubmissionBenchmark(const std::string& model) {
  const ModelInfo* info = FindModel(model);
  return info != nullptr ? info->mllog_benchmark : model;
}

bool IsDetection(const std::string& model) {
  const ModelInfo* info = FindModel(model);
  return info != nullptr && info->data_kind == DataKind::kDetection;
}

std::string Platform(const v1::JobStatus& job) {
  if (job.rank_devices().empty()) return "";
  const std::string& name = job.rank_devices(0).gpu_name();
  if (name.empty()) return "";
  return absl::StrCat(job.rank_devices_size(), "x", name);
}

}  // namespace

absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name) {
  for (LogFormat format : {LogFormat::kDllogger, LogFormat::kMllog, LogFormat::kJsonl}) {
    if (name == LogFormatName(format)) return format;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown log format \"", name, "\" (expected dllogger, mllog or jsonl)"));
}

const char* LogFormatName(LogFormat format) {
  switch (format) {
    case LogFormat::kDllogger: return "dllogger";
    case LogFormat::kMllog: return "mllog";
    case LogFormat::kJsonl: return "jsonl";
  }
  return "";
}

int64_t SampleTimeMs(const v1::JobStatus& job, const v1::IterationSample& sample) {
  if (sample.received_unix_ns() > 0) return sample.received_unix_ns() / 1000000;
  return StartMs(job) + static_cast<int64_t>(std::llround(sample.elapsed_s() * 1000));
}

std::string JobLogWriter::MllogLine(int64_t time_ms, const char* event_type,
                                    const std::string& key, const std::string& value_json,
                                    const std::string& extra_metadata) {
  JsonObject metadata;
  metadata.Add("file", "benchfleet").Add("lineno", ++lineno_);
  std::string metadata_json = metadata.Build();
  if (!extra_metadata.empty()) {
    metadata_json.pop_back();
    absl::StrAppend(&metadata_json, ", ", extra_metadata, "}");
  }
  JsonObject line;
  line.Add("namespace", "")
      .Add("time_ms", time_ms)
      .Add("event_type", event_type)
      .Add("key", key)
      .AddRaw("value", value_json)
      .AddRaw("metadata", metadata_json);
  return absl::StrCat(":::MLLOG ", line.Build(), "\n");
}

std::string JobLogWriter::Begin(const v1::JobStatus& job) {
  const int64_t created = job.created_unix_ms();
  const int64_t start = StartMs(job);
  std::string out;
  switch (format_) {
    case LogFormat::kDllogger:
      for (const auto& [metric, unit] : std::vector<std::pair<const char*, const char*>>{
               {"train.loss", ""},
               {"train.total_ips", "images/s"},
               {"train.compute_ips", "images/s"},
               {"train.step_time", "s"},
               {"train.data_time", "s"},
               {"train.warmup", ""},
               {"compute_time_s", "s"},
               {"forward_backward_time_s", "s"},
               {"allreduce_wait_time_s", "s"},
               {"optimizer_time_s", "s"},
               {"train.throughput", "images/s"},
               {"train.iterations", "iterations"},
               {"global_batch_size", "images"}}) {
        out += DllogMetadata(created, metric, unit);
      }
      break;
    case LogFormat::kMllog: {
      out += MllogLine(created, "POINT_IN_TIME", "submission_benchmark",
                       JsonQuote(SubmissionBenchmark(job.spec().model())));
      out += MllogLine(created, "POINT_IN_TIME", "submission_division", JsonQuote("open"));
      if (std::string platform = Platform(job); !platform.empty()) {
        out += MllogLine(created, "POINT_IN_TIME", "submission_platform", JsonQuote(platform));
      }
      out += MllogLine(created, "INTERVAL_START", "init_start", "null");
      out += MllogLine(created, "POINT_IN_TIME", "global_batch_size",
                       absl::StrCat(GlobalBatch(job)));
      out += MllogLine(created, "POINT_IN_TIME", "opt_name", JsonQuote("sgd"));
      out += MllogLine(created, "POINT_IN_TIME", "train_samples",
                       absl::StrCat(PlannedTrainSamples(job)));
      if (IsDetection(job.spec().model())) {
        // MLPerf's SSD logs its random-crop sampler's tries (its checker wants 1).
        out += MllogLine(created, "POINT_IN_TIME", "max_samples", "1");
      }
      out += MllogLine(start, "INTERVAL_END", "init_stop", "null");
      out += MllogLine(start, "INTERVAL_START", "run_start", "null");
      out += MllogLine(start, "INTERVAL_START", "block_start", "null",
                       "\"first_epoch_num\": 1, \"epoch_count\": 1");
      out += MllogLine(start, "INTERVAL_START", "epoch_start", "null", "\"epoch_num\": 1");
      break;
    }
    default:
      break;
  }
  return out;
}

std::string JobLogWriter::Add(const v1::JobStatus& job,
                              const std::vector<v1::IterationSample>& samples) {
  std::string out;
  const int devices = std::max(job.spec().devices(), 1);
  for (const v1::IterationSample& sample : samples) {
    if (!seen_.insert({sample.rank(), sample.iteration()}).second) continue;
    int& last = last_iteration_[sample.rank()];
    last = std::max(last, sample.iteration());
    if (format_ == LogFormat::kJsonl) {
      out += ToJson(sample);
      continue;
    }
    if (sample.rank() != 0) continue;
    if (!sample.warmup()) ++measured_rank0_;
    const int64_t time_ms = SampleTimeMs(job, sample);
    last_time_ms_ = std::max(last_time_ms_, time_ms);
    last_elapsed_s_ = std::max(last_elapsed_s_, sample.elapsed_s());
    const double global_images = static_cast<double>(sample.images()) * devices;
    std::optional<double> total_ips;
    if (sample.step_time_s() > 0) total_ips = global_images / sample.step_time_s();
    if (format_ == LogFormat::kDllogger) {
      JsonObject data;
      data.AddRaw("train.loss", JsonDouble(sample.loss()));  // "NaN" where it diverged
      if (total_ips) data.Add("train.total_ips", *total_ips);
      const double compute_s = sample.step_time_s() - sample.data_time_s();
      if (compute_s > 0) data.Add("train.compute_ips", global_images / compute_s);
      data.Add("train.step_time", sample.step_time_s())
          .Add("train.data_time", sample.data_time_s())
          .Add("train.warmup", sample.warmup() ? 1 : 0);
      // The step split, named as in the trainer's event; only what the trainer wrote.
      if (sample.has_compute_time_s()) data.Add("compute_time_s", sample.compute_time_s());
      if (sample.has_forward_backward_time_s()) {
        data.Add("forward_backward_time_s", sample.forward_backward_time_s());
      }
      if (sample.has_allreduce_wait_time_s()) {
        data.Add("allreduce_wait_time_s", sample.allreduce_wait_time_s());
      }
      if (sample.has_optimizer_time_s()) data.Add("optimizer_time_s", sample.optimizer_time_s());
      out += Dllog(time_ms, sample.elapsed_s(), "LOG",
                   {{"step", absl::StrCat("[0, ", sample.iteration(), "]")},
                    {"data", data.Build()}});
    } else if (format_ == LogFormat::kMllog) {
      JsonObject value;
      value.AddOptional("throughput", total_ips);
      out += MllogLine(time_ms, "POINT_IN_TIME", "tracked_stats", value.Build(),
                       absl::StrCat("\"step\": ", sample.iteration(),
                                    sample.warmup() ? ", \"warmup\": true" : ""));
    }
  }
  return out;
}

std::string JobLogWriter::End(const v1::JobStatus& job) {
  const int64_t end = EndMs(job, std::max(last_time_ms_, StartMs(job)));
  const bool has = HasThroughput(job);
  std::string out;
  switch (format_) {
    case LogFormat::kDllogger: {
      JsonObject data;
      if (has) data.Add("train.throughput", job.images_per_second());
      data.Add("train.iterations", measured_rank0_)
          .Add("global_batch_size", GlobalBatch(job))
          .Add("status", JobStateName(job.state()));
      if (!has) data.Add("note", NoThroughputNote(job));
      const double elapsed = std::max(last_elapsed_s_, (end - StartMs(job)) / 1000.0);
      out += Dllog(end, elapsed, "LOG", {{"step", "[]"}, {"data", data.Build()}});
      break;
    }
    case LogFormat::kMllog: {
      out += MllogLine(end, "INTERVAL_END", "epoch_stop", "null", "\"epoch_num\": 1");
      out += MllogLine(end, "INTERVAL_END", "block_stop", "null", "\"first_epoch_num\": 1");
      const bool success = job.state() == v1::JOB_STATE_SUCCEEDED && has;
      std::string metadata =
          absl::StrCat("\"status\": ", JsonQuote(success ? "success" : "aborted"));
      if (!has) absl::StrAppend(&metadata, ", \"note\": ", JsonQuote(NoThroughputNote(job)));
      out += MllogLine(end, "INTERVAL_END", "run_stop", "null", metadata);
      if (has) {
        out += MllogLine(end, "POINT_IN_TIME", "throughput", JsonNumber(job.images_per_second()));
      }
      break;
    }
    default:
      break;
  }
  return out;
}

std::optional<int> JobLogWriter::RankOfInterest() const {
  if (format_ == LogFormat::kJsonl) return std::nullopt;
  return 0;
}

int JobLogWriter::NextFromIteration(const v1::JobStatus& job) const {
  const int ranks = RankOfInterest() ? 1 : std::max(job.spec().devices(), 1);
  int from = -1;
  for (int rank = RankOfInterest().value_or(0); rank < RankOfInterest().value_or(0) + ranks;
       ++rank) {
    auto it = last_iteration_.find(rank);
    if (it == last_iteration_.end()) return 1;
    from = from < 0 ? it->second : std::min(from, it->second);
  }
  return std::max(from, 1);
}

std::string RenderJobLog(LogFormat format, const v1::JobStatus& job,
                         const std::vector<v1::IterationSample>& samples) {
  JobLogWriter writer(format);
  std::string out = writer.Begin(job);
  out += writer.Add(job, samples);
  if (IsTerminal(job.state())) out += writer.End(job);
  return out;
}

}  // namespace bench::report
