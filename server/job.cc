#include "server/job.h"

namespace bench {

const char* JobStateText(JobState state) {
  switch (state) {
    case JobState::kQueued: return "QUEUED";
    case JobState::kRunning: return "RUNNING";
    case JobState::kSucceeded: return "SUCCEEDED";
    case JobState::kFailed: return "FAILED";
    case JobState::kCancelled: return "CANCELLED";
  }
  return "UNKNOWN";
}

const char* PrecisionText(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kAmp: return "amp";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16";
    case Precision::kUnspecified: break;
  }
  return "unspecified";
}

const char* DeviceKindText(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCuda: return "cuda";
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kNone: break;
  }
  return "";
}

bool IsTerminal(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCancelled;
}

bool JobSpec::operator==(const JobSpec& o) const {
  return model == o.model && devices == o.devices && precision == o.precision &&
         batch_size == o.batch_size && iterations == o.iterations &&
         warmup_iterations == o.warmup_iterations && image_size == o.image_size &&
         data == o.data && name == o.name && labels == o.labels &&
         request_id == o.request_id;
}

}  // namespace bench
