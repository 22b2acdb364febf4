#!/usr/bin/env bash
# The tests under AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer
# (issue 15, item 5; issue 24, item 9: CI runs it from tests/run.sh with CI=true; the
# result is recorded in docs/sanitizers.md). Builds build-asan with -DBENCH_SANITIZE=ON
# and runs ctest there. By default, as CI runs it, without bench-train
# (-DBENCH_BUILD_TRAINER=OFF: no libtorch) and only the tests of the non-libtorch
# components: the labels in SANITIZE_LABELS (server, httpd, agent, ctl, report, common and the
# fuzz corpora's replays).
#   tests/sanitize.sh              # configure, build, run the SANITIZE_LABELS tests
#   tests/sanitize.sh -R '^agent'  # extra arguments go to ctest (instead of the labels)
#   SANITIZE_TRAINER=1 SANITIZE_LABELS=all tests/sanitize.sh   # everything, bench-train too
#   BUILD_DIR=build-asan TEST_JOBS=2 NICE=19 tests/sanitize.sh
# Every AddressSanitizer/LeakSanitizer report, from a test binary or from a process a test
# started (benchd, bench-agent, bench-train, benchctl inherit the environment), is written
# to $BUILD_DIR/sanitizer-logs/ instead of stderr; the script fails if ctest fails or if
# any report is there, so a report from a child whose exit a test tolerates is not lost.
# UBSan's reports go to the process's stderr: GCC 12's libubsan ignores log_path beside
# libasan. -fno-sanitize-recover makes the process exit 1 at the first one.
# The build uses ccache when it is installed (not required).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${BUILD_DIR:-build-asan}
jobs=${TEST_JOBS:-2}
nice=(nice -n "${NICE:-19}")
logs=$root/$build/sanitizer-logs
supp=$root/tests/sanitize

# EXCLUDE='regex' leaves tests out (ctest -E). With SANITIZE_LABELS=all and
# SANITIZE_TRAINER=1 web.browser runs too (Chromium and node are not instrumented; the
# benchd, agents and trainers it starts are).
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

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
trainer=OFF
[[ ${SANITIZE_TRAINER:-0} == 1 ]] && trainer=ON
"${nice[@]}" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DBENCH_SANITIZE=ON -DBENCH_BUILD_TRAINER="$trainer" "${launcher[@]}"
rm -rf "$logs" && mkdir -p "$logs"
# The build runs the test binaries too (gtest_discover_tests lists their tests).
"${nice[@]}" cmake --build "$build" -j "$jobs"

start=$(date +%s)
rc=0
select=()
[[ -n "$EXCLUDE" ]] && select=(-E "$EXCLUDE")
# No extra arguments: the labels CI runs (ctest -L takes a regular expression).
labels=${SANITIZE_LABELS:-server|httpd|agent|sim|ctl|report|common|fuzz}
(($#)) || [[ $labels == all ]] || select+=(-L "^($labels)\$")
# --no-tests=error: a selection that matches nothing fails instead of passing.
"${nice[@]}" ctest --test-dir "$build" --output-on-failure --no-tests=error --timeout 1800 \
  -j "$jobs" "${select[@]}" "$@" 2>&1 | tee "$root/$build/ctest-output.log" || rc=$?
echo "sanitize.sh: ctest exit $rc after $(( $(date +%s) - start )) s"
# A skipped test is a test that did not run: only HostMemoryTest may skip here (it
# measures glibc's malloc, which ASan replaces).
bash "$root/tests/ci/checks.sh" skips "$root/$build/ctest-output.log" \
  '^train\.HostMemoryTest\.' || rc=1

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
