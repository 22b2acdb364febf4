#!/usr/bin/env bash
# Measures, on loopback with CPU slots, the time from `benchctl submit` to every rank's
# first iteration being stored in SQLite (benchd + 2 agents of 2 slots, a 4-rank job
# spanning both). Also prints the first step's own duration, so that the time to the
# *start* of the first iteration can be read off. Usage: tests/bench/submit_latency.sh [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/bin}
REPEATS=${1:-5}
RANKS=4
dir=$(mktemp -d /tmp/bench_latency_XXXXXX)
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])' 2>/dev/null || echo 7650)
export BENCH_SERVER=127.0.0.1:$port
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM $p 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$dir"' EXIT
"$BIN/benchd" --listen "$BENCH_SERVER" --http "" --db "$dir/bench.db" 2>"$dir/benchd.log" & pids+=($!)
for name in a b; do
  "$BIN/bench-agent" --controller "$BENCH_SERVER" --name "$name" --cpu-slots 2 --address 127.0.0.1 \
    2>"$dir/agent-$name.log" & pids+=($!)
done
until [ "$("$BIN/benchctl" agents --format json 2>/dev/null | grep -o '"connected":true' | wc -l)" = 2 ]; do sleep 0.1; done

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
q() { sqlite3 -readonly "$dir/bench.db" "$1" 2>/dev/null || echo 0; }
echo "| run | submit → all $RANKS first iterations stored (ms) | slowest first step (ms) | submit → RUNNING (ms) |"
echo "|---:|---:|---:|---:|"
totals=()
for run in $(seq "$REPEATS"); do
  t0=$(now_ms)
  job=$("$BIN/benchctl" submit --gpus $RANKS --bs 2 --iters 3 --warmup 1 --image-size 64)
  until [ "$(q "SELECT count(DISTINCT rank) FROM samples WHERE job_id='$job' AND iteration=1")" = $RANKS ]; do
    sleep 0.005
  done
  t1=$(now_ms)
  step=$(q "SELECT CAST(max(step_time_s)*1000 AS INTEGER) FROM samples WHERE job_id='$job' AND iteration=1")
  running=$(q "SELECT time_ms FROM job_history WHERE job_id='$job' AND state='RUNNING'")
  queued=$(q "SELECT time_ms FROM job_history WHERE job_id='$job' AND state='QUEUED'")
  echo "| $run | $((t1 - t0)) | $step | $((running - queued)) |"
  totals+=($((t1 - t0)))
  until "$BIN/benchctl" status "$job" | grep -qE 'SUCCEEDED|FAILED|CANCELLED'; do sleep 0.1; done
done
printf '%s\n' "${totals[@]}" | sort -n | awk '{a[NR]=$1} END {print "median: " a[int((NR+1)/2)] " ms over " NR " runs"}'
