// Parses one line of bench-train's stdout (docs/trainer-events.md) into a TrainerEvent.
//
// Pure and thread-safe. Unknown fields are ignored, as the contract requires; an
// unknown "event" name parses as Kind::kOther so that newer trainers keep working.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchfleet/v1/types.pb.h"

namespace bench::agent {

struct TrainerEvent {
  enum class Kind { kStart, kIter, kSummary, kError, kOther };
  Kind kind = Kind::kOther;
  std::string name;  // the "event" field as written
  int rank = -1;     // the "rank" field, -1 if absent

  // kStart.
  int64_t parameters = 0;
  std::string model;
  std::string device;
  std::string precision;            // in effect: "fp32", "tf32", "amp_bf16", "amp_fp16"
  std::string requested_precision;  // as given to --precision ("" from older trainers)
  std::map<std::string, std::string> versions;  // the "versions" object's string values
  bool simulated = false;  // "simulated": true (bench-sim-train): every figure is simulated
  // kIter: iteration, step_time_s, images, loss, data_time_s, elapsed_s, warmup, and each
  // of the step split (compute_time_s, forward_backward_time_s, allreduce_wait_time_s,
  // optimizer_time_s) only where the event has it (unset: no data).
  // job_id, attempt and rank are left for the caller, which knows them.
  benchfleet::v1::IterationSample sample;
  // kSummary: measured_iterations, measured_images, window_s, step_time_median_s,
  // skipped_steps, nonfinite_losses (rank left for the caller).
  benchfleet::v1::RankSummary summary;
  double images_per_second = 0;
  // kError.
  std::string message;
};

// INVALID_ARGUMENT if `line` is not a JSON object with a string "event" field, or if
// an "iter" event lacks a positive "iteration" (it would have no sample identity).
// Numeric fields that are absent or null read as 0, except the loss: written as the
// proto3 JSON mapping writes a double, "NaN", "Infinity" and "-Infinity" read as
// themselves, and null (older trainers wrote a non-finite loss so) reads as NaN. The step
// split's times are unset when absent or null; a number or "NaN"/"Infinity"/"-Infinity"
// sets them (the controller refuses a non-finite or negative one).
absl::StatusOr<TrainerEvent> ParseTrainerEvent(absl::string_view line);

}  // namespace bench::agent
