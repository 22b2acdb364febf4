#include "tests/fake_nvml/fake_scenario.h"

#include <sys/stat.h>

#include <cstdio>
#include <map>
#include <utility>

namespace fake_nvml {
namespace {

// The file's size and modification time, "" if it cannot be stat()ed.
std::string FileVersion(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

// When this process first read each scenario file: the origin of its times.
std::map<std::string, std::chrono::steady_clock::time_point>& FirstReads() {
  static auto* first = new std::map<std::string, std::chrono::steady_clock::time_point>();
  return *first;
}

}  // namespace

std::shared_ptr<ScenarioFile> ScenarioFile::Open(const std::string& path, const std::string& node,
                                                 std::string* error) {
  std::string version = FileVersion(path);
  std::string parse_error;
  std::optional<bench::FaultScenario> scenario = bench::FaultScenario::Load(path, &parse_error);
  if (!scenario) {
    *error = "FAKE_NVML_SCENARIO: " + parse_error;
    return nullptr;
  }
  auto first = FirstReads().emplace(path, std::chrono::steady_clock::now()).first;
  std::shared_ptr<ScenarioFile> file(
      new ScenarioFile(path, node, std::move(*scenario), first->second));
  file->version_ = version;
  return file;
}

ScenarioFile::ScenarioFile(std::string path, std::string node, bench::FaultScenario scenario,
                           std::chrono::steady_clock::time_point origin)
    : path_(std::move(path)),
      node_(std::move(node)),
      scenario_(std::move(scenario)),
      origin_(origin) {}

void ScenarioFile::ReloadIfChanged() {
  std::string version = FileVersion(path_);
  if (version.empty() || version == version_ || version == failed_version_) return;
  std::string error;
  std::optional<bench::FaultScenario> scenario = bench::FaultScenario::Load(path_, &error);
  if (!scenario) {
    failed_version_ = version;
    std::fprintf(stderr, "fake NVML: FAKE_NVML_SCENARIO: %s (keeping the previous rules)\n",
                 error.c_str());
    return;
  }
  scenario_ = std::move(*scenario);
  version_ = version;
}

bench::GpuState ScenarioFile::Now(int index) {
  ReloadIfChanged();
  double seconds;
  if (std::optional<double> epoch = scenario_.epoch_unix_s()) {
    seconds =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() -
        *epoch;
  } else {
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
  }
  return scenario_.GpuAt(node_, index, seconds);
}

}  // namespace fake_nvml
