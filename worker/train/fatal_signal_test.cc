// Real processes: each case forks a child that installs the reporter and then really
// faults (or is sent a signal); the parent checks the child's stdout, stderr and exit.
#include "worker/train/fatal_signal.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>

#include <gtest/gtest.h>

namespace bench_train {
namespace {

struct Child {
  bool exited = false;
  int exit_code = -1;
  int term_signal = 0;
  std::string out;
  std::string err;
};

std::string ReadAll(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(n));
  return text;
}

// Runs `body` in a forked child with stdout and stderr piped back.
Child RunChild(const std::function<void()>& body) {
  int out_pipe[2];
  int err_pipe[2];
  Child child;
  if (::pipe(out_pipe) != 0 || ::pipe(err_pipe) != 0) {
    ADD_FAILURE() << "pipe failed";
    return child;
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork failed";
    return child;
  }
  if (pid == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    body();
    ::_exit(42);  // the body was expected to die
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  child.out = ReadAll(out_pipe[0]);  // the child writes little: no pipe can fill up
  child.err = ReadAll(err_pipe[0]);
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  child.exited = WIFEXITED(status);
  if (child.exited) child.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) child.term_signal = WTERMSIG(status);
  return child;
}

// One JSON error event line of the ErrorEvent shape, with a plain message (no escapes).
void ExpectOneErrorLine(const std::string& out, int rank) {
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.back(), '\n') << out;
  const std::string head =
      "{\"event\":\"error\",\"rank\":" + std::to_string(rank) + ",\"message\":\"";
  EXPECT_EQ(out.rfind(head, 0), 0u) << out;
  EXPECT_EQ(out.substr(out.size() - 3), "\"}\n") << out;
  // Exactly the quotes of the three keys, "error" and the message: nothing unescaped.
  EXPECT_EQ(std::count(out.begin(), out.end(), '"'), 10) << out;
  EXPECT_EQ(out.find('\\'), std::string::npos) << out;
  for (char c : out.substr(0, out.size() - 1)) {
    EXPECT_GE(static_cast<unsigned char>(c), 0x20) << "control character in " << out;
  }
}

// The faults below are undefined behaviour on purpose: under UndefinedBehaviorSanitizer
// (tests/sanitize.sh) they are left uninstrumented so that the CPU really faults and the
// reporter, not the sanitizer, is what these tests see.
#define BENCH_TRAIN_REALLY_FAULTS __attribute__((no_sanitize("undefined")))

BENCH_TRAIN_REALLY_FAULTS int DivideByZero() {
  volatile int numerator = 7;
  volatile int zero = 0;
  return numerator / zero;  // x86 idiv: #DE, delivered as SIGFPE (FPE_INTDIV)
}

TEST(FatalSignalTest, IntegerDivisionByZeroIsAnErrorEventNamingSigfpeAndTheWorkaround) {
  const Child child = RunChild([] {
    InstallFatalSignalReporter(3);
    std::printf("%d\n", DivideByZero());
  });
  EXPECT_TRUE(child.exited) << "killed by signal " << child.term_signal;
  EXPECT_EQ(child.exit_code, 1);
  ExpectOneErrorLine(child.out, 3);
  EXPECT_NE(child.out.find("bench-train rank 3 died of SIGFPE"), std::string::npos) << child.out;
  EXPECT_NE(child.out.find("integer division by zero at address 0x"), std::string::npos)
      << child.out;
  EXPECT_NE(child.out.find("ONEDNN_MAX_CPU_ISA=AVX in the environment"), std::string::npos)
      << child.out;
  EXPECT_NE(child.err.find("died of SIGFPE"), std::string::npos) << child.err;
}

BENCH_TRAIN_REALLY_FAULTS void WriteThroughNull() {
  volatile int* volatile pointer = nullptr;
  *pointer = 1;
}

TEST(FatalSignalTest, NullWriteIsAnErrorEventNamingSigsegvAndTheAddress) {
  const Child child = RunChild([] {
    InstallFatalSignalReporter(0);
    WriteThroughNull();
  });
  EXPECT_TRUE(child.exited) << "killed by signal " << child.term_signal;
  EXPECT_EQ(child.exit_code, 1);
  ExpectOneErrorLine(child.out, 0);
  EXPECT_NE(child.out.find("died of SIGSEGV (invalid memory access at address 0x0)"),
            std::string::npos)
      << child.out;
}

// Recurses with a frame the compiler cannot drop until the stack runs out (on purpose:
// hence the pragmas around it).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winfinite-recursion"
int Recurse(int depth) {
  volatile char frame[4096];
  frame[0] = static_cast<char>(depth);
  return Recurse(depth + 1) + frame[0];
}
#pragma GCC diagnostic pop

TEST(FatalSignalTest, StackOverflowOnTheMainThreadIsReportedFromTheAlternateStack) {
  const Child child = RunChild([] {
    InstallFatalSignalReporter(1);
    std::printf("%d\n", Recurse(0));
  });
  EXPECT_TRUE(child.exited) << "killed by signal " << child.term_signal;
  EXPECT_EQ(child.exit_code, 1);
  ExpectOneErrorLine(child.out, 1);
  EXPECT_NE(child.out.find("died of SIGSEGV"), std::string::npos) << child.out;
}

TEST(FatalSignalTest, ASentSignalNamesTheSenderAndTheRankSetLater) {
  const Child child = RunChild([] {
    InstallFatalSignalReporter(0);
    SetFatalSignalRank(5);
    ::kill(::getpid(), SIGBUS);
  });
  EXPECT_TRUE(child.exited) << "killed by signal " << child.term_signal;
  EXPECT_EQ(child.exit_code, 1);
  ExpectOneErrorLine(child.out, 5);
  EXPECT_NE(child.out.find("bench-train rank 5 died of SIGBUS (bus error, sent by process "),
            std::string::npos)
      << child.out;
}

TEST(FatalSignalTest, OtherSignalsKeepTheirDefaultAction) {
  const Child child = RunChild([] {
    InstallFatalSignalReporter(0);
    ::kill(::getpid(), SIGTERM);
  });
  EXPECT_FALSE(child.exited);
  EXPECT_EQ(child.term_signal, SIGTERM);
  EXPECT_TRUE(child.out.empty()) << child.out;
}

TEST(FatalSignalTest, HintsNameTheSignalAndWhatToTry) {
  EXPECT_NE(FatalSignalHint(SIGFPE).find("oneDNN"), std::string::npos);
  EXPECT_NE(FatalSignalHint(SIGILL).find("ONEDNN_MAX_CPU_ISA"), std::string::npos);
  EXPECT_EQ(FatalSignalHint(SIGSEGV).rfind("SIGSEGV (invalid memory access): ", 0), 0u);
  EXPECT_TRUE(FatalSignalHint(SIGTERM).empty());
}

}  // namespace
}  // namespace bench_train
