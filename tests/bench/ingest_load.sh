#!/usr/bin/env bash
# Ingestion under load: a real benchd on loopback with a fresh SQLite file in a temp dir,
# tests/bench/load_generator streaming samples from simulated agents into it, and
# benchd's RSS (VmRSS) and CPU time sampled every RSS_EVERY seconds. Prints the
# generator's per-interval series and summary, then the RSS series.
#
# Usage: tests/bench/ingest_load.sh [load_generator flags...]
#   e.g. tests/bench/ingest_load.sh --agents 32 --slots 8 --duration 600s --rate 250000
# Environment: BIN (default build-load/bin), RSS_EVERY (s, default 5), KEEP=1 keeps the
# temp dir, VERIFY=0 skips counting the stored rows after benchd stopped.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build-load/bin}
RSS_EVERY=${RSS_EVERY:-5}
VERIFY=${VERIFY:-1}
dir=$(mktemp -d /tmp/ingest_load_XXXXXX)
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
benchd_pid=""
sampler_pid=""
cleanup() {
  [ -n "$sampler_pid" ] && kill "$sampler_pid" 2>/dev/null || true
  [ -n "$benchd_pid" ] && kill -TERM "$benchd_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN/benchd" --listen "127.0.0.1:$port" --http "" --db "$dir/bench.db" 2>"$dir/benchd.log" &
benchd_pid=$!
for _ in $(seq 100); do
  grep -q "listening\|serving" "$dir/benchd.log" 2>/dev/null && break
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done

ticks=$(getconf CLK_TCK)
(
  t0=$(date +%s.%N)
  while kill -0 "$benchd_pid" 2>/dev/null; do
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$benchd_pid/status" 2>/dev/null || echo 0)
    cpu=$(awk -v t="$ticks" '{printf "%.1f", ($14 + $15) / t}' "/proc/$benchd_pid/stat" 2>/dev/null || echo 0)
    db=$(du -cm "$dir"/bench.db* 2>/dev/null | tail -1 | cut -f1)
    echo "$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN {printf "%.0f", a - b}') $rss $cpu $db $(cut -d' ' -f1 /proc/loadavg)"
    sleep "$RSS_EVERY"
  done
) >"$dir/rss.txt" &
sampler_pid=$!

rc=0
"$BIN/load_generator" --target "127.0.0.1:$port" "$@" | tee "$dir/generator.txt" || rc=$?
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
cpu_end=$(awk -v t="$ticks" '{printf "%.2f", ($14 + $15) / t}' "/proc/$benchd_pid/stat")
kill "$sampler_pid" 2>/dev/null || true
wait "$sampler_pid" 2>/dev/null || true
sampler_pid=""

echo
echo "benchd RSS every ${RSS_EVERY} s (t_s rss_MiB benchd_cpu_s db+wal_MiB load1):"
awk '{printf "%s %.1f %s %s %s\n", $1, $2 / 1024, $3, $4, $5}' "$dir/rss.txt" | column -t
awk 'NR == 1 {first = $2} $1 >= 60 && !m1 {m1 = $2} {rss[NR] = $2; if ($2 > max) max = $2}
     END {printf "benchd RSS: idle %.1f MiB, at 1 min %s, middle %.1f MiB, end %.1f MiB, max %.1f MiB\n",
          first / 1024, m1 ? sprintf("%.1f MiB", m1 / 1024) : "n/a", rss[int((NR + 1) / 2)] / 1024,
          rss[NR] / 1024, max / 1024}' "$dir/rss.txt"
awk 'NR == 1 {c0 = $3; t0 = $1} {c = $3; t = $1}
     END {if (t > t0) printf "benchd CPU: %.1f s over %d s = %.2f cores\n", c - c0, t - t0, (c - c0) / (t - t0)}' \
  "$dir/rss.txt"
stored=$(sed -n 's/^summary: stored \([0-9]*\) samples.*/\1/p' "$dir/generator.txt")
awk -v n="${stored:-0}" -v c="$cpu_end" 'BEGIN {if (n > 0) printf "benchd CPU per committed sample: %.2f us (all its CPU time from start to the end of the run, %s s)\n", c * 1e6 / n, c}'

kill -TERM "$benchd_pid" 2>/dev/null || true
wait "$benchd_pid" 2>/dev/null || true
benchd_pid=""
if [ "$VERIFY" = 1 ] && command -v sqlite3 >/dev/null; then
  echo "rows in samples after benchd stopped: $(sqlite3 -readonly "$dir/bench.db" 'SELECT count(*) FROM samples')"
fi
echo "database: $(du -cm "$dir"/bench.db* | tail -1 | cut -f1) MiB"
grep -i "dropped\|error\|fail" "$dir/benchd.log" | head -5 || true
exit "$rc"
