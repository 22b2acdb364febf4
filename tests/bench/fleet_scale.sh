#!/usr/bin/env bash
# The fleet at scale in one command (issue 27): a real benchd with mutual TLS on loopback
# (gRPC and HTTPS, a fresh SQLite file), the fleet simulator (tests/bench/fleet_sim: one
# agent certificate per node, 8 GPUs each, jobs of 1, 8, 32 and 256 GPUs replaced as they
# end), a real Prometheus scraping benchd's /metrics every 15 s with a client certificate,
# 20 clients on the live event streams, `benchctl results`, `gpus --outliers` and `queue`
# once a second each, GET /metrics timed every 15 s and benchd's and the simulator's
# CPU, RSS, fds and threads sampled from /proc every 5 s (tests/bench/fleet_watch.py).
# Faults (--faults, a comma list) are thrown in at set times. At the end everything is
# stopped, the stored rows are counted per job/rank/kind against what the simulator saw
# acknowledged, and DIR/report.md is written (tests/bench/fleet_report.py) beside the raw
# files (CSV time series, logs, the simulator's summary).
#
# Usage: tests/bench/fleet_scale.sh --nodes 1024 --duration 30m [--scale 1]
#          [--faults kill9,partition,garbage,diskfull] [--out DIR] [--db FILE]
#          [--pki DIR] [--web-clients 20] [--agent-lease 30s] [--job-mix 1:W,8:W,32:W,256:W]
#          [--disk-mb 2048] [--sim PATH|none] [-- extra fleet_sim flags]
#   --duration: 90s, 5m, 1h30m (the simulator's run; faults happen inside it)
#   --pki: certificates, made once by tests/bench/fleet_pki.sh and reused (default
#          build/fleet_pki)
#   --sim none: no simulator (checks the harness itself against an idle benchd)
#   --disk-mb: the size of diskfull's loop disk (MiB; default 2048). At 1,024 nodes and full
#          rate the database grows by about 0.5 GB a minute: size it for the whole run, or
#          the disk fills by itself before the fault
# Environment: BIN (default build/bin; nothing is built here).
#
# Faults (each in its own window after a warm-up of a sixth of the run, at most 60 s):
#   kill9      benchd killed with -9 and restarted on the same database 3 times, 60 s apart;
#              seconds to /readyz 200 and to every agent connected again (faults.csv)
#   partition  every 10th node dials benchd through tests/bench/tcp_proxy.py, held for
#              twice the agent lease, then passed again
#   garbage    build/bin/garbage_agent (a valid agent certificate) for 60 s
#   diskfull   the database on tests/bench/fault_disk.sh's loop-mounted disk (root), filled
#              for 30 s, then freed
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BIN=${BIN:-build/bin}

die() {
  echo "fleet_scale: $*" >&2
  exit 2
}
seconds_of() { # 90s, 5m, 1h30m, 2h -> seconds
  python3 -c '
import re, sys
t = sys.argv[1]
parts = re.fullmatch(r"((\d+)h)?((\d+)m)?((\d+)s)?", t)
if not t or not parts: sys.exit("bad duration " + repr(t) + " (want 90s, 5m, 1h30m)")
print(int(parts[2] or 0) * 3600 + int(parts[4] or 0) * 60 + int(parts[6] or 0))' "$1"
}

NODES="" DURATION="" SCALE=1 FAULTS="" OUT="" DB="" PKI=build/fleet_pki WEB_CLIENTS=20
LEASE=30s JOB_MIX="" SIM="" DISK_MB=2048
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --scale) SCALE=$2; shift 2 ;;
    --faults) FAULTS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --db) DB=$2; shift 2 ;;
    --pki) PKI=$2; shift 2 ;;
    --web-clients) WEB_CLIENTS=$2; shift 2 ;;
    --agent-lease) LEASE=$2; shift 2 ;;
    --job-mix) JOB_MIX=$2; shift 2 ;;
    --sim) SIM=$2; shift 2 ;;
    --disk-mb) DISK_MB=$2; shift 2 ;;
    --) shift; break ;;
    *) die "unknown argument \"$1\" (see the usage at the top of $0)" ;;
  esac
done
[[ "$NODES" =~ ^[0-9]+$ ]] && [ "$NODES" -gt 0 ] || die "--nodes N (a positive integer) is required"
[ -n "$DURATION" ] || die "--duration D (90s, 5m, 30m) is required"
DUR_S=$(seconds_of "$DURATION") || die "--duration: expected 90s, 5m or 1h30m, got \"$DURATION\""
LEASE_S=$(seconds_of "$LEASE") || die "--agent-lease: expected a duration, got \"$LEASE\""
SIM=${SIM:-$BIN/fleet_sim}
IFS=, read -r -a FAULT_LIST <<<"$FAULTS"
for f in "${FAULT_LIST[@]}"; do
  case "$f" in kill9 | partition | garbage | diskfull) ;; *) die "--faults: unknown fault \"$f\" (kill9, partition, garbage, diskfull)" ;; esac
