#include "report/job_logs.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "common/names.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace bench::report {
namespace {

namespace v1 = benchfleet::v1;
using google::protobuf::Struct;
using google::protobuf::Value;
using ::testing::HasSubstr;
using ::testing::Not;

v1::JobStatus FinishedJob() {
  v1::JobStatus job;
  job.set_id("j-9");
  job.mutable_spec()->set_model("resnet50");
  job.mutable_spec()->set_devices(2);
  job.mutable_spec()->set_batch_size(64);
  job.mutable_spec()->set_iterations(4);
  job.mutable_spec()->set_warmup_iterations(1);
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  job.set_created_unix_ms(1700000000000);
  auto* running = job.add_history();
  running->set_state(v1::JOB_STATE_RUNNING);
  running->set_time_unix_ms(1700000002000);
  auto* done = job.add_history();
  done->set_state(v1::JOB_STATE_SUCCEEDED);
  done->set_time_unix_ms(1700000009000);
  job.set_has_throughput(true);
  job.set_images_per_second(1234.5);
  auto* device = job.add_rank_devices();
  device->set_rank(0);
  device->set_gpu_name("NVIDIA H100 80GB HBM3");
  job.add_rank_devices()->set_rank(1);
  return job;
}

std::vector<v1::IterationSample> Samples(int iterations) {
  std::vector<v1::IterationSample> samples;
  for (int rank = 0; rank < 2; ++rank) {
    for (int it = 1; it <= iterations; ++it) {
      v1::IterationSample sample;
      sample.set_job_id("j-9");
      sample.set_rank(rank);
      sample.set_iteration(it);
      sample.set_step_time_s(0.2);
      sample.set_data_time_s(0.05);
      sample.set_images(64);
      sample.set_loss(7.0 - 0.1 * it);
      sample.set_elapsed_s(0.2 * it);
      sample.set_warmup(it == 1);
      if (it == 2) sample.set_received_unix_ns(1700000003123000000);
      samples.push_back(sample);
    }
  }
  return samples;
}

// Every line starts with `prefix` and its rest parses as one JSON object.
std::vector<Struct> ParseLines(const std::string& text, const std::string& prefix) {
  std::vector<Struct> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    EXPECT_TRUE(absl::StartsWith(line, prefix)) << line;
    if (!absl::StartsWith(line, prefix)) continue;
    Struct parsed;
    auto status = google::protobuf::util::JsonStringToMessage(
        std::string(line.substr(prefix.size())), &parsed);
    EXPECT_TRUE(status.ok()) << status.ToString() << " in: " << line;
    lines.push_back(parsed);
  }
  return lines;
}

const Value* Field(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}

// The MLLOG line with `key`, or nullptr.
const Struct* MllogKey(const std::vector<Struct>& lines, const std::string& key) {
  for (const Struct& line : lines) {
    if (Field(line, "key") && Field(line, "key")->string_value() == key) return &line;
  }
  return nullptr;
}

