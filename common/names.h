// The user-facing names of models, precisions, data sources and job states: defined
// once here and used by benchd, bench-agent, benchctl and bench-train.
//
// Standard library only (no Abseil, no protobuf), so that bench-train, which builds
// against libtorch alone, includes it too. common/spec_names.h maps these names to and
// from the v1 API's enums; server/job.cc to and from the controller's domain enums.
#pragma once

#include <iterator>
#include <string>
#include <string_view>

namespace bench {

// Models bench-train can build (its registry's names, worker/train/models.cc), in the
// order error messages list them.
inline constexpr const char* kModelNames[] = {"resnet18", "resnet34", "resnet50", "resnet101",
                                              "resnet152"};

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

// Job states, in the order of the controller's JobState enum (server/job.h) and of the
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

inline bool IsKnownModel(std::string_view model) {
  for (const char* known : kModelNames) {
    if (model == known) return true;
  }
  return false;
}

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
