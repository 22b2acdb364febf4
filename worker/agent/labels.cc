#include "worker/agent/labels.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace bench::agent {
namespace {

bool ValidKey(const std::string& key) {
  if (key.empty() || key.size() > 63 || !absl::ascii_isalnum(key[0])) return false;
  for (char c : key) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-' && c != '/') return false;
  }
  return true;
}

bool ValidValue(const std::string& value) {
  if (value.size() > 255) return false;
  for (char c : value) {
    if (absl::ascii_iscntrl(c)) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ParseLabels(
    const std::vector<std::string>& specs) {
  std::map<std::string, std::string> labels;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--label '", spec, "': expected KEY=VALUE"));
    }
    std::string key = spec.substr(0, eq);
    std::string value = spec.substr(eq + 1);
    if (!ValidKey(key)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--label '", spec, "': the key must be 1 to 63 characters of letters, digits and "
          "._/- starting with a letter or digit"));
    }
    if (!ValidValue(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--label '", spec, "': the value must be at most 255 characters, no control "
          "characters"));
    }
    auto [it, inserted] = labels.emplace(key, value);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat("--label '", spec, "': key '", key,
                                                     "' given twice"));
    }
  }
  return labels;
}

absl::StatusOr<std::vector<std::string>> ExtractRepeatedFlag(const std::string& name,
                                                             std::vector<std::string>* args) {
  std::vector<std::string> values;
  std::vector<std::string> kept;
  const std::string long_flag = "--" + name, short_flag = "-" + name;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& arg = (*args)[i];
    if (i == 0) {
      kept.push_back(arg);
      continue;
    }
    if (arg == "--") {
      kept.insert(kept.end(), args->begin() + static_cast<long>(i), args->end());
      break;
    }
    if (arg == long_flag || arg == short_flag) {
      if (i + 1 >= args->size()) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      }
      values.push_back((*args)[++i]);
      continue;
    }
    if (arg.rfind(long_flag + "=", 0) == 0) {
      values.push_back(arg.substr(long_flag.size() + 1));
      continue;
    }
    if (arg.rfind(short_flag + "=", 0) == 0) {
      values.push_back(arg.substr(short_flag.size() + 1));
      continue;
    }
    kept.push_back(arg);
  }
  *args = std::move(kept);
  return values;
}

}  // namespace bench::agent
