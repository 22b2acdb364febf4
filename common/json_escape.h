// The one JSON string escaper, for every JSON this project writes by hand: benchd's error
// answers (JsonErrorResponse), report/'s JsonQuote (benchctl's and the web API's own JSON)
// and bench-train's events (worker/train/event_writer.cc). Header-only; standard library
// only, so that bench-train (libtorch alone) includes it too.
//
// '"' and '\\' are escaped; \b \f \n \r \t by their short forms, the other control
// characters (U+0000..U+001F) and DEL (0x7F) as \u00xx; '/' is not escaped; valid UTF-8
// passes through unchanged; each byte that does not begin a valid UTF-8 sequence (a stray
// continuation byte, a truncated or overlong sequence, a surrogate, past U+10FFFF)
// becomes \ufffd, so that the output is always valid JSON (RFC 8259: UTF-8 only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace bench {
namespace json_escape_internal {

// The length of the valid UTF-8 sequence starting at text[i] (a byte >= 0x80), or 0 if
// it is not one.
inline size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  size_t len = 0;
  uint32_t min_code = 0;
  uint32_t code = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2, min_code = 0x80, code = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, min_code = 0x800, code = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, min_code = 0x10000, code = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (code < min_code || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return len;
}

}  // namespace json_escape_internal

// Appends `text` to *out as a JSON string literal, quotes included.
inline void AppendJsonString(std::string* out, std::string_view text) {
  out->reserve(out->size() + text.size() + 2);
  *out += '"';
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': *out += "\\\""; break;
        case '\\': *out += "\\\\"; break;
        case '\b': *out += "\\b"; break;
        case '\f': *out += "\\f"; break;
        case '\n': *out += "\\n"; break;
        case '\r': *out += "\\r"; break;
        case '\t': *out += "\\t"; break;
        default:
          if (c < 0x20 || c == 0x7F) {
            static constexpr char kHex[] = "0123456789abcdef";
            *out += "\\u00";
            *out += kHex[c >> 4];
            *out += kHex[c & 0xF];
          } else {
            *out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    const size_t len = json_escape_internal::Utf8SequenceLength(text, i);
    if (len == 0) {
      *out += "\\ufffd";
      ++i;
    } else {
      out->append(text.substr(i, len));
      i += len;
    }
  }
  *out += '"';
}

// `text` as a JSON string literal, quotes included.
inline std::string JsonString(std::string_view text) {
  std::string out;
  AppendJsonString(&out, text);
  return out;
}

}  // namespace bench
