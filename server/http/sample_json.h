// Iteration samples and GPU readings as JSON, written directly: the same bytes as the
// proto JSON mapping (report::ToJson of ToProto: proto field names, fields in number
// order, every non-optional field, int64 as strings, doubles as protobuf prints them),
// without building a proto and walking it by reflection for each row. The live job
// stream sends tens of thousands of rows a second at fleet scale (issue 27).
#pragma once

#include <string>

#include "server/core/job.h"

namespace bench {

// Appends one object, no newline.
void AppendSampleJson(std::string& out, const IterationSample& sample);
void AppendGpuSampleJson(std::string& out, const GpuSample& sample);

}  // namespace bench
