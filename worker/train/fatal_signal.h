// Turns a fatal signal into bench-train's `error` event instead of a bare signal death.
//
// A crash inside libtorch (SIGSEGV, SIGFPE, SIGILL, SIGBUS; e.g. oneDNN's SIGFPE on a VM
// that reports no CPU cache sizes, docs/cuda-build-check.md) would otherwise end the rank
// with no event at all. InstallFatalSignalReporter() installs handlers for those four
// signals that write one JSON line to stdout, the same shape as event_writer's ErrorEvent:
//   {"event":"error","rank":R,"message":"bench-train rank R died of SIGFPE (...) ...; try ..."}
// naming the signal, where it came from (the faulting address, or the sending process)
// and what to try, and the same line on stderr; then the process exits with status 1
// (main.cc: 1 for any failure that is not a usage error). The handlers are
// async-signal-safe: every message is formatted when installed (and by SetRank), and
// the handler only copies bytes into a stack buffer and calls write(2) and _exit(2).
// Only the first signal is reported: a second thread faulting meanwhile waits for the
// exit. The main thread gets an alternate signal stack, so a stack overflow there is
// reported too (other threads' overflows are not).
//
// Install once, at the top of main(), before any thread starts; not thread-safe.
// stdout must be line-flushed (EventWriter flushes every event), so the error line
// never lands inside another event's line.
#ifndef BENCHFLEET_WORKER_TRAIN_FATAL_SIGNAL_H_
#define BENCHFLEET_WORKER_TRAIN_FATAL_SIGNAL_H_

#include <string>

namespace bench_train {

// Installs the handlers; `rank` goes in the events (best effort before the
// environment is parsed). Calling it again only updates the rank.
void InstallFatalSignalReporter(int rank);

// Updates the rank in the prepared events (call from the thread that installed them,
// while no fatal signal is being handled).
void SetFatalSignalRank(int rank);

// The message the handler would report for `signal` (without the fault details added
// at delivery); empty for a signal it does not handle. For tests and logs.
std::string FatalSignalHint(int signal);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_FATAL_SIGNAL_H_
