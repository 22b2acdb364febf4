#include "worker/train/fatal_signal.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace bench_train {
namespace {

struct SignalInfo {
  int signal;
  const char* name;
  const char* what;
  const char* hint;
};

// Hints are plain ASCII without quotes or backslashes: they go into JSON unescaped.
const SignalInfo kSignals[] = {
    {SIGFPE, "SIGFPE", "arithmetic exception",
     "inside libtorch this is most often oneDNN's brgemm convolutions (AVX2 and newer) "
     "dividing by zero when the CPU reports no cache sizes (oneDNN 3.x on a VM whose CPUID "
     "has no cache topology, docs/cuda-build-check.md). Retry with ONEDNN_MAX_CPU_ISA=AVX in "
     "the environment (slower convolutions), or on a machine that reports its CPU caches"},
    {SIGILL, "SIGILL", "illegal instruction",
     "a kernel used an instruction this CPU lacks (a library built for a newer CPU, or CPU "
     "features a VM advertises but does not run). Retry with ONEDNN_MAX_CPU_ISA=AVX2 and "
     "ATEN_CPU_CAPABILITY=avx2 (or AVX and default) in the environment"},
    {SIGSEGV, "SIGSEGV", "invalid memory access",
     "a crash in bench-train or libtorch (a bug, a stack overflow or mismatched libraries). "
     "Rerun under gdb or with core dumps enabled for a backtrace, and report it with the "
     "start event's versions"},
    {SIGBUS, "SIGBUS", "bus error",
     "a memory-mapped file or shared memory could not be accessed (a file shrank while mapped, "
     "or /dev/shm is full). Check free space in /dev/shm and the data folder, then retry"},
};
constexpr int kNumSignals = sizeof(kSignals) / sizeof(kSignals[0]);

// Prepared when installed: everything before and after the fault details.
struct Prepared {
  char head[512];   // {"event":"error","rank":R,"message":"bench-train rank R died of SIG (what)
  size_t head_len;
  char tail[1024];  // : hint (machine note)"}\n
  size_t tail_len;
};
Prepared g_prepared[kNumSignals];
int g_rank = 0;
bool g_installed = false;
std::atomic<int> g_reporting{0};
alignas(16) char g_alt_stack[64 * 1024];

// Set once at install: a note about this machine appended to the SIGFPE hint.
std::string MachineNote(int signal) {
  if (signal != SIGFPE) return "";
  struct stat st;
  if (::stat("/sys/devices/system/cpu/cpu0/cache", &st) != 0) {
    return " (this machine reports no CPU caches: /sys/devices/system/cpu/cpu0/cache is missing)";
  }
  return "";
}

void CopyBounded(char* out, size_t capacity, size_t* len, const std::string& text) {
  const size_t n = text.size() < capacity ? text.size() : capacity;
  std::memcpy(out, text.data(), n);
  *len = n;
}

void Prepare() {
  const std::string rank = std::to_string(g_rank);
  for (int i = 0; i < kNumSignals; ++i) {
    const SignalInfo& info = kSignals[i];
    const std::string head = "{\"event\":\"error\",\"rank\":" + rank +
                             ",\"message\":\"bench-train rank " + rank + " died of " + info.name +
                             " (" + info.what;
    const std::string tail = "): " + std::string(info.hint) + MachineNote(info.signal) + "\"}\n";
    CopyBounded(g_prepared[i].head, sizeof(g_prepared[i].head), &g_prepared[i].head_len, head);
    // The tail must keep its closing "}\n even if a hint were too long.
    if (tail.size() <= sizeof(g_prepared[i].tail)) {
      CopyBounded(g_prepared[i].tail, sizeof(g_prepared[i].tail), &g_prepared[i].tail_len, tail);
    } else {
      CopyBounded(g_prepared[i].tail, sizeof(g_prepared[i].tail), &g_prepared[i].tail_len,
                  "): see stderr\"}\n");
    }
  }
}

// --- Async-signal-safe helpers ---------------------------------------------------------

struct Buffer {
  char data[2048];
  size_t len = 0;
  void Append(const char* text, size_t n) {
    if (n > sizeof(data) - len) n = sizeof(data) - len;
    std::memcpy(data + len, text, n);  // memcpy is async-signal-safe in practice (glibc)
    len += n;
  }
  void Append(const char* text) { Append(text, std::strlen(text)); }
  void AppendUnsigned(uintmax_t value, int base) {
    char digits[32];
    int n = 0;
    do {
      digits[n++] = "0123456789abcdef"[value % base];
      value /= base;
    } while (value != 0 && n < 32);
    char out[32];
    for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
    Append(out, n);
  }
};

void WriteAll(int fd, const char* data, size_t len) {
  while (len > 0) {
    const ssize_t n = ::write(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    len -= static_cast<size_t>(n);
  }
}

void AppendDetails(Buffer& out, int signal, const siginfo_t* info) {
  if (info == nullptr) return;
  if (info->si_code <= 0) {  // SI_USER, SI_QUEUE, SI_TKILL: sent, not a fault
    out.Append(", sent by process ");
    out.AppendUnsigned(static_cast<uintmax_t>(info->si_pid), 10);
    return;
  }
  if (signal == SIGFPE) {
    if (info->si_code == FPE_INTDIV) out.Append(": integer division by zero");
    if (info->si_code == FPE_INTOVF) out.Append(": integer overflow");
  }
  out.Append(" at address 0x");
  out.AppendUnsigned(reinterpret_cast<uintptr_t>(info->si_addr), 16);
}

void OnFatalSignal(int signal, siginfo_t* info, void* /*context*/) {
  if (g_reporting.exchange(1) != 0) {
    // Another thread is reporting; it exits the process.
    for (;;) ::pause();
  }
  int index = -1;
  for (int i = 0; i < kNumSignals; ++i) {
    if (kSignals[i].signal == signal) index = i;
  }
  if (index >= 0) {
    const Prepared& p = g_prepared[index];
    Buffer line;
    line.Append(p.head, p.head_len);
    AppendDetails(line, signal, info);
    line.Append(p.tail, p.tail_len);
    WriteAll(STDOUT_FILENO, line.data, line.len);
    // The same line on stderr, for the log.
    static const char kStderrPrefix[] = "[bench-train] fatal: ";
    WriteAll(STDERR_FILENO, kStderrPrefix, sizeof(kStderrPrefix) - 1);
    WriteAll(STDERR_FILENO, line.data, line.len);
  }
  ::_exit(1);
}

}  // namespace

void InstallFatalSignalReporter(int rank) {
  g_rank = rank;
  Prepare();
  if (g_installed) return;
  g_installed = true;

  stack_t stack{};
  stack.ss_sp = g_alt_stack;
  stack.ss_size = sizeof(g_alt_stack);
  stack.ss_flags = 0;
  ::sigaltstack(&stack, nullptr);  // best effort: without it, overflows are not reported

  struct sigaction action{};
  action.sa_sigaction = &OnFatalSignal;
  sigemptyset(&action.sa_mask);
  for (const SignalInfo& info : kSignals) sigaddset(&action.sa_mask, info.signal);
  // The four signals are blocked while the handler runs, so a fault inside the handler
  // ends the process the default way. No SA_RESETHAND: a second thread faulting meanwhile
  // must wait in the handler, not die before the first thread's line is written.
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  for (const SignalInfo& info : kSignals) ::sigaction(info.signal, &action, nullptr);
}

void SetFatalSignalRank(int rank) {
  g_rank = rank;
  Prepare();
}

std::string FatalSignalHint(int signal) {
  for (const SignalInfo& info : kSignals) {
    if (info.signal == signal) {
      return std::string(info.name) + " (" + info.what + "): " + info.hint + MachineNote(signal);
    }
  }
  return "";
}

}  // namespace bench_train
