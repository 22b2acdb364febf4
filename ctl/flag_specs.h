// The builders of benchctl's FlagSpecs (command_table.h), shared by the command table and
// the commands declared in their own files (join_token_command.cc): a flag with a value, a
// boolean, a refused one, a parsed int, --format with a command's choices. Each returns a
// FlagSpec whose `apply` names the flag in its errors. Stateless.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "ctl/args.h"
#include "ctl/command_table.h"

namespace bench::ctl {

using Apply = std::function<absl::Status(ParseState&, const std::string&)>;

// A flag that takes a value; `flag` is its long name without dashes, for messages.
FlagSpec Value(std::string flag, std::string placeholder, Apply apply,
               std::string default_text = "");

// `spec`, shown without brackets (the check itself is the command's `finish`).
FlagSpec Required(FlagSpec spec);

// `spec`, shown with "...".
FlagSpec Repeatable(FlagSpec spec);

// A boolean flag: bare, or "=true|1|false|0".
FlagSpec Bool(std::string names, std::string flag,
              std::function<absl::Status(ParseState&, bool)> set);

// A flag a command refuses with `message` (kept out of the usage text).
FlagSpec Refused(std::string flag, bool takes_value, std::string message);

// A flag whose value `parse` reads (its errors name the flag) and `set` writes.
template <typename T>
FlagSpec Parsed(std::string flag, std::string placeholder,
                absl::StatusOr<T> (*parse)(absl::string_view, absl::string_view),
                std::function<void(ParseState&, T)> set, std::string default_text) {
  return Value(
      flag, std::move(placeholder),
      [flag, parse, set](ParseState& state, const std::string& value) {
        ASSIGN_OR_RETURN(T parsed, parse(flag, value));
        set(state, parsed);
        return absl::OkStatus();
      },
      std::move(default_text));
}

// An int32 flag written with `set`.
FlagSpec Int(std::string flag, std::function<void(ParseState&, int32_t)> set,
             std::string default_text = "");

// --format with the command's choices; `aliases` are accepted but not shown.
FlagSpec Format(std::vector<std::pair<std::string, OutputFormat>> choices,
                std::vector<std::pair<std::string, OutputFormat>> aliases = {});

// --format text|json.
FlagSpec TextOrJson();

}  // namespace bench::ctl
