// bench-train's JSON-lines event stream (docs/trainer-events.md).
//
// Torch-free. JsonObjectBuilder builds one flat JSON object; the Format*Event
// functions turn event structs into one line of JSON (no trailing newline);
// EventWriter writes each event as one line and flushes it. Field names and
// meanings are the contract in docs/trainer-events.md: add fields, never rename.
#ifndef BENCHFLEET_WORKER_TRAIN_EVENT_WRITER_H_
#define BENCHFLEET_WORKER_TRAIN_EVENT_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace bench_train {

// Returns `text` as a JSON string literal, quotes included. Escapes '"', '\\' and
// control characters; valid UTF-8 passes through; each byte of invalid UTF-8
// becomes U+FFFD so that the output is always valid JSON.
std::string JsonQuote(std::string_view text);

// Formats a double as a JSON number (shortest round-trip form). NaN and
// infinities, which JSON cannot represent, become null.
std::string JsonNumber(double value);

// Formats a double as the proto3 JSON mapping does: a finite value as JsonNumber, NaN
// as the string "NaN", infinities as "Infinity" and "-Infinity". For fields where a
// non-finite value is data (a diverged loss), not a missing one.
std::string JsonDouble(double value);

// Appends "key":value pairs in call order. Keys must be unique (not checked).
class JsonObjectBuilder {
 public:
  JsonObjectBuilder& Add(std::string_view key, std::string_view value);
  JsonObjectBuilder& Add(std::string_view key, const char* value) {
    return Add(key, std::string_view(value));
  }
  JsonObjectBuilder& Add(std::string_view key, const std::string& value) {
    return Add(key, std::string_view(value));
  }
  JsonObjectBuilder& Add(std::string_view key, int64_t value);
  JsonObjectBuilder& Add(std::string_view key, int value) {
    return Add(key, static_cast<int64_t>(value));
  }
  JsonObjectBuilder& Add(std::string_view key, double value);  // JsonNumber
  // JsonDouble: a non-finite value is written as "NaN", "Infinity" or "-Infinity".
  JsonObjectBuilder& AddDouble(std::string_view key, double value);
  JsonObjectBuilder& Add(std::string_view key, bool value);
  // `json` must already be valid JSON (e.g. a nested object).
  JsonObjectBuilder& AddRaw(std::string_view key, std::string_view json);

  std::string Build() const { return body_ + "}"; }

 private:
  void Key(std::string_view key);
  std::string body_ = "{";
};

struct StartEvent {
  int rank = 0;
  std::string model;
  int64_t parameters = 0;
  std::string precision;  // in effect: "fp32", "tf32", "amp_bf16", "amp_fp16"
  std::string device;     // "cpu", "cuda:0", ...
  int world_size = 1;
  int local_rank = 0;
  int64_t batch_size = 0;  // per rank
  int64_t image_size = 0;
  int64_t iterations = 0;
  int64_t warmup_iterations = 0;
  std::string backend;  // "none", "gloo", "nccl"
  // Always "torch" and "bench_train"; "cuda", "cudnn", "nccl" where known.
  std::map<std::string, std::string> versions;
  // Added with the training recipe (docs/trainer-events.md).
  std::string requested_precision;  // as given to --precision
  bool loss_scaling = false;
  std::string data;  // "synthetic" or "imagefolder"
  int64_t dataset_images = 0;   // imagefolder: files found (0 for synthetic)
  int64_t dataset_classes = 0;  // imagefolder: class folders
  int loader_threads = 0;       // imagefolder: decode threads
  bool channels_last = false;
  bool cuda_graphs = false;  // in effect: the step is replayed from a captured graph
  // Why a planned CUDA graph capture fell back to eager steps; empty (and not
  // written) if it did not.
  std::string cuda_graphs_fallback;
  bool host_memory_cache = false;  // freed host memory is kept for reuse (host_memory.h)
  double lr = 0;  // peak (written as JsonDouble)
  int64_t lr_warmup_iterations = 0;
  double momentum = 0;
  double weight_decay = 0;
  bool bn_weight_decay = false;
  double label_smoothing = 0;
  bool zero_init_residual = false;
  int64_t allreduce_buckets = 0;  // 0 without a process group
  bool broadcast_buffers = false;  // rank 0's BatchNorm statistics broadcast every step
  // "classification" or "detection" (common/names.h, the model's data kind).
  std::string model_kind = "classification";
};

// loss, lr and loss_scale are written as JsonDouble: a NaN or infinite loss is data.
struct IterEvent {
  int rank = 0;
  int64_t iteration = 0;  // 1-based
  double step_time_s = 0;
  int64_t images = 0;  // this rank's images in the step
  double loss = 0;
  double data_time_s = 0;
  double elapsed_s = 0;  // start of iteration 1 to the end of this one
  bool warmup = false;
  double compute_time_s = 0;          // the step without waiting for data
  double lr = 0;                      // learning rate used by the step
  std::optional<double> loss_scale;   // fp16 loss scaling only: the scale after the step
  // The step split (docs/trainer-events.md): all three or none (a replayed CUDA graph).
  std::optional<double> forward_backward_time_s;
  std::optional<double> allreduce_wait_time_s;
  std::optional<double> optimizer_time_s;
};

struct SummaryEvent {
  int rank = 0;
  int64_t measured_iterations = 0;
  int64_t measured_images = 0;
  double window_s = 0;
  double images_per_second = 0;
  double step_time_median_s = 0;
  double step_time_p50_s = 0;
  double step_time_p90_s = 0;
  double step_time_p99_s = 0;
  double data_time_total_s = 0;     // measured iterations
  double compute_time_total_s = 0;  // measured iterations
  double compute_images_per_second = 0;  // measured_images / compute_time_total_s
  // The step split's sums over the measured iterations, when each of them has it.
  std::optional<double> forward_backward_time_total_s;
  std::optional<double> allreduce_wait_time_total_s;
  std::optional<double> optimizer_time_total_s;
  // --data-vs-compute: the same configuration's throughput on synthetic data right after,
  // and images_per_second / that (1: the data pipeline costs nothing; 0.5: it halves it).
  std::optional<double> synthetic_images_per_second;
  std::optional<double> data_vs_compute;
  int64_t skipped_steps = 0;        // fp16 overflow skips, all iterations
  int64_t nonfinite_losses = 0;     // iterations whose loss was not finite, warm-up included
  int64_t corrupt_files = 0;        // unreadable images skipped (imagefolder)
  std::optional<int64_t> peak_memory_bytes;  // CUDA: caching allocator's peak allocation
  int64_t max_rss_bytes = 0;        // the process's peak resident set (host memory)
};

struct ErrorEvent {
  int rank = 0;
  std::string message;
};

std::string FormatEvent(const StartEvent& event);
std::string FormatEvent(const IterEvent& event);
std::string FormatEvent(const SummaryEvent& event);
std::string FormatEvent(const ErrorEvent& event);

// Writes events as lines to `out` (not owned; stdout in bench-train) and flushes
// after each line. Thread-safe: lines from concurrent callers never interleave.
class EventWriter {
 public:
  explicit EventWriter(std::FILE* out) : out_(out) {}
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  template <typename Event>
  void Write(const Event& event) {
    WriteLine(FormatEvent(event));
  }
  void WriteLine(const std::string& json);

 private:
  std::mutex mu_;
  std::FILE* out_;
};

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_EVENT_WRITER_H_
