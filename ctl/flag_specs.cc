#include "ctl/flag_specs.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "ctl/flag_values.h"

namespace bench::ctl {

// A flag that takes a value; `flag` is its long name without dashes, for messages.
FlagSpec Value(std::string flag, std::string placeholder, Apply apply, std::string default_text) {
  FlagSpec spec;
  spec.names = "--" + flag;
  spec.placeholder = std::move(placeholder);
  spec.default_text = std::move(default_text);
  spec.apply = std::move(apply);
  return spec;
}

FlagSpec Required(FlagSpec spec) {
  spec.required = true;
  return spec;
}

FlagSpec Repeatable(FlagSpec spec) {
  spec.repeatable = true;
  return spec;
}

// A boolean flag: bare, or "=true|1|false|0".
FlagSpec Bool(std::string names, std::string flag,
              std::function<absl::Status(ParseState&, bool)> set) {
  FlagSpec spec;
  spec.names = std::move(names);
  spec.apply = [flag, set](ParseState& state, const std::string& value) -> absl::Status {
    ASSIGN_OR_RETURN(bool on, ParseBoolFlag(flag, value));
    return set(state, on);
  };
  return spec;
}

// A flag a command refuses with `message` (kept out of the usage text).
FlagSpec Refused(std::string flag, bool takes_value, std::string message) {
  FlagSpec spec;
  spec.names = "--" + flag;
  spec.placeholder = takes_value ? "X" : "";
  spec.hidden = true;
  spec.apply = [message](ParseState&, const std::string&) {
    return absl::InvalidArgumentError(message);
  };
  return spec;
}

// An int32 flag written with `set`.
FlagSpec Int(std::string flag, std::function<void(ParseState&, int32_t)> set,
             std::string default_text) {
  return Parsed<int32_t>(std::move(flag), "N", ParseIntFlag, std::move(set),
                         std::move(default_text));
}

// --format with the command's choices; `aliases` are accepted but not shown.
FlagSpec Format(std::vector<std::pair<std::string, OutputFormat>> choices,
                std::vector<std::pair<std::string, OutputFormat>> aliases) {
  std::vector<std::string> names;
  for (const auto& choice : choices) names.push_back(choice.first);
  const std::string expected =
      absl::StrCat(absl::StrJoin(names.begin(), names.end() - 1, ", "), " or ", names.back());
  choices.insert(choices.end(), aliases.begin(), aliases.end());
  return Value("format", absl::StrJoin(names, "|"),
               [choices, expected](ParseState& state, const std::string& value) {
                 for (const auto& [name, format] : choices) {
                   if (value == name) {
                     state.format = format;
                     return absl::OkStatus();
                   }
                 }
                 return absl::InvalidArgumentError(absl::StrCat(
                     "--format: unknown format \"", value, "\" (expected ", expected, ")"));
               });
}

FlagSpec TextOrJson() {
  return Format({{"text", OutputFormat::kText}, {"json", OutputFormat::kJson}});
}

}  // namespace bench::ctl
