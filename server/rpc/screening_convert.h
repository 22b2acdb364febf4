// The seam for fleet screening (proto_convert.h's sibling): a screening's verdicts
// (server/results/screening_inputs.h, server/diagnosis/screening.h) as the v1 API's
// ScreeningReport, and the list of screenings. The GPUs go out flagged first (failed, then
// fault, then slow, each by node and GPU index), then the ok ones by node and GPU index: the
// order benchctl's table and the page show.
#pragma once

#include "benchfleet/v1/controller.pb.h"
#include "server/results/screening_inputs.h"

namespace bench {

// "ok", "slow", "fault" or "failed" (the first that holds of failed, fault, slow).
const char* ScreenVerdictName(const diagnosis::GpuVerdict& gpu);

void ToProto(const ScreeningView& view, benchfleet::v1::ScreeningReport* proto);
void ToProto(const ScreeningListEntry& entry, benchfleet::v1::ScreeningSummary* proto);

}  // namespace bench
