#!/usr/bin/env bash
# The test command: installs what is needed (Debian 12), builds, runs every test.
#   tests/run.sh            # all tests
#   tests/run.sh -R e2e     # extra arguments go to ctest
#
# With CI=true (CI runs `CI=true bash .ci/run`), the run cannot shrink silently
# (tests/ci/checks.sh, docs/ARCHITECTURE.md):
#   - after configuring, every optional component must be there (the ones CMake detects,
#     bench_components.txt, and the tools the tests run), else it fails naming them;
#   - after building, `ctest -N` must list at least the count in tests/expected_test_count;
#   - no test may be skipped;
#   - then the fuzzers run (tests/fuzz/run_fuzzers.sh, build-fuzz/, clang's libFuzzer, each
#     for BENCH_CI_FUZZ_SECONDS, default 20; docs/fuzzing.md) and the non-libtorch
#     components' tests run under ASan and UBSan (tests/sanitize.sh, build-asan/;
#     docs/sanitizers.md). BENCH_CI_FUZZ=0 or BENCH_CI_SANITIZE=0 leaves either out;
#     outside CI, BENCH_CI_FUZZ=1 or BENCH_CI_SANITIZE=1 adds it.
# Each step's wall time and CPU time (user+sys of its processes) is printed at the end
# (docs/PERFORMANCE.md, "CI's time").
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${BUILD_DIR:-build}
[[ $build == /* ]] || build=$root/$build
ci=false
case "${CI:-}" in true | TRUE | True | 1 | yes) ci=true ;; esac
fuzz=${BENCH_CI_FUZZ:-$([[ $ci == true ]] && echo 1 || echo 0)}
sanitize=${BENCH_CI_SANITIZE:-$([[ $ci == true ]] && echo 1 || echo 0)}
checks=(bash "$root/tests/ci/checks.sh")

# step NAME COMMAND...: runs COMMAND, records its wall and CPU seconds.
timings=()
step() {
  local name=$1
  shift
  local start=$SECONDS before rc=0
  cpu_seconds
  before=$cpu
  "$@" || rc=$?
  cpu_seconds
  timings+=("$(printf '%-10s wall %5d s   cpu %7.1f s   exit %d' "$name" $((SECONDS - start)) \
    "$(awk -v a="$cpu" -v b="$before" 'BEGIN { print a - b }')" "$rc")")
  return "$rc"
}
# Sets cpu to the user+sys seconds of this shell's finished children (bash's `times`,
# second line; run in this shell, not in a command substitution's subshell).
cpu_times=$(mktemp)
cpu_seconds() {
  times >"$cpu_times"
  cpu=$(awk 'NR == 2 {
    total = 0
    for (i = 1; i <= 2; i++) { split($i, t, "m"); sub("s", "", t[2]); total += t[1] * 60 + t[2] }
    print total }' "$cpu_times")
}
report() {
  local rc=$?
  rm -f "$cpu_times"
  if ((${#timings[@]})); then
    echo "run.sh: step times (wall, and CPU user+sys of the step's processes):"
    printf '  %s\n' "${timings[@]}"
  fi
  return "$rc"
}
trap report EXIT

step deps bash deploy/install-deps.sh
if [[ $ci == true ]]; then
  # Configure first (deploy/build.sh configures the same way), so that a missing
  # component fails the run before the long build.
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  step configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
    "${launcher[@]}"
  step components "${checks[@]}" components "$build"
fi
step build env BUILD_DIR="$build" bash deploy/build.sh
[[ $ci == true ]] && step count "${checks[@]}" count "$build" "$root/tests/expected_test_count"

log=$build/ctest-output.log
step ctest bash -c 'set -o pipefail; ctest --test-dir "$1" --output-on-failure --timeout 1200 \
  -j "$2" "${@:4}" 2>&1 | tee "$3"' ctest "$build" "${TEST_JOBS:-2}" "$log" "$@"
[[ $ci == true ]] && step skips "${checks[@]}" skips "$log"

if [[ $fuzz == 1 ]]; then
  # Their own build directories (build-fuzz/, build-asan/), not BUILD_DIR.
  step fuzz env -u BUILD_DIR bash tests/fuzz/run_fuzzers.sh "${BENCH_CI_FUZZ_SECONDS:-20}"
fi
if [[ $sanitize == 1 ]]; then
  step sanitize env -u BUILD_DIR bash tests/sanitize.sh
fi
