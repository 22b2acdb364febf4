#!/usr/bin/env bash
# ctest bench.restart_probe: restart_probe.sh against a real benchd (a fresh SQLite file)
# with three real, idle bench-agents on loopback. It finds benchd by its exact command
# line, kills it with -9, starts it again, and reports the seconds until /readyz and
# until the three agents are connected again; the old benchd is gone, the new one runs
# and lists the three agents. Timing-free: every wait is a condition with a deadline.
#
#   restart_probe_test.sh BENCHD BENCH_AGENT BENCHCTL
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 BENCHD BENCH_AGENT BENCHCTL" >&2; exit 2; }
benchd=$1 agent=$2 benchctl=$3
probe=$(dirname "$0")/restart_probe.sh
dir=$(mktemp -d /tmp/restart_probe_test.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  if [ -f "$dir/new.pid" ]; then kill -9 "$(cat "$dir/new.pid")" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do echo "--- $f"; tail -20 "$f"; done
  exit 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { # wait_for SECONDS COMMAND...: until COMMAND succeeds
  local deadline=$(($(date +%s) + $1))
  shift
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

grpc=$(free_port)
http=$(free_port)
export BENCH_SERVER=127.0.0.1:$grpc
cmd=("$benchd" --listen "127.0.0.1:$grpc" --http "127.0.0.1:$http" --db "$dir/bench.db")
"${cmd[@]}" >"$dir/benchd.log" 2>&1 &
old=$!
pids+=("$old")
wait_for 120 "$benchctl" list >/dev/null 2>&1 || fail "benchd did not answer"
for n in a b c; do
  mkdir -p "$dir/state-$n"
  "$agent" --controller "$BENCH_SERVER" --name "node-$n" --address 127.0.0.1 --cpu-slots 1 \
    --state-dir "$dir/state-$n" >"$dir/agent-$n.log" 2>&1 &
  pids+=("$!")
done
three() { [ "$("$benchctl" agents 2>/dev/null | grep -c ' yes ')" -eq 3 ]; }
wait_for 120 three || fail "the three agents did not connect"

out=$(bash "$probe" --agents 3 --readyz "http://127.0.0.1:$http/readyz" --log "$dir/benchd2.log" \
  --timeout 300 --json "$dir/probe.json" -- "${cmd[@]}") || fail "restart_probe.sh failed: $out"
echo "$out"
last=$(echo "$out" | tail -1)
[[ $last =~ ^ready_s=([0-9.]+)\ agents_s=([0-9.]+)\ pid=([0-9]+)$ ]] || fail "last line: $last"
ready_s=${BASH_REMATCH[1]} agents_s=${BASH_REMATCH[2]} new=${BASH_REMATCH[3]}
echo "$new" >"$dir/new.pid"
wait "$old" 2>/dev/null && fail "the old benchd exited 0: it was not killed" || true
[ ! -e "/proc/$old" ] || fail "the old benchd $old is still there"
kill -0 "$new" || fail "the new benchd $new is not running"
awk -v r="$ready_s" -v a="$agents_s" 'BEGIN { exit !(r > 0 && a >= r) }' ||
  fail "ready_s=$ready_s agents_s=$agents_s (want 0 < ready <= agents)"
three || fail "the new benchd does not list the three agents"
grep -q "\"pid\":$new" "$dir/probe.json" || fail "probe.json: $(cat "$dir/probe.json")"
# A command line no process runs: refused with a clear error.
if bash "$probe" --agents 1 --readyz "http://127.0.0.1:$http/readyz" -- /no/such/benchd 2>"$dir/err.log"; then
  fail "restart_probe.sh found a process for /no/such/benchd"
fi
grep -q "0 processes run exactly '/no/such/benchd'" "$dir/err.log" || fail "error: $(cat "$dir/err.log")"
echo PASS
