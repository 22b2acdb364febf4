// The layout of a spool fuzz input (tests/fuzz/spool_fuzz.cc) and its packer, shared
// with the seed writer (make_spool_seeds.cc). An input describes a spool directory:
//   u8 flags       bit 0: an "ack" file is present; bits 1-2: segments - 1 (1 to 4);
//                  bit 3: an 8-byte little-endian first segment number follows (else 1)
//   [u64 first]    the first segment's number; the others follow it (+1 each)
//   [u8 n, n bytes]   the ack file's bytes, when bit 0 is set
//   for each segment but the last: u16 little-endian n, n bytes (fewer if the input ends)
//   the last segment: every byte left
// Header-only, standard library only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bench::fuzz {

struct SpoolInput {
  std::optional<std::string> ack;  // the ack file's bytes (at most 255)
  uint64_t first_segment = 1;
  std::vector<std::string> segments;  // 1 to 4
};

// Any bytes decode; an empty input is one empty segment.
inline SpoolInput DecodeSpoolInput(const uint8_t* data, size_t size) {
  SpoolInput input;
  size_t at = 0;
  auto take = [&](size_t n) {
    n = std::min(n, size - at);
    std::string bytes(reinterpret_cast<const char*>(data) + at, n);
    at += n;
    return bytes;
  };
  uint8_t flags = size > 0 ? data[at++] : 0;
  size_t segments = 1 + ((flags >> 1) & 3);
  if (flags & 8) {
    std::string first = take(8);
    input.first_segment = 0;
    for (size_t i = first.size(); i-- > 0;) {
      input.first_segment = (input.first_segment << 8) | static_cast<uint8_t>(first[i]);
    }
  }
  if (flags & 1) {
    size_t n = at < size ? data[at++] : 0;
    input.ack = take(n);
  }
  for (size_t i = 0; i + 1 < segments; ++i) {
    size_t n = 0;
    if (at < size) n = data[at++];
    if (at < size) n |= size_t{data[at++]} << 8;
    input.segments.push_back(take(n));
  }
  input.segments.push_back(take(size - at));
  return input;
}

// The inverse (for seeds): segments.size() must be 1 to 4, the ack at most 255 bytes and
// every segment but the last at most 65535 bytes.
inline std::string EncodeSpoolInput(const SpoolInput& input) {
  std::string out;
  bool first = input.first_segment != 1;
  out.push_back(static_cast<char>((input.ack ? 1 : 0) | ((input.segments.size() - 1) << 1) |
                                  (first ? 8 : 0)));
  if (first) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(input.first_segment >> (8 * i)));
  }
  if (input.ack) {
    out.push_back(static_cast<char>(input.ack->size()));
    out += *input.ack;
  }
  for (size_t i = 0; i < input.segments.size(); ++i) {
    if (i + 1 < input.segments.size()) {
      out.push_back(static_cast<char>(input.segments[i].size() & 0xff));
      out.push_back(static_cast<char>(input.segments[i].size() >> 8));
    }
    out += input.segments[i];
  }
  return out;
}

}  // namespace bench::fuzz
