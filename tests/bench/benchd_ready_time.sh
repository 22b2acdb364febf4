#!/bin/bash
# benchd's restart time (docs/PERFORMANCE.md, "Reads and restart at 100,000 jobs and
# 100 M rows"): starts BENCHD on DB, polls /readyz every 20 ms until it answers 200 (or
# 60 s pass), and prints the wall time, benchd's CPU time until then (from /proc) and
# the load average; then stops benchd.
#   tests/bench/benchd_ready_time.sh build/bin/benchd /tmp/wab27/bench.db [HTTP_PORT]
set -u
benchd=$1 db=$2 port=${3:-18931}
log=$(mktemp /tmp/benchd_ready_time_XXXXXX.log)
start=$(date +%s%N)
"$benchd" --listen 127.0.0.1:0 --http "127.0.0.1:$port" --db "$db" >"$log" 2>&1 &
pid=$!
ready=false
for _ in $(seq 1 3000); do
  if [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz") == 200 ]]; then
    ready=true
    break
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.02
done
end=$(date +%s%N)
cpu_ms=-1
if read -r -a stat <"/proc/$pid/stat"; then
  cpu_ms=$(((stat[13] + stat[14]) * 1000 / $(getconf CLK_TCK)))
fi
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
if [[ $ready != true ]]; then
  echo "benchd was not ready (log: $log)" >&2
  exit 1
fi
echo "start until /readyz 200: $(((end - start) / 1000000)) ms; benchd CPU ${cpu_ms} ms;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)"
rm -f "$log"
