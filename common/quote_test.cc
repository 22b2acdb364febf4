#include "common/quote.h"

#include <string>

#include "gtest/gtest.h"

namespace bench {
namespace {

TEST(QuotePrefixTest, ShortValuesWhole) { EXPECT_EQ(QuotePrefix("node-a"), "\"node-a\""); }

TEST(QuotePrefixTest, LongValuesCutWithTheirSize) {
  std::string big(1 << 20, 'x');
  std::string quoted = QuotePrefix(big, 8);
  EXPECT_EQ(quoted, "\"xxxxxxxx\xe2\x80\xa6\" (1048576 bytes)");
}

TEST(QuotePrefixTest, ControlBytesAndQuotesEscaped) {
  EXPECT_EQ(QuotePrefix(std::string("a\nb\0\"\\", 6)), "\"a\\x0ab\\x00\\\"\\\\\"");
}

TEST(EscapeBytesTest, EscapesWithoutQuotingOrCutting) {
  EXPECT_EQ(EscapeBytes("gpu=h100"), "gpu=h100");
  EXPECT_EQ(EscapeBytes(std::string("a\x1f\"\\\n", 5)), "a\\x1f\\\"\\\\\\x0a");
  EXPECT_EQ(EscapeBytes(std::string(300, 'v')).size(), 300u);
}

}  // namespace
}  // namespace bench
