#include "server/environment.h"

#include <set>

#include "absl/strings/str_join.h"

namespace bench {

Environment MergeEnvironment(const Job& job) {
  std::map<std::string, std::set<std::string>> values;
  auto add = [&](const Versions& versions) {
    for (const auto& [key, value] : versions) {
      if (!value.empty()) values[key].insert(value);
    }
  };
  for (const auto& [agent, versions] : job.agent_versions) add(versions);
  for (const auto& [rank, versions] : job.rank_versions) add(versions);
  Environment environment;
  for (const auto& [key, distinct] : values) {
    environment.versions[key] = absl::StrJoin(distinct, " | ");
  }
  std::set<std::string> hostnames;
  for (const RankDevice& device : job.rank_devices) {
    if (!device.hostname.empty()) hostnames.insert(device.hostname);
  }
  environment.hostnames.assign(hostnames.begin(), hostnames.end());
  return environment;
}

}  // namespace bench
