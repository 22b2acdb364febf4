// Fuzz target: job-spec validation, as benchd's SubmitJob runs it. The bytes are a
// serialized benchfleet.v1.JobSpec (those that do not parse are rejected), converted
// with FromProto (server/rpc/proto_convert.h) and checked by NormalizeAndValidateSpec
// (server/core/spec_validation.h). Besides no crash, leak or sanitizer report, it checks the
// contract: the answer is OK or INVALID_ARGUMENT with a small message (a refused value
// is only quoted as a prefix), and an accepted spec is normalized for good: validating
// it again, or after a ToProto/FromProto round trip, accepts it unchanged.
#include <cstdint>

#include "benchfleet/v1/types.pb.h"
#include "server/core/job.h"
#include "server/core/spec_validation.h"
#include "server/rpc/proto_convert.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  benchfleet::v1::JobSpec proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return -1;
  bench::JobSpec spec = bench::FromProto(proto);
  absl::Status status = bench::NormalizeAndValidateSpec(spec);
  if (!status.ok()) {
    FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument);
    FUZZ_CHECK(status.message().size() <= 1024);
    return 0;
  }
  FUZZ_CHECK(spec.devices >= 1 && spec.data == "synthetic");

  bench::JobSpec again = spec;
  FUZZ_CHECK(bench::NormalizeAndValidateSpec(again).ok() && again == spec);

  benchfleet::v1::JobSpec round_trip;
  bench::ToProto(spec, &round_trip);
  bench::JobSpec back = bench::FromProto(round_trip);
  FUZZ_CHECK(bench::NormalizeAndValidateSpec(back).ok() && back == spec);
  return 0;
}
