// How an error message quotes a value it refuses: at most a short prefix, control bytes
// escaped, so a 1 MB input cannot become a 1 MB message (gRPC's trailers hold 8 KiB) and a
// newline cannot forge a log line. Header-only; standard library only.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace bench {

// `value` with quotes, backslashes and every byte outside printable ASCII escaped (\xNN),
// whole: for values already bounded (a constraint, a label) shown in a message or a log.
inline std::string EscapeBytes(std::string_view value) {
  std::string out;
  for (unsigned char c : value) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char escaped[5];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// `"abc"` for short values; `"abcdef…" (1048576 bytes)` past `max_bytes`. Bytes outside
// printable ASCII are written as \xNN, quotes and backslashes escaped (EscapeBytes).
inline std::string QuotePrefix(std::string_view value, size_t max_bytes = 48) {
  const size_t shown = value.size() <= max_bytes ? value.size() : max_bytes;
  std::string out = "\"" + EscapeBytes(value.substr(0, shown)) + "\"";
  if (shown < value.size()) {
    out.insert(out.size() - 1, "\xe2\x80\xa6");  // "…" inside the quotes
    out += " (" + std::to_string(value.size()) + " bytes)";
  }
  return out;
}

}  // namespace bench
