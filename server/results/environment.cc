#include "server/results/environment.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/names.h"

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

namespace {

bool Allows(Precision requested, const std::string& in_effect) {
  switch (requested) {
    case Precision::kUnspecified:
    case Precision::kFp32: return in_effect == kInEffectFp32;
    case Precision::kTf32: return in_effect == kInEffectTf32;
    case Precision::kAmp: return in_effect == kInEffectAmpFp16 || in_effect == kInEffectAmpBf16;
    case Precision::kBf16: return in_effect == kInEffectAmpBf16;
  }
  return false;
}

}  // namespace

EffectivePrecision MergePrecision(const Job& job) {
  std::set<std::string> distinct;
  for (const auto& [rank, precision] : job.rank_precisions) {
    if (!precision.empty()) distinct.insert(precision);
  }
  EffectivePrecision out;
  out.in_effect = absl::StrJoin(distinct, " | ");
  std::set<std::string> off;
  for (const std::string& precision : distinct) {
    if (!Allows(job.spec.precision, precision)) off.insert(precision);
  }
  if (!off.empty()) {
    Precision requested = job.spec.precision == Precision::kUnspecified ? Precision::kFp32
                                                                        : job.spec.precision;
    out.mismatch = absl::StrCat("requested ", PrecisionText(requested), ", ran ",
                                absl::StrJoin(off, " | "));
  }
  return out;
}

}  // namespace bench
