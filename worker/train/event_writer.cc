#include "worker/train/event_writer.h"

#include <charconv>
#include <cmath>

#include "common/json_escape.h"
#include "common/trainer_contract.h"

namespace bench_train {
namespace {

namespace contract = bench::trainer_contract;  // the events' names

}  // namespace

// The one escaper (common/json_escape.h): valid UTF-8 kept, each invalid byte U+FFFD.
std::string JsonQuote(std::string_view text) { return bench::JsonString(text); }

std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[64];
  auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (ec != std::errc()) return "null";
  return std::string(buffer, ptr);
}

std::string JsonDouble(double value) {
  if (std::isnan(value)) return "\"NaN\"";
  if (std::isinf(value)) return value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  return JsonNumber(value);
}

void JsonObjectBuilder::Key(std::string_view key) {
  if (body_.size() > 1) body_ += ',';
  body_ += JsonQuote(key);
  body_ += ':';
}

JsonObjectBuilder& JsonObjectBuilder::Add(std::string_view key, std::string_view value) {
  Key(key);
  body_ += JsonQuote(value);
  return *this;
}

JsonObjectBuilder& JsonObjectBuilder::Add(std::string_view key, int64_t value) {
  Key(key);
  body_ += std::to_string(value);
  return *this;
}

JsonObjectBuilder& JsonObjectBuilder::Add(std::string_view key, double value) {
  Key(key);
  body_ += JsonNumber(value);
  return *this;
}

JsonObjectBuilder& JsonObjectBuilder::AddDouble(std::string_view key, double value) {
  Key(key);
  body_ += JsonDouble(value);
  return *this;
}

JsonObjectBuilder& JsonObjectBuilder::Add(std::string_view key, bool value) {
  Key(key);
  body_ += value ? "true" : "false";
  return *this;
}

JsonObjectBuilder& JsonObjectBuilder::AddRaw(std::string_view key, std::string_view json) {
  Key(key);
  body_ += json;
  return *this;
}

std::string FormatEvent(const StartEvent& e) {
  JsonObjectBuilder versions;
  for (const auto& [name, version] : e.versions) versions.Add(name, version);
  JsonObjectBuilder builder;
  builder.Add(contract::kFieldEvent, contract::kEventStart)
      .Add(contract::kFieldRank, e.rank)
      .Add(contract::kFieldModel, e.model)
      .Add(contract::kFieldParameters, e.parameters)
      .Add(contract::kFieldPrecision, e.precision)
      .Add(contract::kFieldDevice, e.device)
      .Add(contract::kFieldWorldSize, e.world_size)
      .Add(contract::kFieldLocalRank, e.local_rank)
      .Add(contract::kFieldBatchSize, e.batch_size)
      .Add(contract::kFieldImageSize, e.image_size)
      .Add(contract::kFieldIterations, e.iterations)
      .Add(contract::kFieldWarmupIterations, e.warmup_iterations)
      .Add(contract::kFieldBackend, e.backend)
      .AddRaw(contract::kFieldVersions, versions.Build())
      .Add(contract::kFieldRequestedPrecision, e.requested_precision)
      .Add(contract::kFieldLossScaling, e.loss_scaling)
      .Add(contract::kFieldData, e.data)
      .Add(contract::kFieldDatasetImages, e.dataset_images)
      .Add(contract::kFieldDatasetClasses, e.dataset_classes)
      .Add(contract::kFieldLoaderThreads, e.loader_threads)
      .Add(contract::kFieldChannelsLast, e.channels_last)
      .Add(contract::kFieldCudaGraphs, e.cuda_graphs)
      .Add(contract::kFieldHostMemoryCache, e.host_memory_cache)
      .AddDouble(contract::kFieldLr, e.lr)
      .Add(contract::kFieldLrWarmupIterations, e.lr_warmup_iterations)
      .Add(contract::kFieldMomentum, e.momentum)
      .Add(contract::kFieldWeightDecay, e.weight_decay)
      .Add(contract::kFieldBnWeightDecay, e.bn_weight_decay)
      .Add(contract::kFieldLabelSmoothing, e.label_smoothing)
      .Add(contract::kFieldZeroInitResidual, e.zero_init_residual)
      .Add(contract::kFieldAllreduceBuckets, e.allreduce_buckets)
      .Add(contract::kFieldBroadcastBuffers, e.broadcast_buffers)
      .Add(contract::kFieldModelKind, e.model_kind);
  if (!e.cuda_graphs_fallback.empty())
    builder.Add(contract::kFieldCudaGraphsFallback, e.cuda_graphs_fallback);
  return builder.Build();
}