TEST(JobLogsTest, MllogLinesParseAndCarryTheRequiredKeys) {
  const std::string log = RenderJobLog(LogFormat::kMllog, FinishedJob(), Samples(4));
  const auto lines = ParseLines(log, ":::MLLOG ");
  ASSERT_FALSE(lines.empty());
  for (const Struct& line : lines) {
    for (const char* key : {"namespace", "time_ms", "event_type", "key", "value", "metadata"}) {
      EXPECT_NE(Field(line, key), nullptr) << key;
    }
    const Value* metadata = Field(line, "metadata");
    ASSERT_NE(metadata, nullptr);
    EXPECT_NE(Field(metadata->struct_value(), "file"), nullptr);
    EXPECT_NE(Field(metadata->struct_value(), "lineno"), nullptr);
    const std::string type = Field(line, "event_type")->string_value();
    EXPECT_TRUE(type == "POINT_IN_TIME" || type == "INTERVAL_START" || type == "INTERVAL_END")
        << type;
  }
  ASSERT_NE(MllogKey(lines, "submission_benchmark"), nullptr);
  EXPECT_EQ(Field(*MllogKey(lines, "submission_benchmark"), "value")->string_value(), "resnet");
  ASSERT_NE(MllogKey(lines, "global_batch_size"), nullptr);
  EXPECT_EQ(Field(*MllogKey(lines, "global_batch_size"), "value")->number_value(), 128);
  ASSERT_NE(MllogKey(lines, "opt_name"), nullptr);
  EXPECT_EQ(Field(*MllogKey(lines, "opt_name"), "value")->string_value(), "sgd");
  ASSERT_NE(MllogKey(lines, "train_samples"), nullptr);
  EXPECT_EQ(Field(*MllogKey(lines, "train_samples"), "value")->number_value(), 3 * 128);
  EXPECT_EQ(MllogKey(lines, "opt_base_learning_rate"), nullptr);  // not known: omitted
  for (const char* key : {"init_start", "init_stop", "run_start", "block_start", "epoch_start",
                          "epoch_stop", "block_stop", "run_stop"}) {
    EXPECT_NE(MllogKey(lines, key), nullptr) << key;
  }
  EXPECT_EQ(Field(*MllogKey(lines, "run_start"), "event_type")->string_value(), "INTERVAL_START");
  EXPECT_EQ(Field(*MllogKey(lines, "run_start"), "time_ms")->number_value(), 1700000002000);
  const Struct* stop = MllogKey(lines, "run_stop");
  EXPECT_EQ(Field(*stop, "event_type")->string_value(), "INTERVAL_END");
  EXPECT_EQ(Field(Field(*stop, "metadata")->struct_value(), "status")->string_value(), "success");
  EXPECT_EQ(Field(*stop, "time_ms")->number_value(), 1700000009000);
  const Struct* throughput = MllogKey(lines, "throughput");
  ASSERT_NE(throughput, nullptr);
  EXPECT_DOUBLE_EQ(Field(*throughput, "value")->number_value(), 1234.5);
  EXPECT_EQ(&lines.back(), throughput);  // the final line

  // One tracked_stats per rank-0 iteration, with its step and the step's images/s.
  int tracked = 0;
  for (const Struct& line : lines) {
    if (Field(line, "key")->string_value() != "tracked_stats") continue;
    ++tracked;
    const Struct& metadata = Field(line, "metadata")->struct_value();
    EXPECT_EQ(Field(metadata, "step")->number_value(), tracked);
    EXPECT_DOUBLE_EQ(
        Field(Field(line, "value")->struct_value(), "throughput")->number_value(), 128 / 0.2);
    if (tracked == 2) {
      EXPECT_EQ(Field(line, "time_ms")->number_value(), 1700000003123);
    }
    if (tracked == 3) {
      EXPECT_EQ(Field(line, "time_ms")->number_value(), 1700000002600);
    }
  }
  EXPECT_EQ(tracked, 4);
  EXPECT_THAT(log, HasSubstr(":::MLLOG {\"namespace\": \"\", \"time_ms\": 1700000000000, "
                             "\"event_type\": \"POINT_IN_TIME\", \"key\": \"submission_benchmark\", "
                             "\"value\": \"resnet\", \"metadata\": {\"file\": \"benchfleet\", "
                             "\"lineno\": 1}}\n"));
}

// Every model of the registry logs its own MLLOG benchmark name ("ssd" for
// ssd_resnet34); detection models add SSD's max_samples; a model it lacks keeps its name.
TEST(JobLogsTest, MllogNamesTheBenchmarkFromTheModelRegistry) {
  for (const ModelInfo& model : kModels) {
    v1::JobStatus job = FinishedJob();
    job.mutable_spec()->set_model(model.name);
    const auto lines = ParseLines(RenderJobLog(LogFormat::kMllog, job, Samples(4)), ":::MLLOG ");
    ASSERT_NE(MllogKey(lines, "submission_benchmark"), nullptr) << model.name;
    EXPECT_EQ(Field(*MllogKey(lines, "submission_benchmark"), "value")->string_value(),
              model.mllog_benchmark);
    const Struct* max_samples = MllogKey(lines, "max_samples");
    if (model.data_kind == DataKind::kDetection) {
      ASSERT_NE(max_samples, nullptr) << model.name;
      EXPECT_EQ(Field(*max_samples, "value")->number_value(), 1);
    } else {
      EXPECT_EQ(max_samples, nullptr) << model.name;
    }
  }
  v1::JobStatus job = FinishedJob();
  job.mutable_spec()->set_model("vgg16");
  const auto lines = ParseLines(RenderJobLog(LogFormat::kMllog, job, Samples(4)), ":::MLLOG ");
  ASSERT_NE(MllogKey(lines, "submission_benchmark"), nullptr);
  EXPECT_EQ(Field(*MllogKey(lines, "submission_benchmark"), "value")->string_value(), "vgg16");
}

