#include "common/run_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bench {
namespace {

using ::testing::HasSubstr;

TEST(RunCommandTest, KeepsStdoutAndStderrApartWithTheExitCode) {
  absl::StatusOr<CommandOutput> out =
      RunCommand({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, absl::Seconds(10));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->exit_code, 3);
  EXPECT_EQ(out->stdout_text, "out\n");
  EXPECT_EQ(out->stderr_text, "err\n");
}

TEST(RunCommandTest, ALargeOutputOnBothStreamsDoesNotDeadlockAndIsCapped) {
  absl::StatusOr<CommandOutput> out = RunCommand(
      {"/bin/sh", "-c", "head -c 300000 /dev/zero; head -c 300000 /dev/zero >&2; echo done"},
      absl::Seconds(10), /*max_output_bytes=*/100000);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->exit_code, 0);
  EXPECT_EQ(out->stdout_text.size(), 100000u);
  EXPECT_EQ(out->stderr_text.size(), 100000u);
}

TEST(RunCommandTest, ACommandPastItsDeadlineIsKilledAndNamed) {
  absl::Time start = absl::Now();
  absl::StatusOr<CommandOutput> out = RunCommand({"/bin/sleep", "30"}, absl::Milliseconds(300));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(out.status().message(), HasSubstr("/bin/sleep did not finish within 300ms"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(RunCommandTest, AMissingProgramIsUnavailableNamingIt) {
  absl::StatusOr<CommandOutput> out = RunCommand({"/nonexistent/sbatch"}, absl::Seconds(5));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(out.status().message(), HasSubstr("/nonexistent/sbatch"));
}

}  // namespace
}  // namespace bench
