// Fuzz target: the bearer-token file parser, TokenTable::Parse (server/auth/auth.h), which
// benchd's --tokens file goes through (server/auth/token_file.h re-reads it whenever it
// changes). Besides no crash, leak or sanitizer report, it checks the contract: a refusal
// is INVALID_ARGUMENT naming the file, with a bounded message; an accepted table holds
// at most one entry per line; a token found maps to a hash that is in the text, and the
// empty token is never found.
#include <cstdint>
#include <string>
#include <string_view>

#include "server/auth/auth.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto table = bench::TokenTable::Parse(text, "fuzz-tokens");
  if (!table.ok()) {
    FUZZ_CHECK(table.status().code() == absl::StatusCode::kInvalidArgument);
    FUZZ_CHECK(table.status().message().substr(0, 12) == "fuzz-tokens:");
    FUZZ_CHECK(table.status().message().size() <= 1024);
    return 0;
  }
  size_t lines = 1;
  for (char c : text) lines += c == '\n';
  FUZZ_CHECK(table->size() <= lines);
  FUZZ_CHECK(!table->Find("").has_value());
  // Each line's first word, tried as a token: found only if its hash is in the file.
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    std::string_view word = line.substr(0, line.find(' '));
    auto who = table->Find(word);
    if (who.has_value()) {
      FUZZ_CHECK(text.find(bench::TokenTable::Hash(word)) != std::string_view::npos);
      FUZZ_CHECK(who->via == "token" && !who->name.empty());
    }
    start = end + 1;
  }
  return 0;
}
