// The user-facing names of models, precisions, data sources and job states: defined
// once here and used by benchd, bench-agent, benchctl and bench-train. Models form a
// registry (kModels): per model its default input size, its data kind (classification
// or detection) and its MLPerf MLLOG benchmark name.
//
// Standard library only (no Abseil, no protobuf), so that bench-train, which builds
// against libtorch alone, includes it too. common/spec_names.h maps these names to and
// from the v1 API's enums; common/configuration_key.cc and server/core/job.cc to and from the
// controller's domain enums.
#pragma once

#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>

namespace bench {

// What a model trains on: class labels per image, or boxes and classes per image.
enum class DataKind { kClassification, kDetection };

inline constexpr const char* DataKindName(DataKind kind) {
  return kind == DataKind::kDetection ? "detection" : "classification";
}

// One model bench-train can build (worker/train/models.cc builds each by its name).
struct ModelInfo {
  const char* name;
  int default_image_size;       // square input side when a spec or flag leaves it out
  int default_num_classes;      // outputs when a flag leaves it out (SSD: with background)
  DataKind data_kind;           // what its batches carry besides the images
  const char* mllog_benchmark;  // MLPerf MLLOG `submission_benchmark`: "resnet", "ssd"
};

// The model registry, in the order error messages and help list the models.
inline constexpr ModelInfo kModels[] = {
    {"resnet18", 224, 1000, DataKind::kClassification, "resnet"},
    {"resnet34", 224, 1000, DataKind::kClassification, "resnet"},
    {"resnet50", 224, 1000, DataKind::kClassification, "resnet"},
    {"resnet101", 224, 1000, DataKind::kClassification, "resnet"},
    {"resnet152", 224, 1000, DataKind::kClassification, "resnet"},
    {"ssd_resnet34", 300, 81, DataKind::kDetection, "ssd"},  // MLPerf's SSD300, COCO's 80 + 1
};

// kModels' names alone, in the same order (checked below), for JoinNames and flag help.
inline constexpr const char* kModelNames[] = {"resnet18",  "resnet34",  "resnet50",
                                              "resnet101", "resnet152", "ssd_resnet34"};

namespace names_internal {
constexpr bool SameName(const char* a, const char* b) {
  for (; *a != '\0' || *b != '\0'; ++a, ++b) {
    if (*a != *b) return false;
  }
  return true;
}
constexpr bool ModelNamesMatchRegistry() {
  if (std::size(kModelNames) != std::size(kModels)) return false;
  for (size_t i = 0; i < std::size(kModels); ++i) {
    if (!SameName(kModelNames[i], kModels[i].name)) return false;
  }
  return true;
}
}  // namespace names_internal
static_assert(names_internal::ModelNamesMatchRegistry(),
              "kModelNames must list kModels' names in the same order");

// Precisions a spec asks for (benchctl --precision, bench-train --precision).
inline constexpr char kPrecisionFp32[] = "fp32";  // TF32 off
inline constexpr char kPrecisionTf32[] = "tf32";  // CUDA only (compute capability >= 8.0)
inline constexpr char kPrecisionAmp[] = "amp";    // fp16 + loss scaling on CUDA, bf16 on CPU
inline constexpr char kPrecisionBf16[] = "bf16";  // bf16 autocast, no scaling
inline constexpr const char* kPrecisionNames[] = {kPrecisionFp32, kPrecisionTf32, kPrecisionAmp,
                                                  kPrecisionBf16};
inline constexpr char kPrecisionUnspecified[] = "unspecified";  // how an unset one prints

// The precision a rank runs at (bench-train's start event, reported back to benchd):
// fp32, tf32, or autocast in fp16 or bf16.
inline constexpr char kInEffectFp32[] = "fp32";
inline constexpr char kInEffectTf32[] = "tf32";
inline constexpr char kInEffectAmpFp16[] = "amp_fp16";
inline constexpr char kInEffectAmpBf16[] = "amp_bf16";

// Data sources (a job spec's data, bench-train --data). imagefolder and coco read a
// folder on the nodes (JobSpec data_path, bench-train --data-dir).
inline constexpr char kDataSynthetic[] = "synthetic";      // generated, no decoding
inline constexpr char kDataImageFolder[] = "imagefolder";  // JPEGs, a folder per class
inline constexpr char kDataCoco[] = "coco";  // annotations/instances_*.json + images
inline constexpr const char* kDataNames[] = {kDataSynthetic, kDataImageFolder, kDataCoco};

// Job states, in the order of the controller's JobState enum (server/core/job.h) and of the
// v1 API's (JOB_STATE_QUEUED = 1 ...); `terminal`: the job will not change any more.
struct JobStateNaming {
  const char* name;
  bool terminal;
};
inline constexpr JobStateNaming kJobStates[] = {
    {"QUEUED", false}, {"RUNNING", false},  {"SUCCEEDED", true},
    {"FAILED", true},  {"CANCELLED", true},
};
inline constexpr char kJobStateUnknown[] = "UNSPECIFIED";

// The registry's entry for `model`; null for an unknown name (names are case-sensitive).
inline const ModelInfo* FindModel(std::string_view model) {
  for (const ModelInfo& info : kModels) {
    if (model == info.name) return &info;
  }
  return nullptr;
}

inline bool IsKnownModel(std::string_view model) { return FindModel(model) != nullptr; }

// The names, separated by `separator` and the last two by `last`: "fp32, tf32, amp or bf16"
// by default, for messages and help.
template <typename Names>
std::string JoinNames(const Names& names, std::string_view separator = ", ",
                      std::string_view last = " or ") {
  std::string out;
  const size_t n = std::size(names);
  size_t i = 0;
  for (const char* name : names) {
    if (i > 0) out += (i + 1 == n) ? last : separator;
    out += name;
    ++i;
  }
  return out;
}

}  // namespace bench
