// Fuzz target: the trainer-event parser. The bytes are one line of bench-train's stdout
// as the agent's reader hands it to ParseTrainerEvent (worker/agent/trainer_event_parser.h):
// untrusted process output, any bytes at all. It checks that parsing never crashes, leaks
// or trips a sanitizer, and the parser's contract: a refusal is INVALID_ARGUMENT, an
// "iter" event has a positive iteration, no decoded string is longer than the line, and
// the result is a pure function of the line (a second parse gives the same event).
#include <cstdint>

#include "absl/strings/string_view.h"
#include "tests/fuzz/fuzz_check.h"
#include "worker/agent/trainer_event_parser.h"

using bench::agent::ParseTrainerEvent;
using bench::agent::TrainerEvent;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view line(reinterpret_cast<const char*>(data), size);
  auto event = ParseTrainerEvent(line);
  if (!event.ok()) {
    FUZZ_CHECK(event.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  FUZZ_CHECK(event->kind != TrainerEvent::Kind::kIter || event->sample.iteration() > 0);
  FUZZ_CHECK(event->name.size() <= size && event->model.size() <= size &&
             event->message.size() <= size && event->versions.size() <= size);
  auto again = ParseTrainerEvent(line);
  FUZZ_CHECK(again.ok() && again->kind == event->kind && again->name == event->name &&
             again->rank == event->rank &&
             again->sample.SerializeAsString() == event->sample.SerializeAsString());
  return 0;
}
