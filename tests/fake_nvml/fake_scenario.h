// The fake NVML's scenario (FAKE_NVML_SCENARIO=FILE, FAKE_NVML_NODE=NAME): the GPU rules
// of a common/fault_scenario.h file for this node, over time. Times count from the file's
// `epoch` line (Unix seconds) or, without one, from the first time this process read the
// file (its first nvmlInit_v2 with it). The file is re-read when its inode, size or
// modification time changes (a test rewrites it whole: written elsewhere, renamed over
// it); a change that does not parse keeps the previous rules (and says so on stderr
// once). Not thread-safe: the caller (fake_nvml.cc) holds its lock.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/fault_scenario.h"

namespace fake_nvml {

class ScenarioFile {
 public:
  // nullptr with *error ("FAKE_NVML_SCENARIO: PATH: line N: ...") if it cannot be read.
  static std::shared_ptr<ScenarioFile> Open(const std::string& path, const std::string& node,
                                            std::string* error);

  // What the rules set GPU `index` to now; a field no active rule sets is unset.
  bench::GpuState Now(int index);

 private:
  ScenarioFile(std::string path, std::string node, bench::FaultScenario scenario,
               std::chrono::steady_clock::time_point origin);
  void ReloadIfChanged();

  const std::string path_;
  const std::string node_;
  bench::FaultScenario scenario_;
  const std::chrono::steady_clock::time_point origin_;
  std::string version_;         // the file's size and mtime as last parsed
  std::string failed_version_;  // the last version that did not parse
};

}  // namespace fake_nvml
