#include "worker/sim/sim_events.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/json_escape.h"
#include "common/names.h"
#include "common/trainer_contract.h"

namespace bench::sim {
namespace {

namespace contract = bench::trainer_contract;

// Builds one JSON object field by field.
class Object {
 public:
  Object& Str(const char* key, const std::string& value) {
    Key(key);
    AppendJsonString(&text_, value);
    return *this;
  }
  Object& Int(const char* key, int64_t value) {
    Key(key);
    text_ += std::to_string(value);
    return *this;
  }
  Object& Num(const char* key, double value) {
    Key(key);
    if (!std::isfinite(value)) {
      text_ += "null";
      return *this;
    }
    char buffer[40];
    std::snprintf(buffer, sizeof(buffer), "%.9g", value);
    text_ += buffer;
    return *this;
  }
  Object& Bool(const char* key, bool value) {
    Key(key);
    text_ += value ? "true" : "false";
    return *this;
  }
  Object& Raw(const char* key, const std::string& json) {
    Key(key);
    text_ += json;
    return *this;
  }
  std::string Done() const { return text_ + "}"; }

 private:
  void Key(const char* key) {
    text_ += text_.size() > 1 ? "," : "";
    AppendJsonString(&text_, key);
    text_ += ":";
  }
  std::string text_ = "{";
};

const ModelInfo* FindModel(const std::string& name) {
  for (const ModelInfo& model : kModels) {
    if (name == model.name) return &model;
  }
  return nullptr;
}

bool OnCuda(const std::string& device) { return CudaIndex(device).has_value(); }

}  // namespace

std::string PrecisionInEffect(const std::string& requested, const std::string& device) {
  if (requested == kPrecisionAmp) return OnCuda(device) ? "amp_fp16" : "amp_bf16";
  if (requested == kPrecisionBf16) return "amp_bf16";
  return requested;
}

double Percentile(std::vector<double> values, double percent) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double position = percent / 100 * static_cast<double>(values.size() - 1);
  const size_t low = static_cast<size_t>(std::floor(position));
  const size_t high = std::min(values.size() - 1, low + 1);
  return values[low] + (values[high] - values[low]) * (position - static_cast<double>(low));
}

std::string StartEvent(const SimOptions& options, int rank, int world_size, int local_rank) {
  const ModelInfo* model = FindModel(options.model);
  const int image_size = options.image_size > 0 ? options.image_size
                         : model != nullptr     ? model->default_image_size
                                                : 224;
  const bool loss_scaling = options.precision == kPrecisionAmp && OnCuda(options.device);
  return Object()
      .Str(contract::kFieldEvent, contract::kEventStart)
      .Int(contract::kFieldRank, rank)
      .Str(contract::kFieldModel, options.model)
      .Int(contract::kFieldParameters, 0)
      .Str(contract::kFieldPrecision, PrecisionInEffect(options.precision, options.device))
      .Str(contract::kFieldDevice, options.device)
      .Int(contract::kFieldWorldSize, world_size)
      .Int(contract::kFieldLocalRank, local_rank)
      .Int(contract::kFieldBatchSize, options.batch_size)
      .Int(contract::kFieldImageSize, image_size)
      .Int(contract::kFieldIterations, options.iterations)
      .Int(contract::kFieldWarmupIterations, options.warmup)
      .Str(contract::kFieldBackend, world_size > 1 ? "simulated" : "none")
      .Raw(contract::kFieldVersions, "{\"bench_sim_train\":\"1\"}")
      .Str(contract::kFieldRequestedPrecision, options.precision)
      .Bool(contract::kFieldLossScaling, loss_scaling)
      .Str(contract::kFieldData, options.data)
      .Int(contract::kFieldLoaderThreads, options.loader_threads)
      .Str(contract::kFieldModelKind,
           DataKindName(model != nullptr ? model->data_kind : DataKind::kClassification))
      .Bool(contract::kFieldSimulated, true)
      .Done();
}

std::string IterEvent(const SimOptions& options, int rank, int iteration, const RankStep& step,
                      double elapsed_s) {
  // A loss that falls slowly, as a training run's does; only its shape is simulated.
  const double loss = 6.9 / (1 + 0.01 * iteration);
  return Object()
      .Str(contract::kFieldEvent, contract::kEventIter)
      .Int(contract::kFieldRank, rank)
      .Int(contract::kFieldIteration, iteration)
      .Num(contract::kFieldStepTime, step.step_s)
      .Int(contract::kFieldImages, options.batch_size)
      .Num(contract::kFieldLoss, loss)
      .Num(contract::kFieldDataTime, step.data_s)
      .Num(contract::kFieldElapsed, elapsed_s)
      .Bool(contract::kFieldWarmup, iteration <= options.warmup)
      .Num(contract::kFieldComputeTime, step.compute_s())
      .Num(contract::kFieldForwardBackwardTime, step.forward_backward_s)
      .Num(contract::kFieldAllreduceWaitTime, step.allreduce_wait_s)
      .Num(contract::kFieldOptimizerTime, step.optimizer_s)
      .Done();
}

std::string SummaryEvent(const SimOptions& options, int rank, const std::vector<RankStep>& measured,
                         int64_t max_rss_bytes) {
  std::vector<double> steps;
  double window = 0, data = 0, compute = 0;
  for (const RankStep& step : measured) {
    steps.push_back(step.step_s);
    window += step.step_s;
    data += step.data_s;
    compute += step.compute_s();
  }
  const int64_t images = static_cast<int64_t>(measured.size()) * options.batch_size;
  const double median = Percentile(steps, 50);
  return Object()
      .Str(contract::kFieldEvent, contract::kEventSummary)
      .Int(contract::kFieldRank, rank)
      .Int(contract::kFieldMeasuredIterations, static_cast<int64_t>(measured.size()))
      .Int(contract::kFieldMeasuredImages, images)
      .Num(contract::kFieldWindow, window)
      .Num(contract::kFieldImagesPerSecond, window > 0 ? images / window : 0)
      .Num(contract::kFieldStepTimeMedian, median)
      .Num(contract::kFieldStepTimeP50, median)
      .Num(contract::kFieldStepTimeP90, Percentile(steps, 90))
      .Num(contract::kFieldStepTimeP99, Percentile(steps, 99))
      .Num(contract::kFieldDataTimeTotal, data)
      .Num(contract::kFieldComputeTimeTotal, compute)
      .Num(contract::kFieldComputeImagesPerSecond, compute > 0 ? images / compute : 0)
      .Int(contract::kFieldSkippedSteps, 0)
      .Int(contract::kFieldNonfiniteLosses, 0)
      .Int(contract::kFieldCorruptFiles, 0)
      .Int(contract::kFieldMaxRssBytes, max_rss_bytes)
      .Done();
}

std::string ErrorEvent(int rank, const std::string& message) {
  return Object()
      .Str(contract::kFieldEvent, contract::kEventError)
      .Int(contract::kFieldRank, rank)
      .Str(contract::kFieldMessage, message)
      .Done();
}

}  // namespace bench::sim
