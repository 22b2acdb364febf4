#include "common/build_info.h"

namespace bench {

std::string VersionLine(std::string_view binary) {
  std::string line(binary);
  line += ' ';
  line += ProjectVersion();
  line += " (build ";
  line += BuildId();
  line += ')';
  return line;
}

}  // namespace bench
