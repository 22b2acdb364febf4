#include "server/core/spec_validation.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/names.h"
#include "common/quote.h"
#include "common/spec_defaults.h"
#include "common/status_macros.h"

namespace bench {
namespace {

constexpr int kMaxDevices = 4096;
constexpr int kMaxBatch = 65536;
constexpr int kMaxIterations = 10'000'000;
constexpr int kMinImageSize = 32;
constexpr int kMaxImageSize = 1024;
constexpr int kMaxLimitSeconds = 30 * 24 * 3600;  // 30 days

absl::Status FieldError(const char* field, const char* flag, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, " (", flag, "): ", problem));
}

// Which bytes a text field refuses.
enum class Bytes {
  kNoControl,       // every control byte: below 0x20, and 0x7f
  kNoNulOrNewline,  // NUL, CR and LF only
};

bool Refused(unsigned char c, Bytes rule) {
  if (rule == Bytes::kNoNulOrNewline) return c == 0 || c == '\n' || c == '\r';
  return c < 0x20 || c == 0x7f;
}

// `what` (e.g. "name", "label key") of `field` is at most `max_bytes` and holds no byte
// `rule` refuses; the error quotes a short prefix of the value.
absl::Status CheckText(const char* field, const char* flag, const std::string& what,
                       std::string_view value, size_t max_bytes, Bytes rule) {
  if (value.size() > max_bytes) {
    return FieldError(
        field, flag,
        absl::StrCat(what, " ", QuotePrefix(value), " is longer than ", max_bytes, " bytes"));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    if (Refused(c, rule)) {
      return FieldError(
          field, flag,
          absl::StrCat(what, " ", QuotePrefix(value), " contains a control byte (",
                       QuotePrefix(value.substr(i, 1)), " at byte ", i,
                       rule == Bytes::kNoControl ? "; none below 0x20 or 0x7f is allowed)"
                                                 : "; NUL, CR and LF are not allowed)"));
    }
  }
  return absl::OkStatus();
}

// A label map (job labels, node_labels): at most kMaxLabels entries; keys non-empty,
// without '=' or control bytes; values without NUL, CR or LF.
absl::Status CheckLabels(const char* field, const char* flag,
                         const std::map<std::string, std::string>& labels) {
  if (labels.size() > kMaxLabels) {
    return FieldError(
        field, flag,
        absl::StrCat(labels.size(), " labels, more than the ", kMaxLabels, " allowed"));
  }
  for (const auto& [key, value] : labels) {
    if (key.empty() || key.find('=') != std::string::npos) {
      return FieldError(
          field, flag,
          absl::StrCat("bad label key ", QuotePrefix(key), " (empty, or contains '=')"));
    }
    RETURN_IF_ERROR(CheckText(field, flag, "label key", key, kMaxLabelKeyBytes, Bytes::kNoControl));
    RETURN_IF_ERROR(CheckText(field, flag, absl::StrCat("value of label ", QuotePrefix(key, 24)),
                              value, kMaxLabelValueBytes, Bytes::kNoNulOrNewline));
  }
  return absl::OkStatus();
}

