#include "report/json_output.h"

#include <gtest/gtest.h>

namespace bench::report {
namespace {

// JsonQuote is common/json_escape.h's JsonString (tested there): what benchctl and the
// web API write by hand is valid JSON whatever the bytes.
TEST(JsonOutputTest, QuotesAsTheOneEscaper) {
  EXPECT_EQ(JsonQuote("a\"b\\c\n\t"), "\"a\\\"b\\\\c\\n\\t\"");
  EXPECT_EQ(JsonQuote("\b\f\x01\x7f"), "\"\\b\\f\\u0001\\u007f\"");
  EXPECT_EQ(JsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(JsonQuote("bad\xff"), "\"bad\\ufffd\"");
}

TEST(JsonOutputTest, ObjectKeysAndValuesAreEscaped) {
  EXPECT_EQ(JsonObject().Add("k\"ey", "v\xc3").Add("n", int64_t{3}).Build(),
            "{\"k\\\"ey\": \"v\\ufffd\", \"n\": 3}");
}

}  // namespace
}  // namespace bench::report
