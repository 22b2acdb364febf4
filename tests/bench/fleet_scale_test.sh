#!/usr/bin/env bash
# The scale run's harness itself (bench.fleet_scale), without a simulator (--sim none):
#  - bad arguments exit 2 with a message naming what is wrong;
#  - a short run against an idle benchd with mTLS writes every raw file and report.md:
#    benchctl results / gpus --outliers / queue called and answered (exit 0), GET /metrics
#    answered 200, benchd sampled from /proc, a live fleet stream received events, the
#    database counted;
#  - nothing it started is left running afterwards.
# Usage: tests/bench/fleet_scale_test.sh BIN_DIR   (benchd and benchctl in BIN_DIR)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$(cd "${1:?usage: $0 BIN_DIR}" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fleet_scale_test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fails=0
check() { # check "what" command...
  local what=$1; shift
  if "$@"; then echo "PASS: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
refused() { # refused "message part" args...: exit 2 and the message on stderr
  local want=$1; shift
  local rc=0
  BIN=$BIN "$ROOT/tests/bench/fleet_scale.sh" "$@" --pki "$TMP/pki" --out "$TMP/bad" \
    >"$TMP/bad.out" 2>"$TMP/bad.err" || rc=$?
  [ "$rc" = 2 ] && grep -qF -- "$want" "$TMP/bad.err"
}
check "no --nodes is refused" refused "--nodes N" --duration 10s
check "--nodes 0 is refused" refused "--nodes N" --nodes 0 --duration 10s
check "a bad duration is refused" refused '--duration: expected' --nodes 1 --duration 5x
check "an unknown fault is refused, named" refused 'unknown fault "flood"' --nodes 1 \
  --duration 10s --faults kill9,flood
check "an unknown argument is refused, named" refused 'unknown argument "--nodez"' --nodez 1
check "a missing simulator is refused" refused "simulator $TMP/nosim is missing" --nodes 1 \
  --duration 10s --sim "$TMP/nosim"

OUT=$TMP/run
rc=0
BIN=$BIN "$ROOT/tests/bench/fleet_scale.sh" --nodes 1 --duration 20s --sim none \
  --web-clients 2 --pki "$TMP/pki" --out "$OUT" >"$TMP/run.log" 2>&1 || rc=$?
check "the run exits 0" [ "$rc" = 0 ]
check "report.md is written" test -s "$OUT/report.md"
for c in results "gpus --outliers" queue; do
  check "benchctl $c was called and answered" \
    awk -F, -v c="$c" '$2 == c && $4 == "0" {n++} END {exit !(n >= 1)}' "$OUT/ctl.csv"
  check "no benchctl $c call failed" awk -F, -v c="$c" '$2 == c && $4 != "0" {exit 1}' "$OUT/ctl.csv"
done
check "GET /metrics was timed and answered 200" awk -F, '$2 == 200 {n++} END {exit !(n >= 1)}' "$OUT/metrics.csv"
check "benchd was sampled from /proc" grep -q ',benchd,' "$OUT/proc.csv"
check "a fleet stream received events" \
  awk -F, '$2 == "/api/v1/fleet/events" && $6 > 0 {n++} END {exit !(n >= 1)}' "$OUT/streams.csv"
check "the database was counted" test -f "$OUT/db_counts.csv"
check "the report has the targets table" grep -q '^| GET /metrics | < 1 s |' "$OUT/report.md"
no_leftovers() { # benchd, Prometheus and the observers, each named by a path of this run
  ! pgrep -f -- "--db $OUT/bench.db" >/dev/null &&
    ! pgrep -f -- "--storage.tsdb.path=$OUT/" >/dev/null &&
    ! pgrep -f -- "fleet_watch.py --out $OUT" >/dev/null
}
check "nothing it started is still running" no_leftovers
if [ "$fails" -gt 0 ]; then
  echo "--- run.log"; tail -n 40 "$TMP/run.log"
  for f in "$OUT"/*.log; do echo "--- $f"; tail -n 15 "$f"; done
  exit 1
fi
