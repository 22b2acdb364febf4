#include "server/spec_validation.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/names.h"
#include "common/spec_defaults.h"

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

}  // namespace

absl::Status NormalizeAndValidateSpec(JobSpec& spec) {
  if (spec.data.empty()) spec.data = kDefaultData;
  if (!IsKnownModel(spec.model)) {
    return FieldError("model", "--model",
                      absl::StrCat("unknown model \"", spec.model,
                                   "\" (known: ", JoinNames(kModelNames, ", ", ", "), ")"));
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
                      absl::StrCat("must be between 1 and ", kMaxDevices, ", got ",
                                   spec.devices));
  }
  if (spec.precision == Precision::kUnspecified) {
    return FieldError("precision", "--precision",
                      absl::StrCat("must be ", JoinNames(kPrecisionNames)));
  }
  if (spec.batch_size < 1 || spec.batch_size > kMaxBatch) {
    return FieldError("batch_size", "--bs",
                      absl::StrCat("must be between 1 and ", kMaxBatch, ", got ",
                                   spec.batch_size));
  }
  if (spec.iterations < 1 || spec.iterations > kMaxIterations) {
    return FieldError("iterations", "--iters",
                      absl::StrCat("must be between 1 and ", kMaxIterations, ", got ",
                                   spec.iterations));
  }
  if (spec.warmup_iterations < 0) {
    return FieldError("warmup_iterations", "--warmup",
                      absl::StrCat("must not be negative, got ", spec.warmup_iterations));
  }
  if (spec.warmup_iterations >= spec.iterations) {
    return FieldError("warmup_iterations", "--warmup",
                      absl::StrCat("must be less than iterations (", spec.iterations,
                                   ") so that some iterations are measured, got ",
                                   spec.warmup_iterations));
  }
  if (spec.image_size < kMinImageSize || spec.image_size > kMaxImageSize) {
    return FieldError("image_size", "--image-size",
                      absl::StrCat("must be between ", kMinImageSize, " and ",
                                   kMaxImageSize, ", got ", spec.image_size));
  }
  if (spec.nodes > 0 && ShapeDevices(spec.nodes, spec.devices_per_node) != spec.devices) {
    return FieldError("nodes", "--nodes",
                      absl::StrCat(spec.nodes, " nodes × ", spec.devices_per_node,
                                   " per node (--gpus-per-node) is not the ", spec.devices,
                                   " devices asked for (--gpus)"));
  }
  for (const std::string& node : spec.allowed_nodes) {
    if (node.empty()) return FieldError("allowed_nodes", "--node", "an empty node name");
  }
  for (const auto& [key, value] : spec.node_labels) {
    if (key.empty() || key.find('=') != std::string::npos) {
      return FieldError("node_labels", "--node-label",
                        absl::StrCat("bad label key \"", key, "\" (empty, or contains '=')"));
    }
  }
  if (spec.wall_time_limit_s < 0 || spec.wall_time_limit_s > kMaxLimitSeconds) {
    return FieldError("wall_time_limit_s", "--wall-time",
                      absl::StrCat("must be between 0 (benchd's default) and ",
                                   kMaxLimitSeconds, " seconds, got ", spec.wall_time_limit_s));
  }
  if (spec.hang_timeout_s < 0 || spec.hang_timeout_s > kMaxLimitSeconds) {
    return FieldError("hang_timeout_s", "--hang-timeout",
                      absl::StrCat("must be between 0 (benchd's default) and ",
                                   kMaxLimitSeconds, " seconds, got ", spec.hang_timeout_s));
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
  if (spec.data != kDataSynthetic) {
    return FieldError("data", "--data",
                      absl::StrCat("unknown data source \"", spec.data,
                                   "\" (known: ", kDataSynthetic, ")"));
  }
  return absl::OkStatus();
}

}  // namespace bench
