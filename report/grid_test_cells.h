// Test helper the results grid's tests share (grid_test.cc, grid_view_test.cc): one
// ResultCell of a configuration with a median and made-up spread, runs and job id, as
// benchd's results answer carries it. Test-only and header-only; pure.
#pragma once

#include <string>

#include "benchfleet/v1/types.pb.h"

namespace bench::report {

// The cell of `model` on `devices` devices of `kind` at `precision` and batch size `bs`:
// median `median` images/s, min and max one either side, 3 runs, job "j-<devices>".
inline benchfleet::v1::ResultCell Cell(const std::string& model, int devices,
                                       benchfleet::v1::Precision precision, int bs, double median,
                                       const std::string& kind = "cuda") {
  benchfleet::v1::ResultCell cell;
  cell.set_model(model);
  cell.set_devices(devices);
  cell.set_precision(precision);
  cell.set_batch_size(bs);
  cell.set_median_images_per_second(median);
  cell.set_min_images_per_second(median - 1);
  cell.set_max_images_per_second(median + 1);
  cell.set_runs(3);
  cell.add_job_ids("j-" + std::to_string(devices));
  cell.set_device_kind(kind);
  return cell;
}

}  // namespace bench::report
