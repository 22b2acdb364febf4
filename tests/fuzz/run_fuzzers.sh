#!/usr/bin/env bash
# Builds benchfleet's libFuzzer targets with clang (ASan + UBSan + libFuzzer, the whole
# project instrumented) in build-fuzz/ and runs each for SECONDS (default 600), one at a
# time, under nice -n 19 (the machine is shared). docs/fuzzing.md has the results.
#
#   tests/fuzz/run_fuzzers.sh [SECONDS] [TARGET...]   TARGET: trainer_event spec_validation
#                                                     inventory_validation spool http_request
#                                                     token_table http_auth slurm_scontrol
#                                                     coco_annotations
# Environment: BUILD_DIR (build-fuzz), CXX_FUZZ (clang++-14), JOBS (2, for the build).
#
# Each fuzzer starts from a copy of tests/fuzz/corpus/<name>/ in BUILD_DIR/fuzz-corpus/
# <name>/ (new inputs go there, not into the source tree; copy the interesting ones
# back, minimized with -merge=1). Logs: BUILD_DIR/fuzz-logs/<name>.log, ending with
# libFuzzer's final stats. Crashes, leaks, timeouts and out-of-memory inputs land in
# BUILD_DIR/fuzz-artifacts/<name>/ and make the script exit 1.
set -euo pipefail

seconds=${1:-600}
shift || true
all=(trainer_event spec_validation inventory_validation spool http_request token_table http_auth
  slurm_scontrol coco_annotations)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all[@]}")

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
cxx=${CXX_FUZZ:-clang++-14}
cc=${cxx/clang++/clang}
jobs=${JOBS:-2}

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# -O1 -g and no NDEBUG: asserts stay on. fuzzer-no-link instruments every library of
# the project for coverage; the fuzz executables add -fsanitize=fuzzer themselves.
sanitize="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
nice -n 19 cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_CXX_FLAGS="$sanitize" -DCMAKE_C_FLAGS="$sanitize" \
  -DBENCH_FUZZ=ON -DBENCH_BUILD_TRAINER=OFF >/dev/null
nice -n 19 cmake --build "$build" -j"$jobs" --target "${targets[@]/#/fuzz_}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=0
for name in "${targets[@]}"; do
  corpus=$build/fuzz-corpus/$name
  artifacts=$build/fuzz-artifacts/$name
  log=$build/fuzz-logs/$name.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  cp -n "$root/tests/fuzz/corpus/$name/"* "$corpus/" 2>/dev/null || true
  echo "== fuzz_$name for ${seconds}s (log: $log)"
  rc=0
  # One process (no -jobs/-fork): at most one fuzzer runs at a time.
  # The spool logs every corrupt record it skips: its stderr is closed (-close_fd_mask=2;
  # libFuzzer's output and the sanitizers' reports still reach the log).
  quiet=()
  [[ $name != spool ]] || quiet=(-close_fd_mask=2)
  nice -n 19 "$build/tests/fuzz/fuzz_$name" "$corpus" \
    -max_total_time="$seconds" -print_final_stats=1 -timeout=25 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/" "${quiet[@]}" >"$log" 2>&1 || rc=$?
  grep -E '^(#[0-9]+[[:space:]]+DONE|stat::|Done )' "$log" | tail -n 12 || true
  if [[ $rc -ne 0 ]] || compgen -G "$artifacts/*" >/dev/null; then
    echo "!! fuzz_$name: exit $rc; artifacts:" "$artifacts"/* >&2
    failed=1
  fi
done
exit $failed
