#include "worker/agent/trainer_event_parser.h"

#include <cmath>
#include <limits>
#include <optional>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/trainer_contract.h"

namespace bench::agent {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;
namespace contract = bench::trainer_contract;  // the events' names

const Value* Field(const Struct& object, const char* key) {
  auto it = object.fields().find(key);
  return it == object.fields().end() ? nullptr : &it->second;
}

double Number(const Struct& object, const char* key) {
  const Value* value = Field(object, key);
  if (value == nullptr || value->kind_case() != Value::kNumberValue) return 0;
  return value->number_value();
}

// A double as the proto3 JSON mapping writes it: a number, or "NaN", "Infinity",
// "-Infinity". null (older trainers wrote every non-finite value so) reads as NaN;
// absent or anything else as 0.
double Double(const Struct& object, const char* key) {
  const Value* value = Field(object, key);
  if (value == nullptr) return 0;
  switch (value->kind_case()) {
    case Value::kNumberValue:
      return value->number_value();
    case Value::kNullValue:
      return std::numeric_limits<double>::quiet_NaN();
    case Value::kStringValue:
      if (value->string_value() == "NaN") return std::numeric_limits<double>::quiet_NaN();
      if (value->string_value() == "Infinity") return std::numeric_limits<double>::infinity();
      if (value->string_value() == "-Infinity") return -std::numeric_limits<double>::infinity();
      return 0;
    default:
      return 0;
  }
}

// An optional time: a number, or "NaN", "Infinity", "-Infinity" as the proto3 JSON mapping
// writes them (read as themselves, for the controller to refuse); absent, null or anything
// else is no data (nullopt), never 0.
std::optional<double> OptionalDouble(const Struct& object, const char* key) {
  const Value* value = Field(object, key);
  if (value == nullptr) return std::nullopt;
  if (value->kind_case() == Value::kNumberValue) return value->number_value();
  if (value->kind_case() == Value::kStringValue) {
    if (value->string_value() == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (value->string_value() == "Infinity") return std::numeric_limits<double>::infinity();
    if (value->string_value() == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

int64_t Integer(const Struct& object, const char* key) {
  double value = Number(object, key);
  if (!std::isfinite(value)) return 0;
  if (value >= 9.2e18 || value <= -9.2e18) return 0;
  return static_cast<int64_t>(std::llround(value));
}

int32_t Int32(const Struct& object, const char* key) {
  int64_t value = Integer(object, key);
  if (value > std::numeric_limits<int32_t>::max() ||
      value < std::numeric_limits<int32_t>::min()) {
    return 0;
  }
  return static_cast<int32_t>(value);
}

std::string String(const Struct& object, const char* key) {
  const Value* value = Field(object, key);
  if (value == nullptr || value->kind_case() != Value::kStringValue) return "";
  return value->string_value();
}

bool Bool(const Struct& object, const char* key) {
  const Value* value = Field(object, key);
  return value != nullptr && value->kind_case() == Value::kBoolValue && value->bool_value();
}

}  // namespace

absl::StatusOr<TrainerEvent> ParseTrainerEvent(absl::string_view line) {
  absl::string_view trimmed = absl::StripAsciiWhitespace(line);
  if (trimmed.empty() || trimmed.front() != '{') {
    return absl::InvalidArgumentError("not a JSON object");
  }
  Struct object;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto parsed = google::protobuf::util::JsonStringToMessage(
      std::string(trimmed), &object, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("not JSON: ", parsed.ToString()));
  }
  const Value* event = Field(object, contract::kFieldEvent);
  if (event == nullptr || event->kind_case() != Value::kStringValue) {
    return absl::InvalidArgumentError("JSON object without a string \"event\" field");
  }
  TrainerEvent out;
  out.name = event->string_value();
  const Value* rank = Field(object, contract::kFieldRank);
  if (rank != nullptr && rank->kind_case() == Value::kNumberValue) {
    out.rank = Int32(object, contract::kFieldRank);
  }
  if (out.name == contract::kEventStart) {
    out.kind = TrainerEvent::Kind::kStart;
    out.parameters = Integer(object, contract::kFieldParameters);
    out.model = String(object, contract::kFieldModel);
    out.device = String(object, contract::kFieldDevice);
    out.precision = String(object, contract::kFieldPrecision);
    out.requested_precision = String(object, contract::kFieldRequestedPrecision);
    out.simulated = Bool(object, contract::kFieldSimulated);
    const Value* versions = Field(object, contract::kFieldVersions);
    if (versions != nullptr && versions->kind_case() == Value::kStructValue) {
      for (const auto& [key, value] : versions->struct_value().fields()) {
        if (value.kind_case() == Value::kStringValue) out.versions[key] = value.string_value();
      }
    }
  } else if (out.name == contract::kEventIter) {
    out.kind = TrainerEvent::Kind::kIter;
    int32_t iteration = Int32(object, contract::kFieldIteration);
    if (iteration <= 0) {
      return absl::InvalidArgumentError("iter event without a positive \"iteration\"");
    }
    auto& s = out.sample;
    s.set_iteration(iteration);
    s.set_step_time_s(Number(object, contract::kFieldStepTime));
    s.set_images(Int32(object, contract::kFieldImages));
    s.set_loss(Double(object, contract::kFieldLoss));
    s.set_data_time_s(Number(object, contract::kFieldDataTime));
    s.set_elapsed_s(Number(object, contract::kFieldElapsed));
    s.set_warmup(Bool(object, contract::kFieldWarmup));
    if (auto t = OptionalDouble(object, contract::kFieldComputeTime)) s.set_compute_time_s(*t);
    if (auto t = OptionalDouble(object, contract::kFieldForwardBackwardTime)) {
      s.set_forward_backward_time_s(*t);
    }
    if (auto t = OptionalDouble(object, contract::kFieldAllreduceWaitTime)) {
      s.set_allreduce_wait_time_s(*t);
    }
    if (auto t = OptionalDouble(object, contract::kFieldOptimizerTime)) s.set_optimizer_time_s(*t);
  } else if (out.name == contract::kEventSummary) {
    out.kind = TrainerEvent::Kind::kSummary;
    auto& s = out.summary;
    s.set_measured_iterations(Int32(object, contract::kFieldMeasuredIterations));
    s.set_measured_images(Integer(object, contract::kFieldMeasuredImages));
    s.set_window_s(Number(object, contract::kFieldWindow));
    s.set_step_time_median_s(Number(object, contract::kFieldStepTimeMedian));
    s.set_skipped_steps(Integer(object, contract::kFieldSkippedSteps));
    s.set_nonfinite_losses(Integer(object, contract::kFieldNonfiniteLosses));
    s.set_synthetic_images_per_second(Number(object, contract::kFieldSyntheticImagesPerSecond));
    out.images_per_second = Number(object, contract::kFieldImagesPerSecond);
  } else if (out.name == contract::kEventError) {
    out.kind = TrainerEvent::Kind::kError;
    out.message = String(object, contract::kFieldMessage);
  }
  return out;
}

}  // namespace bench::agent