TEST(JobLogsTest, MllogWithoutThroughputIsAbortedAndSaysSo) {
  v1::JobStatus job = FinishedJob();
  job.set_state(v1::JOB_STATE_FAILED);
  job.set_reason("rank 1: CUDA out of memory");
  job.clear_has_throughput();
  job.clear_images_per_second();
  const auto lines = ParseLines(RenderJobLog(LogFormat::kMllog, job, Samples(2)), ":::MLLOG ");
  EXPECT_EQ(MllogKey(lines, "throughput"), nullptr);
  const Struct* stop = MllogKey(lines, "run_stop");
  ASSERT_NE(stop, nullptr);
  const Struct& metadata = Field(*stop, "metadata")->struct_value();
  EXPECT_EQ(Field(metadata, "status")->string_value(), "aborted");
  EXPECT_THAT(Field(metadata, "note")->string_value(), HasSubstr("no throughput: job FAILED"));
  // The required keys are there all the same.
  EXPECT_NE(MllogKey(lines, "global_batch_size"), nullptr);
  EXPECT_NE(MllogKey(lines, "opt_name"), nullptr);
  EXPECT_NE(MllogKey(lines, "train_samples"), nullptr);
}

TEST(JobLogsTest, MllogOfARunningJobHasNoRunStop) {
  v1::JobStatus job = FinishedJob();
  job.set_state(v1::JOB_STATE_RUNNING);
  job.clear_has_throughput();
  job.clear_images_per_second();
  const auto lines = ParseLines(RenderJobLog(LogFormat::kMllog, job, Samples(2)), ":::MLLOG ");
  EXPECT_EQ(MllogKey(lines, "run_stop"), nullptr);
  EXPECT_EQ(MllogKey(lines, "throughput"), nullptr);
  EXPECT_NE(MllogKey(lines, "run_start"), nullptr);
}

TEST(JobLogsTest, WarmupCoveringEveryIterationPlansNoSamples) {
  v1::JobStatus job = FinishedJob();
  job.mutable_spec()->set_warmup_iterations(4);
  job.clear_has_throughput();
  job.clear_images_per_second();
  const auto lines = ParseLines(RenderJobLog(LogFormat::kMllog, job, {}), ":::MLLOG ");
  EXPECT_EQ(Field(*MllogKey(lines, "train_samples"), "value")->number_value(), 0);
  EXPECT_EQ(MllogKey(lines, "throughput"), nullptr);
  EXPECT_EQ(Field(Field(*MllogKey(lines, "run_stop"), "metadata")->struct_value(), "status")
                ->string_value(),
            "aborted");
}

TEST(JobLogsTest, DlloggerLinesParseAndCarryTheRequiredKeys) {
  const std::string log = RenderJobLog(LogFormat::kDllogger, FinishedJob(), Samples(4));
  const auto lines = ParseLines(log, "DLLL ");
  ASSERT_GE(lines.size(), 6u);
  bool metadata_done = false;
  int logs = 0;
  for (const Struct& line : lines) {
    for (const char* key : {"timestamp", "datetime", "elapsedtime", "type"}) {
      EXPECT_NE(Field(line, key), nullptr) << key;
    }
    const std::string type = Field(line, "type")->string_value();
    if (type == "METADATA") {
      EXPECT_FALSE(metadata_done) << "METADATA lines come first";
      EXPECT_NE(Field(line, "metric"), nullptr);
      EXPECT_NE(Field(line, "metadata"), nullptr);
      continue;
    }
    metadata_done = true;
    EXPECT_EQ(type, "LOG");
    ASSERT_NE(Field(line, "step"), nullptr);
    ASSERT_NE(Field(line, "data"), nullptr);
    ++logs;
  }
  EXPECT_EQ(logs, 5);  // 4 rank-0 iterations and the summary
  const Struct& first = lines[lines.size() - 5];
  EXPECT_EQ(Field(first, "step")->list_value().values_size(), 2);
  EXPECT_EQ(Field(first, "step")->list_value().values(1).number_value(), 1);
  const Struct& data = Field(first, "data")->struct_value();
  EXPECT_DOUBLE_EQ(Field(data, "train.total_ips")->number_value(), 128 / 0.2);
  EXPECT_NEAR(Field(data, "train.compute_ips")->number_value(), 128 / 0.15, 1e-6);
  EXPECT_DOUBLE_EQ(Field(data, "train.loss")->number_value(), 6.9);
  EXPECT_NE(Field(data, "train.step_time"), nullptr);
  EXPECT_NE(Field(data, "train.data_time"), nullptr);
  EXPECT_EQ(Field(first, "timestamp")->string_value(), "1700000002.200");
  EXPECT_EQ(Field(first, "datetime")->string_value(), "2023-11-14 22:13:22.200000");
  EXPECT_EQ(Field(lines[lines.size() - 4], "timestamp")->string_value(), "1700000003.123");

  const Struct& summary = lines.back();
  EXPECT_EQ(Field(summary, "step")->list_value().values_size(), 0);
  const Struct& totals = Field(summary, "data")->struct_value();
  EXPECT_DOUBLE_EQ(Field(totals, "train.throughput")->number_value(), 1234.5);
  EXPECT_EQ(Field(totals, "train.iterations")->number_value(), 3);  // measured, rank 0
  EXPECT_EQ(Field(totals, "global_batch_size")->number_value(), 128);
  EXPECT_THAT(log, HasSubstr("DLLL {\"timestamp\": \"1700000000.000\", \"datetime\": "
                             "\"2023-11-14 22:13:20.000000\", \"elapsedtime\": \"0.000\", "
                             "\"type\": \"METADATA\", \"metric\": \"train.total_ips\", "
                             "\"metadata\": {\"unit\": \"images/s\"}}\n"));
}

