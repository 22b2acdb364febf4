#include "server/auth/token_file.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace bench {
namespace {

void Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

TEST(TokenFileTest, ReloadsAChangedFileAndKeepsTheOldTableOnABadOne) {
  const std::string path = ::testing::TempDir() + "/token_file_test_tokens";
  Write(path, TokenTable::Hash("one") + " view a\n");
  auto file = TokenFile::Open(path, absl::Hours(1));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->Find("one")->name, "a");
  EXPECT_FALSE((*file)->Find("two").has_value());

  Write(path, TokenTable::Hash("two") + " admin bb\n");
  // Not yet due (refresh 1 h): Find keeps the table it has.
  EXPECT_FALSE((*file)->Find("two").has_value());
  ASSERT_TRUE((*file)->ReloadIfChanged().ok());
  EXPECT_EQ((*file)->Find("two")->role, Role::kAdmin);
  EXPECT_FALSE((*file)->Find("one").has_value());

  Write(path, "garbage line that is not a token\n");
  absl::Status bad = (*file)->ReloadIfChanged();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*file)->Find("two")->name, "bb");  // the old table stays

  std::remove(path.c_str());
  EXPECT_FALSE((*file)->ReloadIfChanged().ok());
  EXPECT_EQ((*file)->Find("two")->name, "bb");
}

TEST(TokenFileTest, FindRechecksAfterTheRefreshInterval) {
  const std::string path = ::testing::TempDir() + "/token_file_test_refresh";
  Write(path, TokenTable::Hash("one") + " view a\n");
  auto file = TokenFile::Open(path, absl::ZeroDuration());
  ASSERT_TRUE(file.ok());
  Write(path, TokenTable::Hash("three") + " submit ccc\n");
  EXPECT_EQ((*file)->Find("three")->name, "ccc");
  std::remove(path.c_str());
}

TEST(TokenFileTest, OpenNamesAMissingFile) {
  auto file = TokenFile::Open("/nonexistent/tokens", absl::Seconds(1));
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("/nonexistent/tokens"), std::string_view::npos);
}

}  // namespace
}  // namespace bench
