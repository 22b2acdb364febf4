#!/usr/bin/env bash
# The test suite under AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer
# (issue 15, item 5; the result is recorded in docs/sanitizers.md). Builds build-asan with
# -DBENCH_SANITIZE=ON (every target of ours, bench-train included) and runs ctest there.
#   tests/sanitize.sh              # configure, build, run every test (but EXCLUDE below)
#   tests/sanitize.sh -R '^agent'  # extra arguments go to ctest
#   BUILD_DIR=build-asan TEST_JOBS=2 NICE=19 tests/sanitize.sh
# Every AddressSanitizer/LeakSanitizer report, from a test binary or from a process a test
# started (benchd, bench-agent, bench-train, benchctl inherit the environment), is written
# to $BUILD_DIR/sanitizer-logs/ instead of stderr; the script fails if ctest fails or if
# any report is there, so a report from a child whose exit a test tolerates is not lost.
# UBSan's reports go to the process's stderr: GCC 12's libubsan ignores log_path beside
# libasan. -fno-sanitize-recover makes the process exit 1 at the first one.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${BUILD_DIR:-build-asan}
jobs=${TEST_JOBS:-2}
nice=(nice -n "${NICE:-19}")
logs=$root/$build/sanitizer-logs
supp=$root/tests/sanitize

# Nothing is excluded: web.browser runs too (Chromium and node are not instrumented; the
# benchd, agents and trainers it starts are). EXCLUDE='regex' leaves tests out (ctest -E).
EXCLUDE=${EXCLUDE-}

# halt_on_error/abort_on_error=0: the first error ends the process with exit code 1 (23
# for leaks), which ctest or the test reports; no core dumps.
# detect_leaks=1: a leak in our code is a bug too; third-party leaks are suppressed by
# name in tests/sanitize/lsan.supp, each with its reason.
# check_initialization_order=1: static initialisers reading another file's globals.
# detect_stack_use_after_return=1: a callback (gRPC reactors, store completions) that
# outlives the stack frame whose locals it captured by reference.
# log_path: reports go to files (one per process), collected below.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:check_initialization_order=1:strict_init_order=1:detect_odr_violation=2:detect_stack_use_after_return=1:print_suppressions=0:log_path=$logs/asan"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
# -fno-sanitize-recover=undefined already stops at the first report; print_stacktrace
# shows where it came from.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"

"${nice[@]}" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DBENCH_SANITIZE=ON -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
rm -rf "$logs" && mkdir -p "$logs"
# The build runs the test binaries too (gtest_discover_tests lists their tests).
"${nice[@]}" cmake --build "$build" -j "$jobs"

start=$(date +%s)
rc=0
exclude=()
[[ -n "$EXCLUDE" ]] && exclude=(-E "$EXCLUDE")
"${nice[@]}" ctest --test-dir "$build" --output-on-failure --timeout 1800 -j "$jobs" \
  "${exclude[@]}" "$@" || rc=$?
echo "sanitize.sh: ctest exit $rc after $(( $(date +%s) - start )) s"

shopt -s nullglob
reports=("$logs"/*)
if (( ${#reports[@]} )); then
  echo "sanitize.sh: ${#reports[@]} sanitizer report(s) in $logs:"
  for f in "${reports[@]}"; do
    echo "==== $f"
    head -n 60 "$f"
  done
  (( rc )) || rc=1
else
  echo "sanitize.sh: no sanitizer reports"
fi
exit "$rc"