TEST(JobLogsTest, DlloggerWithoutThroughputOmitsItAndSaysSo) {
  v1::JobStatus job = FinishedJob();
  job.set_state(v1::JOB_STATE_FAILED);
  job.clear_has_throughput();
  job.clear_images_per_second();
  const auto lines = ParseLines(RenderJobLog(LogFormat::kDllogger, job, Samples(1)), "DLLL ");
  const Struct& totals = Field(lines.back(), "data")->struct_value();
  EXPECT_EQ(Field(totals, "train.throughput"), nullptr);
  EXPECT_EQ(Field(totals, "train.iterations")->number_value(), 0);
  EXPECT_EQ(Field(totals, "status")->string_value(), "FAILED");
  EXPECT_THAT(Field(totals, "note")->string_value(), HasSubstr("no throughput"));
}

TEST(JobLogsTest, ZeroStepTimeIsNotAnInfiniteRate) {
  auto samples = Samples(1);
  samples[0].set_step_time_s(0);
  samples[0].set_data_time_s(0);
  const std::string dll = RenderJobLog(LogFormat::kDllogger, FinishedJob(), samples);
  EXPECT_THAT(dll, Not(HasSubstr("inf")));
  ParseLines(dll, "DLLL ");
  const std::string ml = RenderJobLog(LogFormat::kMllog, FinishedJob(), samples);
  EXPECT_THAT(ml, HasSubstr("\"value\": {\"throughput\": null}"));
  ParseLines(ml, ":::MLLOG ");
}

// A diverged loss is data: both JSON formats write it as the proto3 JSON mapping does,
// so every line still parses as strict JSON and NaN stays apart from +/-Infinity.
TEST(JobLogsTest, NonFiniteLossesAreProto3JsonStrings) {
  auto samples = Samples(4);  // rank 0: samples 0-3, rank 1: samples 4-7
  samples[1].set_loss(std::nan(""));
  samples[2].set_loss(std::numeric_limits<double>::infinity());
  samples[3].set_loss(-std::numeric_limits<double>::infinity());
  samples[5].set_loss(std::nan(""));
  v1::JobStatus job = FinishedJob();
  job.set_state(v1::JOB_STATE_FAILED);
  job.set_reason("loss diverged: rank 0 on a: non-finite loss in 3 consecutive iterations");
  job.clear_has_throughput();
  job.clear_images_per_second();

  const auto dll = ParseLines(RenderJobLog(LogFormat::kDllogger, job, samples), "DLLL ");
  std::vector<Value> losses;
  for (const Struct& line : dll) {
    const Value* data = Field(line, "data");
    if (data == nullptr) continue;
    const Value* loss = Field(data->struct_value(), "train.loss");
    if (loss != nullptr) losses.push_back(*loss);
  }
  ASSERT_EQ(losses.size(), 4u);  // rank 0's iterations
  EXPECT_DOUBLE_EQ(losses[0].number_value(), 6.9);
  EXPECT_EQ(losses[1].string_value(), "NaN");
  EXPECT_EQ(losses[2].string_value(), "Infinity");
  EXPECT_EQ(losses[3].string_value(), "-Infinity");
  EXPECT_THAT(Field(Field(dll.back(), "data")->struct_value(), "note")->string_value(),
              HasSubstr("loss diverged: rank 0"));

  const std::string jsonl = RenderJobLog(LogFormat::kJsonl, job, samples);
  const auto lines = ParseLines(jsonl, "");
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(Field(lines[1], "loss")->string_value(), "NaN");
  EXPECT_EQ(Field(lines[2], "loss")->string_value(), "Infinity");
  EXPECT_EQ(Field(lines[3], "loss")->string_value(), "-Infinity");
  EXPECT_EQ(Field(lines[5], "loss")->string_value(), "NaN");
  // And it reads back into the proto as the same value.
  v1::IterationSample back;
  std::vector<std::string> parts = absl::StrSplit(jsonl, '\n');
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(parts[1], &back).ok()) << parts[1];
  EXPECT_TRUE(std::isnan(back.loss()));

  const std::string ml = RenderJobLog(LogFormat::kMllog, job, samples);
  ParseLines(ml, ":::MLLOG ");
  EXPECT_THAT(ml, HasSubstr("\"status\": \"aborted\""));
  EXPECT_THAT(ml, HasSubstr("loss diverged: rank 0"));
}

