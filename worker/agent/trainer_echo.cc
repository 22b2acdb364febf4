#include "worker/agent/trainer_echo.h"

#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace bench::agent {

void EchoLine(absl::string_view prefix, absl::string_view line) {
  std::string text = absl::StrCat(prefix, line, "\n");
  (void)!write(STDERR_FILENO, text.data(), text.size());
}

}  // namespace bench::agent
