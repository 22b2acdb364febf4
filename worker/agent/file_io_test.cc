// file_io.h on real files in a temporary directory: the atomic replace (contents, mode, no
// leftover), the bounded read's three kinds of failure, and the state directory's
// controller_id, which goes through both.
#include "worker/agent/file_io.h"

#include <sys/stat.h>

#include <string>

#include <gtest/gtest.h>

#include "worker/agent/state_dir.h"
#include "worker/agent/temp_dir.h"

namespace bench::agent {
namespace {

TEST(FileIoTest, AnAtomicWriteReplacesTheFileWithItsMode) {
  TempDir dir("atomic-write-test-");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.path() + "/f";
  ASSERT_TRUE(WriteFileAtomically(path, "one", 0644).ok());
  ASSERT_TRUE(WriteFileAtomically(path, "two", 0600).ok());
  absl::StatusOr<std::string> text = ReadFileText(path);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "two");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  EXPECT_TRUE(absl::IsNotFound(ReadFileText(path + ".new").status()));
}

TEST(FileIoTest, AnAtomicWriteIntoAMissingDirectoryNamesTheFile) {
  TempDir dir("atomic-write-test-");
  ASSERT_TRUE(dir.ok());
  absl::Status status = WriteFileAtomically(dir.path() + "/no/such/f", "x", 0644);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(dir.path() + "/no/such/f"), std::string::npos) << status;
}

TEST(FileIoTest, AReadTellsMissingFromTooLongFromUnreadable) {
  TempDir dir("read-file-test-");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.path() + "/f";
  absl::Status missing = ReadFileText(path).status();
  EXPECT_TRUE(absl::IsNotFound(missing)) << missing;
  EXPECT_NE(missing.message().find(path), std::string::npos) << missing;

  ASSERT_TRUE(WriteFileAtomically(path, std::string(5000, 'x'), 0644).ok());
  EXPECT_TRUE(ReadFileText(path).ok());
  absl::Status too_long = ReadFileText(path, 4096).status();
  EXPECT_TRUE(absl::IsOutOfRange(too_long)) << too_long;
  EXPECT_NE(too_long.message().find(path), std::string::npos) << too_long;

  absl::Status directory = ReadFileText(dir.path()).status();  // read(2) says EISDIR
  EXPECT_TRUE(absl::IsInternal(directory)) << directory;
}

TEST(FileIoTest, TheControllerIdRoundTripsAndIsEmptyWhenNeverWritten) {
  TempDir dir("controller-id-test-");
  ASSERT_TRUE(dir.ok());
  absl::StatusOr<std::string> none = ReadControllerId(dir.path());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, "");
  ASSERT_TRUE(WriteControllerId(dir.path(), "db-1").ok());
  ASSERT_TRUE(WriteControllerId(dir.path(), "db-2").ok());
  absl::StatusOr<std::string> id = ReadControllerId(dir.path());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "db-2");
  ASSERT_TRUE(
      WriteFileAtomically(dir.path() + "/controller_id", std::string(5000, 'x'), 0644).ok());
  EXPECT_FALSE(ReadControllerId(dir.path()).ok());
}

}  // namespace
}  // namespace bench::agent
