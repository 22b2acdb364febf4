#include "worker/train/event_writer.h"

#include <charconv>
#include <cmath>

#include "common/trainer_contract.h"

namespace bench_train {
namespace {

namespace contract = bench::trainer_contract;  // the events' names

// Length of the valid UTF-8 sequence starting at text[i], or 0 if invalid.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  size_t len = 0;
  uint32_t min_code = 0;
  uint32_t code = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2, min_code = 0x80, code = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, min_code = 0x800, code = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, min_code = 0x10000, code = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (code < min_code || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return len;
}

}  // namespace

std::string JsonQuote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20 || c == 0x7F) {
            static constexpr char kHex[] = "0123456789abcdef";
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      out += "\\ufffd";
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  out += '"';
  return out;
}

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