done
has_fault() { [[ ",$FAULTS," == *",$1,"* ]]; }
for b in benchd benchctl; do [ -x "$BIN/$b" ] || die "$BIN/$b is missing: build it first (BIN=$BIN)"; done
[ "$SIM" = none ] || [ -x "$SIM" ] || die "the simulator $SIM is missing: build fleet_sim (or --sim none)"
for t in prometheus sqlite3 curl python3; do command -v "$t" >/dev/null || die "$t is not installed"; done
has_fault partition && { [ -f tests/bench/tcp_proxy.py ] || die "partition needs tests/bench/tcp_proxy.py"; }
has_fault garbage && { [ -x "$BIN/garbage_agent" ] || die "garbage needs $BIN/garbage_agent"; }
has_fault diskfull && { [ -x tests/bench/fault_disk.sh ] || die "diskfull needs tests/bench/fault_disk.sh"; }

OUT=${OUT:-/tmp/fleet_scale_$(date +%Y%m%d_%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT/stop" "$OUT"/*.pid
echo "fleet_scale: output in $OUT"

# --- certificates, made once --------------------------------------------------------
mkdir -p "$PKI"
PKI=$(cd "$PKI" && pwd)
if [ -x tests/bench/fleet_pki.sh ]; then
  tests/bench/fleet_pki.sh "$PKI" "$NODES" >"$OUT/pki.log" 2>&1 || die "fleet_pki.sh failed: $OUT/pki.log"
else
  [ -f "$PKI/ca.pem" ] || deploy/pki/make-ca.sh "$PKI" >"$OUT/pki.log" 2>&1
  [ -f "$PKI/benchd.pem" ] || deploy/pki/make-server-cert.sh "$PKI" benchd IP:127.0.0.1,DNS:localhost >>"$OUT/pki.log" 2>&1
  [ -f "$PKI/fleet-submitter.pem" ] || deploy/pki/make-client-cert.sh "$PKI" submit fleet-submitter >>"$OUT/pki.log" 2>&1
  for ((i = 0; i < NODES; i++)); do printf 'node-%04d\n' "$i"; done |
    while read -r n; do [ -f "$PKI/$n.pem" ] || echo "$n"; done |
    xargs -r -P 4 -I{} deploy/pki/make-client-cert.sh "$PKI" agent {} >>"$OUT/pki.log" 2>&1
fi
[ -f "$PKI/scalerun-admin.pem" ] || deploy/pki/make-client-cert.sh "$PKI" admin scalerun-admin >>"$OUT/pki.log" 2>&1
if has_fault garbage && [ ! -f "$PKI/garbage-0.pem" ]; then
  deploy/pki/make-client-cert.sh "$PKI" agent garbage-0 >>"$OUT/pki.log" 2>&1
fi
SERVER=$PKI/server
[ -f "$SERVER.pem" ] || SERVER=$PKI/benchd
CA=$PKI/ca.pem ADMIN_CERT=$PKI/scalerun-admin.pem ADMIN_KEY=$PKI/scalerun-admin.key

# A free port below the kernel's ephemeral range: benchd is restarted on the same ports
# (kill9), and a port from that range can be taken meanwhile by any outgoing connection
# (1,024 agents reconnecting), so that the restart cannot listen ("Address already in use").
free_port() {
  python3 -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(1000):
    port = random.randint(10000, low - 1)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
else:
    raise SystemExit("no free port below " + str(low))'
}
GRPC_PORT=$(free_port) HTTP_PORT=$(free_port) PROM_PORT=$(free_port) PROXY_PORT=$(free_port)
GRPC=127.0.0.1:$GRPC_PORT HTTP=127.0.0.1:$HTTP_PORT

# --- the database -------------------------------------------------------------------
DISK=""
if has_fault diskfull; then
  DISK=$OUT/disk
  tests/bench/fault_disk.sh make "$DISK" "$DISK_MB" >"$OUT/fault_disk.log" 2>&1 || die "fault_disk.sh make failed: $OUT/fault_disk.log"
  DB=${DB:-$DISK/bench.db}
fi
DB=${DB:-$OUT/bench.db}
rm -f "$DB" "$DB-wal" "$DB-shm"

pids=()
cleanup() {
  touch "$OUT/stop"
  for f in "$OUT"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "$DISK" ]; then tests/bench/fault_disk.sh remove "$DISK" >>"$OUT/fault_disk.log" 2>&1 || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
T0=$(now)
rel() { awk -v a="$(now)" -v b="$T0" 'BEGIN {printf "%.1f", a - b}'; }
event() { echo "$(rel),$1,$2" >>"$OUT/events.csv"; echo "fleet_scale: [$(rel) s] $1 $2"; }
echo "t_s,event,detail" >"$OUT/events.csv"

BENCHD_ARGS=(--listen "$GRPC" --http "$HTTP" --db "$DB" --tls-cert "$SERVER.pem"
  --tls-key "$SERVER.key" --client-ca "$CA" --agent-lease "$LEASE")
start_benchd() { # runs benchd in the background; its pid goes to OUT/benchd.pid
  "$BIN/benchd" "${BENCHD_ARGS[@]}" >>"$OUT/benchd.log" 2>&1 &
  echo $! >"$OUT/benchd.pid"
}
readyz() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$CA" --cert "$ADMIN_CERT" --key "$ADMIN_KEY" "https://$HTTP/readyz" || true; }
alive() { [ -d "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
wait_ready() { # seconds until /readyz answers 200 (gives up after $1 s, or once pid $2 exited)
  local start; start=$(now)
  while [ "$(readyz)" != 200 ]; do
    awk -v a="$(now)" -v b="$start" -v m="$1" 'BEGIN {exit !(a - b > m)}' && return 1
    if [ -n "${2:-}" ] && ! alive "$2"; then return 2; fi
    sleep 0.05
  done
  awk -v a="$(now)" -v b="$start" 'BEGIN {printf "%.2f", a - b}'
}
# Whether benchd could listen on the port now: bound as benchd binds it (SO_REUSEADDR),
# which a killed benchd's listening socket refuses until its process has wholly exited.
port_free() {
  python3 -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)' "$1"
}
connected_agents() {
  curl -s --max-time 10 --cacert "$CA" --cert "$ADMIN_CERT" --key "$ADMIN_KEY" "https://$HTTP/api/v1/agents" |
    python3 -c 'import json,sys
try: print(sum(1 for a in json.load(sys.stdin).get("agents", []) if a.get("connected")))
except ValueError: print(0)'
}

# --- benchd -------------------------------------------------------------------------
{
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r)"
  echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' (with local changes)')"
  echo "command: $0 --nodes $NODES --duration $DURATION --scale $SCALE --faults '$FAULTS'"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/run.txt"
cat "$OUT/run.txt"
start_benchd
ready=$(wait_ready 60) || die "benchd did not become ready in 60 s: $OUT/benchd.log"
event benchd_ready "$ready"

# --- Prometheus ---------------------------------------------------------------------
cat >"$OUT/prometheus.yml" <<EOF
global:
  scrape_interval: 15s
  scrape_timeout: 10s
scrape_configs:
  - job_name: benchd
    scheme: https
    tls_config:
      ca_file: $CA
      cert_file: $ADMIN_CERT
      key_file: $ADMIN_KEY
    static_configs:
      - targets: ["$HTTP"]
EOF
prometheus --config.file="$OUT/prometheus.yml" --storage.tsdb.path="$OUT/prometheus-data" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$OUT/prometheus.log" 2>&1 &
echo $! >"$OUT/prometheus.pid"

# --- the partition's proxy ----------------------------------------------------------
SIM_EXTRA=()
if has_fault partition; then
  echo pass >"$OUT/proxy.control"
  python3 tests/bench/tcp_proxy.py --listen "127.0.0.1:$PROXY_PORT" --target "$GRPC" \
    --control "$OUT/proxy.control" >"$OUT/proxy.log" 2>&1 &
  echo $! >"$OUT/proxy.pid"
  SIM_EXTRA+=(--proxy_target "127.0.0.1:$PROXY_PORT" --proxy_every 10)
fi
[ -n "$JOB_MIX" ] && SIM_EXTRA+=(--job_mix "$JOB_MIX")

# --- the observers ------------------------------------------------------------------
python3 tests/bench/fleet_watch.py --out "$OUT" --grpc "$GRPC" --http "$HTTP" --ca "$CA" \
  --cert "$ADMIN_CERT" --key "$ADMIN_KEY" --benchctl "$BIN/benchctl" \
  --web_clients "$WEB_CLIENTS" >"$OUT/watch.log" 2>&1 &
pids+=($!)
watch_pid=$!

# --- the simulator ------------------------------------------------------------------
if [ "$SIM" != none ]; then
  "$SIM" --target "$GRPC" --ca "$CA" --cert_dir "$PKI" --nodes "$NODES" --gpus_per_node 8 \
    --duration "${DUR_S}s" --scale "$SCALE" --report_interval 60s \
    --summary_json "$OUT/sim_summary.json" --acked_csv "$OUT/acked.csv" \
    ${SIM_EXTRA[@]+"${SIM_EXTRA[@]}"} "$@" >"$OUT/sim.log" 2>&1 &
  echo $! >"$OUT/sim.pid"
fi
event sim_started "$NODES nodes x 8 GPUs, scale $SCALE, ${DUR_S} s"

# --- the faults, each in its own window ---------------------------------------------
echo "t_s,fault,event,seconds,detail" >"$OUT/faults.csv"
fault() { echo "$(rel),$1,$2,$3,$4" >>"$OUT/faults.csv"; echo "fleet_scale: [$(rel) s] fault $1 $2 $3 $4"; }
sleep_until() { # sleeps until $1 s after T0
  local d; d=$(awk -v t="$1" -v a="$(now)" -v b="$T0" 'BEGIN {d = t - (a - b); print (d > 0 ? d : 0)}')
  sleep "$d"
}
run_faults() {
  local at warm=$((DUR_S / 6 < 60 ? DUR_S / 6 : 60))
  at=$warm
  for f in "${FAULT_LIST[@]}"; do
    case "$f" in
      kill9)
        for i in 1 2 3; do
          sleep_until "$at"
          fault kill9 "kill -9 #$i" "" "pid $(cat "$OUT/benchd.pid")"
          local old; old=$(cat "$OUT/benchd.pid")
          kill -9 "$old" 2>/dev/null || true
          rm -f "$OUT/benchd.pid"
          local start; start=$(now)
          # The restart takes the same ports and the database's lock, which the killed
          # process holds until it has wholly exited (its threads but the leader gone is
          # not enough): restarted before, benchd exits ("Address already in use",
          # "another benchd has this database open").
          for _ in $(seq 300); do
            ! alive "$old" && port_free "$HTTP_PORT" && port_free "$GRPC_PORT" && break
            sleep 0.1
          done
          local freed; freed=$(awk -v a="$(now)" -v b="$start" 'BEGIN {printf "%.2f", a - b}')
          start_benchd
          local r rc=0 detail="/readyz 200 after the restart (ports free after $freed s)"
          r=$(wait_ready 120 "$(cat "$OUT/benchd.pid")") || rc=$?
          if [ "$rc" = 1 ]; then r=">120"; fi
          if [ "$rc" = 2 ]; then
            r="exited"
            detail="benchd exited: $(grep -v '^$' "$OUT/benchd.log" | tail -1 | tr ',' ';')"
          fi
          fault kill9 "ready #$i" "$r" "$detail"
          local n=0 back=">120"
          while awk -v a="$(now)" -v b="$start" 'BEGIN {exit !(a - b < 120)}'; do
            n=$(connected_agents)
            if [ "$n" -ge "$NODES" ]; then
              back=$(awk -v a="$(now)" -v b="$start" 'BEGIN {printf "%.2f", a - b}')
              break
            fi
            sleep 0.5
          done
          fault kill9 "agents back #$i" "$back" "$n of $NODES agents connected"
          at=$((at + 60))
        done
        ;;
      partition)
        sleep_until "$at"
        echo hold >"$OUT/proxy.control"
        fault partition hold "" "every 10th node's connection held for $((2 * LEASE_S)) s"
        sleep $((2 * LEASE_S))
        echo pass >"$OUT/proxy.control"
        fault partition pass "$((2 * LEASE_S))" "connected after: $(connected_agents) of $NODES"
        sleep 30
        fault partition after "" "connected 30 s later: $(connected_agents) of $NODES"
        at=$((at + 2 * LEASE_S + 60))
        ;;
      garbage)
        sleep_until "$at"
        fault garbage start "" "garbage_agent for 60 s"
        "$BIN/garbage_agent" --target "$GRPC" --tls_ca "$CA" --tls_cert "$PKI/garbage-0.pem" \
          --tls_key "$PKI/garbage-0.key" --agent garbage-0 --duration 60s --summary_json "$OUT/garbage_summary.json" \
          >"$OUT/garbage.log" 2>&1 || true
        fault garbage end "" "benchd alive: $(readyz)"
        at=$((at + 90))
        ;;
      diskfull)
        sleep_until "$at"
        tests/bench/fault_disk.sh fill "$DISK" >>"$OUT/fault_disk.log" 2>&1 || true
        fault diskfull fill "" "$(df -h --output=avail "$DISK" | tail -1 | tr -d ' ') left"
        sleep 30
        tests/bench/fault_disk.sh free "$DISK" >>"$OUT/fault_disk.log" 2>&1 || true
        fault diskfull free 30 "$(df -h --output=avail "$DISK" | tail -1 | tr -d ' ') left"
        at=$((at + 90))
        ;;
    esac
  done
  [ "$at" -le "$DUR_S" ] || fault all late "" "the faults need about ${at} s; the run is ${DUR_S} s"
}
if [ ${#FAULT_LIST[@]} -gt 0 ]; then
  run_faults &
  fault_pid=$!
  pids+=($fault_pid)
fi

# --- the end ------------------------------------------------------------------------
sim_rc=0
if [ "$SIM" != none ]; then
  sim_pid=$(cat "$OUT/sim.pid")
  # The simulator stops itself after --duration; 5 minutes more is a hang.
  (
    for ((i = 0; i < DUR_S + 300; i++)); do
      kill -0 "$sim_pid" 2>/dev/null || exit 0
      sleep 1
    done
    touch "$OUT/sim_hung"
    kill "$sim_pid" 2>/dev/null
  ) &
  pids+=($!)
  wait "$sim_pid" || sim_rc=$?
  rm -f "$OUT/sim.pid"
else
  sleep "$DUR_S"
fi
event sim_ended "exit $sim_rc"
[ -n "${fault_pid:-}" ] && { kill "$fault_pid" 2>/dev/null || true; }
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/run.txt"
touch "$OUT/stop"
wait "$watch_pid" 2>/dev/null || true

# What Prometheus saw: its target's health and scrape durations over the run.
curl -s "http://127.0.0.1:$PROM_PORT/api/v1/targets" >"$OUT/prom_targets.json" || true
curl -s -G "http://127.0.0.1:$PROM_PORT/api/v1/query" \
  --data-urlencode "query=max_over_time(scrape_duration_seconds{job=\"benchd\"}[${DUR_S}s])" \
  >"$OUT/prom_scrape_max.json" || true
curl -s -G "http://127.0.0.1:$PROM_PORT/api/v1/query" \
  --data-urlencode "query=count_over_time(up{job=\"benchd\"}[${DUR_S}s])" >"$OUT/prom_up_count.json" || true
curl -s -G "http://127.0.0.1:$PROM_PORT/api/v1/query" \
  --data-urlencode "query=sum_over_time(up{job=\"benchd\"}[${DUR_S}s])" >"$OUT/prom_up_sum.json" || true
kill "$(cat "$OUT/prometheus.pid")" 2>/dev/null || true
rm -f "$OUT/prometheus.pid"

benchd_pid=$(cat "$OUT/benchd.pid")
kill -TERM "$benchd_pid" 2>/dev/null || true
for _ in $(seq 600); do kill -0 "$benchd_pid" 2>/dev/null || break; sleep 0.1; done
rm -f "$OUT/benchd.pid"
event benchd_stopped ""

# The stored rows per job/attempt/rank and kind, counted after benchd stopped.
sqlite3 -readonly -csv -header "$DB" "
  SELECT job_id, attempt, rank, 'iterations' AS kind, count(*) AS rows FROM samples GROUP BY 1, 2, 3
  UNION ALL
  SELECT job_id, attempt, rank, 'readings', count(*) FROM gpu_samples GROUP BY 1, 2, 3;" \
  >"$OUT/db_counts.csv"
sqlite3 -readonly -csv -header "$DB" "SELECT state, count(*) AS jobs FROM jobs GROUP BY 1;" >"$OUT/db_jobs.csv"
du -cb "$DB"* | tail -1 | cut -f1 >"$OUT/db_bytes.txt"
if [ -n "$DISK" ]; then # the fault disk goes at exit: keep the database in DIR
  sqlite3 -readonly "$DB" ".backup '$OUT/bench.db'" && DB=$OUT/bench.db
fi

python3 tests/bench/fleet_report.py "$OUT" --db "$DB" --nodes "$NODES" --duration "$DUR_S" --scale "$SCALE" \
  --faults "$FAULTS" >"$OUT/report.log" 2>&1 || echo "fleet_scale: the report failed: $OUT/report.log"
echo "fleet_scale: report in $OUT/report.md"
[ -f "$OUT/report.md" ] && sed -n '1,80p' "$OUT/report.md"
exit "$sim_rc"
