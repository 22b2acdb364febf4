#include "worker/agent/output_tail.h"

#include <string>

#include <gtest/gtest.h>

namespace bench::agent {
namespace {

TEST(OutputTailTest, KeepsTheLastLines) {
  OutputTail tail(3, 1000);
  for (int i = 1; i <= 5; ++i) tail.Add("line " + std::to_string(i));
  EXPECT_EQ(tail.Text(), "line 3\nline 4\nline 5");
}

TEST(OutputTailTest, BoundedInBytes) {
  OutputTail tail(30, 20);
  tail.Add("aaaaaaaaa");  // 10 bytes with its newline
  tail.Add("bbbbbbbbb");
  tail.Add("ccccccccc");
  EXPECT_EQ(tail.Text(), "bbbbbbbbb\nccccccccc");
  tail.Add(std::string(100, 'x') + "END");
  EXPECT_EQ(tail.Text(), std::string(16, 'x') + "END");
}

}  // namespace
}  // namespace bench::agent
