#include "common/log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <regex>
#include <string>

namespace bench {
namespace {

// What `log` writes on stderr.
template <typename F>
std::string CaptureStderr(F log) {
  char path[] = "/tmp/bench_log_test_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  const int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  log();
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string out;
  char buffer[512];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) out.append(buffer, n);
  close(fd);
  unlink(path);
  return out;
}

TEST(LogTest, OneLineWithTimeComponentAndPieces) {
  const std::string out = CaptureStderr([] {
    SetLogComponent("bench-test");
    Log("job-", 7, " ran ", 2.5, " s at ", 1234.5678, " images/s, ", int64_t{-3}, " ",
        std::string("left"));
    SetLogComponent("bench");
  });
  EXPECT_TRUE(std::regex_match(
      out, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z bench-test: job-7 ran 2\.5 s )"
                      R"(at 1234\.57 images/s, -3 left\n)")))
      << out;
}

TEST(LogTest, LogLineWritesTheMessageAsIs) {
  const std::string out = CaptureStderr([] { LogLine("50% done"); });
  EXPECT_NE(out.find(" bench: 50% done\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace bench