std::string FormatEvent(const IterEvent& e) {
  JsonObjectBuilder builder;
  builder.Add(contract::kFieldEvent, contract::kEventIter)
      .Add(contract::kFieldRank, e.rank)
      .Add(contract::kFieldIteration, e.iteration)
      .Add(contract::kFieldStepTime, e.step_time_s)
      .Add(contract::kFieldImages, e.images)
      .AddDouble(contract::kFieldLoss, e.loss)
      .Add(contract::kFieldDataTime, e.data_time_s)
      .Add(contract::kFieldElapsed, e.elapsed_s)
      .Add(contract::kFieldWarmup, e.warmup)
      .Add(contract::kFieldComputeTime, e.compute_time_s)
      .AddDouble(contract::kFieldLr, e.lr);
  if (e.loss_scale) builder.AddDouble(contract::kFieldLossScale, *e.loss_scale);
  if (e.forward_backward_time_s) {
    builder.Add(contract::kFieldForwardBackwardTime, *e.forward_backward_time_s);
  }
  if (e.allreduce_wait_time_s) {
    builder.Add(contract::kFieldAllreduceWaitTime, *e.allreduce_wait_time_s);
  }
  if (e.optimizer_time_s) builder.Add(contract::kFieldOptimizerTime, *e.optimizer_time_s);
  return builder.Build();
}

std::string FormatEvent(const SummaryEvent& e) {
  JsonObjectBuilder builder;
  builder.Add(contract::kFieldEvent, contract::kEventSummary)
      .Add(contract::kFieldRank, e.rank)
      .Add(contract::kFieldMeasuredIterations, e.measured_iterations)
      .Add(contract::kFieldMeasuredImages, e.measured_images)
      .Add(contract::kFieldWindow, e.window_s)
      .Add(contract::kFieldImagesPerSecond, e.images_per_second)
      .Add(contract::kFieldStepTimeMedian, e.step_time_median_s)
      .Add(contract::kFieldStepTimeP50, e.step_time_p50_s)
      .Add(contract::kFieldStepTimeP90, e.step_time_p90_s)
      .Add(contract::kFieldStepTimeP99, e.step_time_p99_s)
      .Add(contract::kFieldDataTimeTotal, e.data_time_total_s)
      .Add(contract::kFieldComputeTimeTotal, e.compute_time_total_s)
      .Add(contract::kFieldComputeImagesPerSecond, e.compute_images_per_second)
      .Add(contract::kFieldSkippedSteps, e.skipped_steps)
      .Add(contract::kFieldNonfiniteLosses, e.nonfinite_losses)
      .Add(contract::kFieldCorruptFiles, e.corrupt_files);
  if (e.forward_backward_time_total_s) {
    builder.Add(contract::kFieldForwardBackwardTimeTotal, *e.forward_backward_time_total_s);
  }
  if (e.allreduce_wait_time_total_s) {
    builder.Add(contract::kFieldAllreduceWaitTimeTotal, *e.allreduce_wait_time_total_s);
  }
  if (e.optimizer_time_total_s) {
    builder.Add(contract::kFieldOptimizerTimeTotal, *e.optimizer_time_total_s);
  }
  if (e.peak_memory_bytes) builder.Add(contract::kFieldPeakMemoryBytes, *e.peak_memory_bytes);
  if (e.synthetic_images_per_second) {
    builder.Add(contract::kFieldSyntheticImagesPerSecond, *e.synthetic_images_per_second);
  }
  if (e.data_vs_compute) builder.Add(contract::kFieldDataVsCompute, *e.data_vs_compute);
  builder.Add(contract::kFieldMaxRssBytes, e.max_rss_bytes);
  return builder.Build();
}

std::string FormatEvent(const ErrorEvent& e) {
  return JsonObjectBuilder()
      .Add(contract::kFieldEvent, contract::kEventError)
      .Add(contract::kFieldRank, e.rank)
      .Add(contract::kFieldMessage, e.message)
      .Build();
}

void EventWriter::WriteLine(const std::string& json) {
  // One write of the whole line: another writer to stdout (NCCL_DEBUG logs, say) cannot
  // land between the object and its newline.
  std::string line = json + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace bench_train
