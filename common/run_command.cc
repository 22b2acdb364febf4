#include "common/run_command.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/subprocess.h"

namespace bench {

absl::StatusOr<CommandOutput> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout, size_t max_output_bytes) {
  if (argv.empty()) return absl::InvalidArgumentError("RunCommand: no program given");
  SubprocessOptions options;
  options.argv = argv;
  options.stdout_mode = SubprocessOptions::Output::kPipe;
  options.stderr_mode = SubprocessOptions::Output::kPipe;
  absl::StatusOr<std::unique_ptr<Subprocess>> process = Subprocess::Start(options);
  if (!process.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot run ", argv[0], ": ", process.status().message()));
  }
  CommandOutput output;
  struct Stream {
    int fd;
    std::string* text;
  };
  Stream streams[2] = {{(*process)->stdout_fd(), &output.stdout_text},
                       {(*process)->stderr_fd(), &output.stderr_text}};
  bool open[2] = {true, true};
  const absl::Time deadline = absl::Now() + timeout;
  char buffer[8192];
  while (open[0] || open[1]) {
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      (*process)->SignalGroup(SIGKILL);
      (*process)->Wait();
      return absl::UnavailableError(
          absl::StrCat(argv[0], " did not finish within ", absl::FormatDuration(timeout)));
    }
    pollfd fds[2];
    int count = 0;
    int which[2];
    for (int i = 0; i < 2; ++i) {
      if (!open[i]) continue;
      fds[count] = {streams[i].fd, POLLIN, 0};
      which[count++] = i;
    }
    int ready = poll(fds, count, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno != EINTR) break;
    for (int k = 0; k < count && ready > 0; ++k) {
      if (fds[k].revents == 0) continue;
      Stream& stream = streams[which[k]];
      ssize_t n = read(stream.fd, buffer, sizeof(buffer));
      if (n > 0) {
        size_t room = max_output_bytes - std::min(max_output_bytes, stream.text->size());
        stream.text->append(buffer, std::min(room, static_cast<size_t>(n)));
      } else if (n == 0 || errno != EINTR) {
        open[which[k]] = false;
      }
    }
  }
  output.exit_code = (*process)->Wait();
  return output;
}

}  // namespace bench