// 1-63 bytes of [A-Za-z0-9._-], starting with a letter or a digit.
bool IsNodeName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNodeNameBytes) return false;
  if (!absl::ascii_isalnum(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

absl::Status CheckAllowedNodes(const std::vector<std::string>& nodes) {
  if (nodes.size() > kMaxAllowedNodes) {
    return FieldError(
        "allowed_nodes", "--node",
        absl::StrCat(nodes.size(), " nodes, more than the ", kMaxAllowedNodes, " allowed"));
  }
  for (const std::string& node : nodes) {
    if (node.empty()) return FieldError("allowed_nodes", "--node", "an empty node name");
    if (!IsNodeName(node)) {
      return FieldError(
          "allowed_nodes", "--node",
          absl::StrCat("bad node name ", QuotePrefix(node), " (1 to ", kMaxNodeNameBytes,
                       " bytes of A-Z a-z 0-9 . _ -, starting with a letter or "
                       "a digit)"));
    }
  }
  return absl::OkStatus();
}

// imagefolder feeds classification models, coco detection ones.
absl::Status CheckDataKind(const JobSpec& spec) {
  if (spec.data == kDataSynthetic) return absl::OkStatus();
  const ModelInfo* model = FindModel(spec.model);
  if (model == nullptr) return absl::OkStatus();  // refused as unknown before this
  const bool detection = model->data_kind == DataKind::kDetection;
  const char* wanted = detection ? kDataCoco : kDataImageFolder;
  if (spec.data == wanted) return absl::OkStatus();
  return FieldError(
      "data", "--data",
      absl::StrCat(spec.model, " is a ", DataKindName(model->data_kind), " model: it trains on ",
                   wanted, " or ", kDataSynthetic, " data, not ", spec.data));
}

bool IsKnownData(std::string_view data) {
  for (const char* known : kDataNames) {
    if (data == known) return true;
  }
  return false;
}

// The data source, its folder and its decode threads (see the header).
absl::Status CheckData(const JobSpec& spec) {
  if (!IsKnownData(spec.data)) {
    return FieldError("data", "--data",
                      absl::StrCat("unknown data source ", QuotePrefix(spec.data),
                                   " (known: ", JoinNames(kDataNames), ")"));
  }
  if (spec.data == kDataSynthetic) {
    if (spec.data_vs_compute) {
      return FieldError("data_vs_compute", "--data-vs-compute",
                        absl::StrCat("compares a run on real data with one on synthetic data: "
                                     "give --data ",
                                     kDataImageFolder, " or ", kDataCoco, " and --data-path"));
    }
    if (!spec.data_path.empty()) {
      return FieldError(
          "data_path", "--data-path",
          absl::StrCat("synthetic data reads no folder, but the path ", QuotePrefix(spec.data_path),
                       " was given: leave it out, "
                       "or use --data ",
                       kDataImageFolder, " or ", kDataCoco));
    }
  } else {
    if (spec.data_path.empty()) {
      return FieldError("data_path", "--data-path",
                        absl::StrCat(spec.data,
                                     " data needs the folder it is in on the nodes "
                                     "(an absolute path)"));
    }
    RETURN_IF_ERROR(CheckText("data_path", "--data-path", "data path", spec.data_path,
                              kMaxDataPathBytes, Bytes::kNoControl));
    if (spec.data_path.front() != '/') {
      return FieldError("data_path", "--data-path",
                        absl::StrCat("data path ", QuotePrefix(spec.data_path),
                                     " is relative: give an absolute path (the folder on "
                                     "the nodes, e.g. /data/imagenet/train)"));
    }
  }
  if (spec.loader_threads < 0 || spec.loader_threads > kMaxLoaderThreads) {
    return FieldError("loader_threads", "--loader-threads",
                      absl::StrCat("must be between 0 (bench-train's default) and ",
                                   kMaxLoaderThreads, ", got ", spec.loader_threads));
  }
  return CheckDataKind(spec);
}

}  // namespace

absl::Status NormalizeAndValidateSpec(JobSpec& spec) {
  if (spec.data.empty()) spec.data = kDefaultData;
  RETURN_IF_ERROR(
      CheckText("name", "--name", "name", spec.name, kMaxJobNameBytes, Bytes::kNoControl));
  RETURN_IF_ERROR(CheckText("request_id", "--request-id", "request id", spec.request_id,
                            kMaxRequestIdBytes, Bytes::kNoControl));
  RETURN_IF_ERROR(CheckLabels("labels", "--label", spec.labels));
  RETURN_IF_ERROR(
      CheckText("model", "--model", "model", spec.model, kMaxModelBytes, Bytes::kNoControl));
  RETURN_IF_ERROR(
      CheckText("data", "--data", "data source", spec.data, kMaxDataBytes, Bytes::kNoControl));
  if (!IsKnownModel(spec.model)) {
    return FieldError("model", "--model",
                      absl::StrCat("unknown model ", QuotePrefix(spec.model),
                                   " (known: ", JoinNames(kModelNames, ", ", ", "), ")"));
  }
  if (spec.nodes < 0 || spec.devices_per_node < 0) {
    return FieldError(spec.nodes < 0 ? "nodes" : "devices_per_node",
                      spec.nodes < 0 ? "--nodes" : "--gpus-per-node", "must not be negative");
  }
  if ((spec.nodes > 0) != (spec.devices_per_node > 0)) {
    return FieldError("nodes", "--nodes",
                      "--nodes and --gpus-per-node go together: give both or neither");
  }
  if (spec.devices == 0) {
    spec.devices = DevicesOfShape(spec.nodes, spec.devices_per_node, kMaxDevices);
  }
  if (spec.devices < 1 || spec.devices > kMaxDevices) {
    return FieldError("devices", "--gpus",
                      absl::StrCat("must be between 1 and ", kMaxDevices, ", got ", spec.devices));
  }
  if (spec.precision == Precision::kUnspecified) {
    return FieldError("precision", "--precision",
                      absl::StrCat("must be ", JoinNames(kPrecisionNames)));
  }
  if (spec.batch_size < 1 || spec.batch_size > kMaxBatch) {
    return FieldError("batch_size", "--bs",
                      absl::StrCat("must be between 1 and ", kMaxBatch, ", got ", spec.batch_size));
  }
  if (spec.iterations < 1 || spec.iterations > kMaxIterations) {
    return FieldError(
        "iterations", "--iters",
        absl::StrCat("must be between 1 and ", kMaxIterations, ", got ", spec.iterations));
  }
  if (spec.warmup_iterations < 0) {
    return FieldError("warmup_iterations", "--warmup",
                      absl::StrCat("must not be negative, got ", spec.warmup_iterations));
  }
  if (spec.warmup_iterations >= spec.iterations) {
    return FieldError(
        "warmup_iterations", "--warmup",
        absl::StrCat("must be less than iterations (", spec.iterations,
                     ") so that some iterations are measured, got ", spec.warmup_iterations));
  }
  if (spec.image_size < kMinImageSize || spec.image_size > kMaxImageSize) {
    return FieldError("image_size", "--image-size",
                      absl::StrCat("must be between ", kMinImageSize, " and ", kMaxImageSize,
                                   ", got ", spec.image_size));
  }
  if (spec.nodes > 0 && ShapeDevices(spec.nodes, spec.devices_per_node) != spec.devices) {
    return FieldError("nodes", "--nodes",
                      absl::StrCat(spec.nodes, " nodes × ", spec.devices_per_node,
                                   " per node (--gpus-per-node) is not the ", spec.devices,
                                   " devices asked for (--gpus)"));
  }
  RETURN_IF_ERROR(CheckAllowedNodes(spec.allowed_nodes));
  RETURN_IF_ERROR(CheckLabels("node_labels", "--node-label", spec.node_labels));
  if (spec.wall_time_limit_s < 0 || spec.wall_time_limit_s > kMaxLimitSeconds) {
    return FieldError("wall_time_limit_s", "--wall-time",
                      absl::StrCat("must be between 0 (benchd's default) and ", kMaxLimitSeconds,
                                   " seconds, got ", spec.wall_time_limit_s));
  }
  if (spec.hang_timeout_s < 0 || spec.hang_timeout_s > kMaxLimitSeconds) {
    return FieldError("hang_timeout_s", "--hang-timeout",
                      absl::StrCat("must be between 0 (benchd's default) and ", kMaxLimitSeconds,
                                   " seconds, got ", spec.hang_timeout_s));
  }
  // Training-mode BatchNorm needs more than one value per channel: the last stage of a
  // ResNet sees batch × side² values, the side being the input's after five stride-2
  // reductions (the 7×7 conv, the max pool, and stages 2-4).
  int side = spec.image_size;
  for (int i = 0; i < 5; ++i) side = (side - 1) / 2 + 1;
  if (static_cast<int64_t>(spec.batch_size) * side * side < 2) {
    return FieldError("batch_size", "--bs",
                      absl::StrCat("a batch of ", spec.batch_size, " at ", spec.image_size,
                                   " px leaves one value per channel in the last stage, "
                                   "which BatchNorm cannot train on: use --bs 2 or more, "
                                   "or --image-size 33 or more"));
  }
  return CheckData(spec);
}

}  // namespace bench
