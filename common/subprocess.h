// Starts a child process (fork/exec) in its own process group, optionally with its
// stdout/stderr on pipes or appended to files. Used by the agent to run trainer ranks
// and by end-to-end tests to run benchd and agents as real processes.
#pragma once

#include <sys/types.h>

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace bench {

// An exit status that could not be read (waitpid failed); never a real code or signal.
inline constexpr int kExitUnknown = std::numeric_limits<int>::min();

struct SubprocessOptions {
  std::vector<std::string> argv;  // argv[0] is the program (PATH is searched)
  std::vector<std::pair<std::string, std::string>> env;  // set on top of ours
  enum class Output { kInherit, kPipe, kFile, kDiscard };
  Output stdout_mode = Output::kPipe;
  Output stderr_mode = Output::kPipe;
  std::string stdout_path;  // with kFile, appended to
  std::string stderr_path;  // with kFile, appended to
};

// Not thread-safe; one owner. The destructor SIGKILLs the process group if the child
// has not been reaped, then reaps it.
class Subprocess {
 public:
  // Fails (with the errno text) if the program cannot be executed.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(const SubprocessOptions& options);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  // Read ends of the pipes (-1 unless kPipe). Owned by this object.
  int stdout_fd() const { return stdout_fd_; }
  int stderr_fd() const { return stderr_fd_; }

  // Sends `signal` to the child's whole process group.
  void SignalGroup(int signal);
  // Blocks until the child exits. Returns its exit code, -N if signal N killed it, or
  // kExitUnknown if its status could not be read.
  int Wait();
  // The same, without blocking: nullopt while the child runs.
  std::optional<int> TryWait();

 private:
  Subprocess() = default;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::optional<int> exit_code_;
};

// Reads `fd` to EOF, calling `on_line` for each line without its newline (a last line
// without newline included). Returns when the writer closes its end.
void ForEachLine(int fd, const std::function<void(absl::string_view)>& on_line);

// "exit code 3" / "killed by signal 9 (Killed)".
std::string DescribeExit(int exit_code);

}  // namespace bench
