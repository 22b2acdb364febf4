#include "common/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace bench {
namespace {

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return kExitUnknown;
}

// Our environment with `overrides` set on top, as execvpe wants it. Built before fork:
// the child of a threaded process may only make async-signal-safe calls.
std::vector<std::string> MergedEnvironment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> merged;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    absl::string_view text(*entry);
    absl::string_view key = text.substr(0, text.find('='));
    bool overridden = false;
    for (const auto& [name, value] : overrides) overridden |= key == name;
    if (!overridden) merged.emplace_back(text);
  }
  for (const auto& [name, value] : overrides) merged.push_back(absl::StrCat(name, "=", value));
  return merged;
}

// Runs in the child after fork: only async-signal-safe calls until exec.
[[noreturn]] void ExecChild(const SubprocessOptions& options, char** argv, char** envp,
                            int out_w, int err_w, int error_pipe_w) {
  setpgid(0, 0);
  // A clean signal state: nothing blocked or ignored is inherited from the parent.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGPIPE, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  auto redirect = [](SubprocessOptions::Output mode, int pipe_w, const char* path,
                     int target) {
    if (mode == SubprocessOptions::Output::kPipe) {
      dup2(pipe_w, target);
    } else if (mode == SubprocessOptions::Output::kFile) {
      int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd >= 0) dup2(fd, target);
    } else if (mode == SubprocessOptions::Output::kDiscard) {
      int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (fd >= 0) dup2(fd, target);
    }
  };
  redirect(options.stdout_mode, out_w, options.stdout_path.c_str(), STDOUT_FILENO);
  redirect(options.stderr_mode, err_w, options.stderr_path.c_str(), STDERR_FILENO);
  int null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_in >= 0) dup2(null_in, STDIN_FILENO);
  execvpe(argv[0], argv, envp);
  int err = errno;
  (void)!write(error_pipe_w, &err, sizeof(err));
  _exit(127);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(
    const SubprocessOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("subprocess: empty argv");
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0],
                   exec_pipe[1]}) {
      if (fd >= 0) close(fd);
    }
  };
  if ((options.stdout_mode == SubprocessOptions::Output::kPipe &&
       pipe2(out_pipe, O_CLOEXEC) != 0) ||
      (options.stderr_mode == SubprocessOptions::Output::kPipe &&
       pipe2(err_pipe, O_CLOEXEC) != 0) ||
      pipe2(exec_pipe, O_CLOEXEC) != 0) {
    int err = errno;
    close_all();
    return absl::InternalError(absl::StrCat("subprocess: pipe: ", strerror(err)));
  }
  std::vector<char*> argv;
  for (const auto& arg : options.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> environment = MergedEnvironment(options.env);
  std::vector<char*> envp;
  for (auto& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close_all();
    return absl::ResourceExhaustedError(absl::StrCat("subprocess: fork: ", strerror(err)));
  }
  if (pid == 0) {
    ExecChild(options, argv.data(), envp.data(), out_pipe[1], err_pipe[1], exec_pipe[1]);
  }

  setpgid(pid, pid);  // also in the parent, so that SignalGroup works at once
  close(exec_pipe[1]);
  exec_pipe[1] = -1;
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(exec_pipe[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  if (n == sizeof(child_errno)) {
    int status = 0;
    waitpid(pid, &status, 0);
    close_all();
    return absl::NotFoundError(absl::StrCat("cannot execute ", options.argv[0], ": ",
                                            strerror(child_errno)));
  }
  close(exec_pipe[0]);
  auto process = std::unique_ptr<Subprocess>(new Subprocess());
  process->pid_ = pid;
  if (out_pipe[1] >= 0) close(out_pipe[1]);
  if (err_pipe[1] >= 0) close(err_pipe[1]);
  process->stdout_fd_ = out_pipe[0];
  process->stderr_fd_ = err_pipe[0];
  return process;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !exit_code_.has_value()) {
    SignalGroup(SIGKILL);
    Wait();
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
  if (stderr_fd_ >= 0) close(stderr_fd_);
}

void Subprocess::SignalGroup(int signal) {
  if (pid_ > 0 && !exit_code_.has_value()) kill(-pid_, signal);
}

int Subprocess::Wait() {
  if (exit_code_.has_value()) return *exit_code_;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  exit_code_ = r == pid_ ? DecodeWaitStatus(status) : kExitUnknown;
  return *exit_code_;
}

std::optional<int> Subprocess::TryWait() {
  if (exit_code_.has_value()) return exit_code_;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return std::nullopt;
  exit_code_ = r == pid_ ? DecodeWaitStatus(status) : kExitUnknown;
  return exit_code_;
}

void ForEachLine(int fd, const std::function<void(absl::string_view)>& on_line) {
  std::string buffer;
  char chunk[65536];
  while (true) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
    size_t start = 0, newline;
    while ((newline = buffer.find('\n', start)) != std::string::npos) {
      on_line(absl::string_view(buffer).substr(start, newline - start));
      start = newline + 1;
    }
    buffer.erase(0, start);
  }
  if (!buffer.empty()) on_line(buffer);
}

std::string DescribeExit(int exit_code) {
  if (exit_code == kExitUnknown) return "exit status unknown";
  if (exit_code >= 0) return absl::StrCat("exit code ", exit_code);
  return absl::StrCat("killed by signal ", -exit_code, " (", strsignal(-exit_code), ")");
}

}  // namespace bench
