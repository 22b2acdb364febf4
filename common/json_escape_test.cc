#include "common/json_escape.h"

#include <string>

#include <gtest/gtest.h>

namespace bench {
namespace {

TEST(JsonEscapeTest, QuotesPlainText) {
  EXPECT_EQ(JsonString(""), "\"\"");
  EXPECT_EQ(JsonString("plain text 123"), "\"plain text 123\"");
  EXPECT_EQ(JsonString("/"), "\"/\"");  // '/' may be escaped in JSON; it is not
}

TEST(JsonEscapeTest, EscapesQuotesAndBackslashes) {
  EXPECT_EQ(JsonString("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(JsonString("back\\slash"), "\"back\\\\slash\"");
  EXPECT_EQ(JsonString("job \"a\\b\""), "\"job \\\"a\\\\b\\\"\"");
}

TEST(JsonEscapeTest, EscapesEveryControlCharacter) {
  EXPECT_EQ(JsonString("line1\nline2\r\t"), "\"line1\\nline2\\r\\t\"");
  EXPECT_EQ(JsonString("\b\f"), "\"\\b\\f\"");
  EXPECT_EQ(JsonString(std::string("nul\0x", 5)), "\"nul\\u0000x\"");
  EXPECT_EQ(JsonString("\x01\x1f\x7f"), "\"\\u0001\\u001f\\u007f\"");
  // No byte below 0x20 is left raw.
  for (int c = 0; c < 0x20; ++c) {
    const std::string quoted = JsonString(std::string(1, static_cast<char>(c)));
    EXPECT_EQ(quoted.front(), '"');
    EXPECT_EQ(quoted[1], '\\') << "byte " << c;
    for (char q : quoted) EXPECT_GE(static_cast<unsigned char>(q), 0x20) << "byte " << c;
  }
}

TEST(JsonEscapeTest, KeepsValidUtf8) {
  EXPECT_EQ(JsonString("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"),
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80\"");
  EXPECT_EQ(JsonString("\xf4\x8f\xbf\xbf"), "\"\xf4\x8f\xbf\xbf\"");  // U+10FFFF, the last
}

TEST(JsonEscapeTest, ReplacesEachInvalidByte) {
  EXPECT_EQ(JsonString("bad\xff"), "\"bad\\ufffd\"");
  EXPECT_EQ(JsonString("\x80x"), "\"\\ufffdx\"");                      // stray continuation
  EXPECT_EQ(JsonString("\xc3"), "\"\\ufffd\"");                        // truncated sequence
  EXPECT_EQ(JsonString("\xe2\x82z"), "\"\\ufffd\\ufffdz\"");           // broken sequence
  EXPECT_EQ(JsonString("\xc0\xaf"), "\"\\ufffd\\ufffd\"");             // overlong encoding
  EXPECT_EQ(JsonString("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // surrogate
  EXPECT_EQ(JsonString("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // > U+10FFFF
}

TEST(JsonEscapeTest, AppendsToWhatIsThere) {
  std::string out = "{\"message\":";
  AppendJsonString(&out, "a\nb");
  EXPECT_EQ(out, "{\"message\":\"a\\nb\"");
}

}  // namespace
}  // namespace bench
