#include "server/core/job.h"

#include <iterator>
#include <set>

#include "absl/strings/str_join.h"
#include "common/names.h"

namespace bench {

// kJobStates (common/names.h) is in JobState's order.
static_assert(static_cast<size_t>(JobState::kCancelled) + 1 == std::size(kJobStates));

const char* JobStateText(JobState state) {
  const auto index = static_cast<size_t>(state);
  return index < std::size(kJobStates) ? kJobStates[index].name : "UNKNOWN";
}

bool IsTerminal(JobState state) {
  const auto index = static_cast<size_t>(state);
  return index < std::size(kJobStates) && kJobStates[index].terminal;
}

bool Allocation::operator==(const Allocation& o) const {
  return system == o.system && id == o.id && state == o.state && reason == o.reason &&
         nodes == o.nodes && ended == o.ended;
}

bool JobSpec::operator==(const JobSpec& o) const {
  return model == o.model && devices == o.devices && precision == o.precision &&
         batch_size == o.batch_size && iterations == o.iterations &&
         warmup_iterations == o.warmup_iterations && image_size == o.image_size && data == o.data &&
         data_path == o.data_path && loader_threads == o.loader_threads &&
         data_vs_compute == o.data_vs_compute && name == o.name &&
         labels == o.labels && request_id == o.request_id && nodes == o.nodes &&
         devices_per_node == o.devices_per_node && allowed_nodes == o.allowed_nodes &&
         node_labels == o.node_labels && wall_time_limit_s == o.wall_time_limit_s &&
         hang_timeout_s == o.hang_timeout_s;
}

std::string GpuModelOf(const Job& job) {
  if (job.released_ranks != nullptr) return job.released_ranks->gpu_model;
  // Usually every rank has the same GPU: then no set (the results grid asks this of
  // every job).
  const std::string* first = nullptr;
  bool mixed = false;
  for (const RankDevice& device : job.rank_devices) {
    if (device.gpu_name.empty()) continue;
    if (first == nullptr) {
      first = &device.gpu_name;
    } else if (device.gpu_name != *first) {
      mixed = true;
      break;
    }
  }
  if (!mixed) return first == nullptr ? std::string() : *first;
  std::set<std::string> names;
  for (const RankDevice& device : job.rank_devices) {
    if (!device.gpu_name.empty()) names.insert(device.gpu_name);
  }
  return absl::StrJoin(names, " + ");
}

ConfigurationKey ConfigurationOf(const Job& job) {
  return ConfigurationKey{job.spec.model,      job.spec.devices, job.spec.precision,
                          job.spec.batch_size, job.device_kind,  GpuModelOf(job),
                          job.spec.image_size, job.simulated};
}

}  // namespace bench
