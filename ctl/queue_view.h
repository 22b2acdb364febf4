// `benchctl queue`: the QUEUED jobs of a ListQueueResponse, in the order the server sent
// them (its scheduling order), as a table or CSV. Pure functions; `now` decides ages.
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "benchfleet/v1/types.pb.h"

namespace bench::ctl {

// Time since `created_unix_ms` at `now`, coarse: "45s", "12m", "3h05m", "2d04h"; "-" when
// unknown (0), "0s" when in the future (clock skew).
std::string FormatAge(int64_t created_unix_ms, absl::Time now);

// The devices cell: "16" or, with a shape, "16 (2x8)", "16 (2 nodes)", "16 (8/node)".
std::string QueueDevices(const benchfleet::v1::JobSpec& spec);

// The constraints cell, shortened to at most `max_chars` characters (then ending in
// "…"): "on dgx-01,dgx-02 gpu=h100,site=a"; more than two nodes read "on a,b,+3"; "-"
// when unconstrained.
std::string ShortConstraints(const benchfleet::v1::JobSpec& spec, size_t max_chars = 32);

// An aligned table: POS, ID, NAME, MODEL, DEVICES, PRECISION, BS, CONSTRAINTS, AGE, then
// WAITING FOR (the server's full reason, never shortened, last so long ones do not push
// the other columns); "queue is empty\n" when there are none.
std::string FormatQueueTable(const std::vector<benchfleet::v1::JobStatus>& jobs,
                             absl::Time now);

// CSV with a header: position, job_id, name, model, devices, nodes, devices_per_node,
// precision, batch_size, allowed_nodes (";"-joined), node_labels ("k=v;k=v"),
// wall_time_limit_s, hang_timeout_s, requeues, created_unix_ms, age_s, reason. Every
// field in full; only the header when empty.
std::string RenderQueueCsv(const std::vector<benchfleet::v1::JobStatus>& jobs, absl::Time now);

}  // namespace bench::ctl
