#include "worker/train/event_writer.h"

#include <charconv>
#include <cmath>

namespace bench_train {
namespace {

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
  builder
      .Add("event", "start")
      .Add("rank", e.rank)
      .Add("model", e.model)
      .Add("parameters", e.parameters)
      .Add("precision", e.precision)
      .Add("device", e.device)
      .Add("world_size", e.world_size)
      .Add("local_rank", e.local_rank)
      .Add("batch_size", e.batch_size)
      .Add("image_size", e.image_size)
      .Add("iterations", e.iterations)
      .Add("warmup_iterations", e.warmup_iterations)
      .Add("backend", e.backend)
      .AddRaw("versions", versions.Build())
      .Add("requested_precision", e.requested_precision)
      .Add("loss_scaling", e.loss_scaling)
      .Add("data", e.data)
      .Add("dataset_images", e.dataset_images)
      .Add("dataset_classes", e.dataset_classes)
      .Add("loader_threads", e.loader_threads)
      .Add("channels_last", e.channels_last)
      .Add("cuda_graphs", e.cuda_graphs)
      .Add("host_memory_cache", e.host_memory_cache)
      .AddDouble("lr", e.lr)
      .Add("lr_warmup_iterations", e.lr_warmup_iterations)
      .Add("momentum", e.momentum)
      .Add("weight_decay", e.weight_decay)
      .Add("bn_weight_decay", e.bn_weight_decay)
      .Add("label_smoothing", e.label_smoothing)
      .Add("zero_init_residual", e.zero_init_residual)
      .Add("allreduce_buckets", e.allreduce_buckets)
      .Add("broadcast_buffers", e.broadcast_buffers)
      .Add("model_kind", e.model_kind);
  if (!e.cuda_graphs_fallback.empty()) builder.Add("cuda_graphs_fallback", e.cuda_graphs_fallback);
  return builder.Build();
}

std::string FormatEvent(const IterEvent& e) {
  JsonObjectBuilder builder;
  builder
      .Add("event", "iter")
      .Add("rank", e.rank)
      .Add("iteration", e.iteration)
      .Add("step_time_s", e.step_time_s)
      .Add("images", e.images)
      .AddDouble("loss", e.loss)
      .Add("data_time_s", e.data_time_s)
      .Add("elapsed_s", e.elapsed_s)
      .Add("warmup", e.warmup)
      .Add("compute_time_s", e.compute_time_s)
      .AddDouble("lr", e.lr);
  if (e.loss_scale) builder.AddDouble("loss_scale", *e.loss_scale);
  return builder.Build();
}

std::string FormatEvent(const SummaryEvent& e) {
  JsonObjectBuilder builder;
  builder
      .Add("event", "summary")
      .Add("rank", e.rank)
      .Add("measured_iterations", e.measured_iterations)
      .Add("measured_images", e.measured_images)
      .Add("window_s", e.window_s)
      .Add("images_per_second", e.images_per_second)
      .Add("step_time_median_s", e.step_time_median_s)
      .Add("step_time_p50_s", e.step_time_p50_s)
      .Add("step_time_p90_s", e.step_time_p90_s)
      .Add("step_time_p99_s", e.step_time_p99_s)
      .Add("data_time_total_s", e.data_time_total_s)
      .Add("compute_time_total_s", e.compute_time_total_s)
      .Add("compute_images_per_second", e.compute_images_per_second)
      .Add("skipped_steps", e.skipped_steps)
      .Add("nonfinite_losses", e.nonfinite_losses)
      .Add("corrupt_files", e.corrupt_files);
  if (e.peak_memory_bytes) builder.Add("peak_memory_bytes", *e.peak_memory_bytes);
  if (e.synthetic_images_per_second) {
    builder.Add("synthetic_images_per_second", *e.synthetic_images_per_second);
  }
  if (e.data_vs_compute) builder.Add("data_vs_compute", *e.data_vs_compute);
  builder.Add("max_rss_bytes", e.max_rss_bytes);
  return builder.Build();
}

std::string FormatEvent(const ErrorEvent& e) {
  return JsonObjectBuilder()
      .Add("event", "error")
      .Add("rank", e.rank)
      .Add("message", e.message)
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
