#include "worker/agent/data_path.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/names.h"
#include "common/spec_names.h"

namespace bench::agent {
namespace {

// realpath(3) of `path`, or nullopt (errno set) when it cannot be resolved.
std::optional<std::string> Resolve(const std::string& path) {
  char* resolved = realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return std::nullopt;
  std::string out(resolved);
  free(resolved);
  return out;
}

// `path` (resolved) is `root` (resolved) or below it.
bool Within(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || absl::StartsWith(path, root + "/");
}

}  // namespace

absl::Status CheckDataPath(const benchfleet::v1::JobSpec& spec, absl::string_view node,
                           const std::vector<std::string>& data_roots) {
  if (DataSourceName(spec.data()) == kDataSynthetic) return absl::OkStatus();
  if (data_roots.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("node ", node, ": ", kNoDataRootsMessage));
  }
  const std::string& path = spec.data_path();
  auto refused = [&](absl::string_view why) {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", node, ": data path ", path, ": ", why));
  };
  // Outside every root reads exactly as missing: nothing about the rest of the node's
  // file system shows through.
  const std::string missing = strerror(ENOENT);
  std::optional<std::string> resolved = Resolve(path);
  if (!resolved) return refused(missing);
  bool inside = false;
  for (const std::string& root : data_roots) {
    std::optional<std::string> resolved_root = Resolve(root);
    if (resolved_root && Within(*resolved, *resolved_root)) inside = true;
  }
  if (!inside) return refused(missing);

  struct stat info;
  if (stat(resolved->c_str(), &info) != 0) return refused(strerror(errno));
  if (!S_ISDIR(info.st_mode)) return refused(strerror(ENOTDIR));
  if (access(resolved->c_str(), R_OK | X_OK) != 0) return refused(strerror(errno));
  if (DataSourceName(spec.data()) == kDataCoco) {
    // A COCO folder: annotations/instances_*.json beside the images.
    DIR* dir = opendir((*resolved + "/annotations").c_str());
    if (dir == nullptr) {
      return refused(absl::StrCat("no annotations folder (annotations/: ", strerror(errno), ")"));
    }
    bool found = false;
    while (dirent* entry = readdir(dir)) {
      const absl::string_view name = entry->d_name;
      if (absl::StartsWith(name, "instances_") && absl::EndsWith(name, ".json")) found = true;
    }
    closedir(dir);
    if (!found) return refused("no annotations/instances_*.json (not a COCO-format folder)");
  }
  return absl::OkStatus();
}

absl::Status CheckDataRoots(const std::vector<std::string>& data_roots) {
  for (const std::string& root : data_roots) {
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("--data-root ", root, ": ", why));
    };
    if (root.empty() || root[0] != '/') return bad("must be an absolute path");
    struct stat info;
    if (stat(root.c_str(), &info) != 0) return bad(strerror(errno));
    if (!S_ISDIR(info.st_mode)) return bad(strerror(ENOTDIR));
  }
  return absl::OkStatus();
}

}  // namespace bench::agent