TEST(JobLogsTest, JsonlHasEveryRankWithProtoFieldNames) {
  const std::string log = RenderJobLog(LogFormat::kJsonl, FinishedJob(), Samples(3));
  const auto lines = ParseLines(log, "");
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(Field(lines[3], "rank")->number_value(), 1);
  EXPECT_NE(Field(lines[0], "step_time_s"), nullptr);
  EXPECT_NE(Field(lines[0], "received_unix_ns"), nullptr);
}

// The step split (issue 26), named as in the trainer's event: in DLLogger's data and in
// jsonl where the trainer wrote it (0 included), absent where it did not (no data).
TEST(JobLogsTest, StepSplitIsLoggedOnlyWhereTheTrainerWroteIt) {
  auto samples = Samples(2);  // rank 0: samples 0-1, rank 1: samples 2-3
  for (int i : {0, 2}) {
    samples[i].set_compute_time_s(0.15);
    samples[i].set_forward_backward_time_s(0.125);
    samples[i].set_allreduce_wait_time_s(0);
    samples[i].set_optimizer_time_s(0.0125);
  }
  const char* const kSplit[] = {"compute_time_s", "forward_backward_time_s",
                                "allreduce_wait_time_s", "optimizer_time_s"};
  const double kExpected[] = {0.15, 0.125, 0, 0.0125};

  const std::string dll = RenderJobLog(LogFormat::kDllogger, FinishedJob(), samples);
  const auto lines = ParseLines(dll, "DLLL ");
  std::vector<const Struct*> iterations;
  for (const Struct& line : lines) {
    const Value* step = Field(line, "step");
    if (step != nullptr && step->list_value().values_size() == 2) {
      iterations.push_back(&Field(line, "data")->struct_value());
    }
  }
  ASSERT_EQ(iterations.size(), 2u);  // rank 0's
  for (int k = 0; k < 4; ++k) {
    ASSERT_NE(Field(*iterations[0], kSplit[k]), nullptr) << kSplit[k];
    EXPECT_DOUBLE_EQ(Field(*iterations[0], kSplit[k])->number_value(), kExpected[k]);
    EXPECT_EQ(Field(*iterations[1], kSplit[k]), nullptr) << kSplit[k];
    EXPECT_THAT(dll, HasSubstr(std::string("\"metric\": \"") + kSplit[k] +
                               "\", \"metadata\": {\"unit\": \"s\"}"));
  }

  const auto jsonl = ParseLines(RenderJobLog(LogFormat::kJsonl, FinishedJob(), samples), "");
  ASSERT_EQ(jsonl.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    for (int i : {0, 2}) {
      ASSERT_NE(Field(jsonl[i], kSplit[k]), nullptr) << kSplit[k];
      EXPECT_DOUBLE_EQ(Field(jsonl[i], kSplit[k])->number_value(), kExpected[k]);
    }
    for (int i : {1, 3}) EXPECT_EQ(Field(jsonl[i], kSplit[k]), nullptr) << kSplit[k];
  }
}

TEST(JobLogsTest, WriterSkipsWhatItPrintedAndTracksWhereToResume) {
  v1::JobStatus job = FinishedJob();
  job.set_state(v1::JOB_STATE_RUNNING);
  JobLogWriter writer(LogFormat::kJsonl);
  EXPECT_EQ(writer.NextFromIteration(job), 1);
  auto samples = Samples(3);
  EXPECT_EQ(writer.Add(job, {samples[0], samples[1]}).size() > 0, true);  // rank 0: 1-2
  EXPECT_EQ(writer.NextFromIteration(job), 1) << "rank 1 has nothing yet";
  writer.Add(job, samples);
  EXPECT_EQ(writer.NextFromIteration(job), 3);
  EXPECT_EQ(writer.Add(job, samples), "");  // nothing new
}

}  // namespace
}  // namespace bench::report
