#!/usr/bin/env bash
# How long benchd takes to come back from kill -9 (issue 27's faults): kills a running
# benchd with SIGKILL, starts it again with the same command line (so on the same
# database and ports), and measures from the kill until /readyz answers 200 and until
# `benchctl agents` lists N agents connected again.
#
#   restart_probe.sh --agents N --readyz URL [--pid PID] [--log FILE] [--timeout S]
#                    [--json FILE] -- BENCHD [ARGS...]
#
#   --agents N    how many connected agents to wait for
#   --readyz URL  benchd's /readyz (http://127.0.0.1:7601/readyz; https:// with
#                 $BENCH_TLS_CA as the CA)
#   --pid PID     the benchd to kill; default: the one process whose command line is
#                 exactly BENCHD ARGS... (none or several: exit 1)
#   --log FILE    the new benchd's stdout and stderr (default: benchd-restarted.log)
#   --timeout S   give up after S seconds for either wait (default 300; exit 1)
#   --json FILE   also write {"ready_s":..,"agents_s":..,"pid":..} there
#
# benchctl is found beside BENCHD (else on PATH) and reads its server and credentials
# from the environment ($BENCH_SERVER, $BENCH_TLS_CA, $BENCH_TLS_CERT/KEY, $BENCH_TOKEN;
# an admin or view caller). The new benchd is left running, detached; its pid is printed.
# The last line is "ready_s=X agents_s=Y pid=P" for scripts.
set -euo pipefail

die() {
  echo "restart_probe: $*" >&2
  exit 1
}
usage() {
  sed -n '8,9p' "$0" | sed 's/^# *//' >&2
  exit 2
}

agents=
readyz=
pid=
log=benchd-restarted.log
timeout=300
json=
while [ $# -gt 0 ]; do
  case $1 in
    --agents) agents=${2:?}; shift 2 ;;
    --readyz) readyz=${2:?}; shift 2 ;;
    --pid) pid=${2:?}; shift 2 ;;
    --log) log=${2:?}; shift 2 ;;
    --timeout) timeout=${2:?}; shift 2 ;;
    --json) json=${2:?}; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
[ $# -ge 1 ] && [ -n "$agents" ] && [ -n "$readyz" ] || usage
[[ $agents =~ ^[0-9]+$ ]] || die "--agents must be a number, got '$agents'"
[[ $timeout =~ ^[0-9]+$ ]] || die "--timeout must be a number of seconds, got '$timeout'"

# The pid whose /proc/PID/cmdline is exactly "$@" (NUL-separated).
find_pid() {
  local want found=() p
  want=$(printf '%s\0' "$@" | od -An -tx1 | tr -d ' \n')
  for p in /proc/[0-9]*; do
    [ "$(od -An -tx1 "$p/cmdline" 2>/dev/null | tr -d ' \n')" = "$want" ] && found+=("${p#/proc/}")
  done
  [ ${#found[@]} -eq 1 ] || die "${#found[@]} processes run exactly '$*' (want 1; or pass --pid)"
  echo "${found[0]}"
}
[ -n "$pid" ] || pid=$(find_pid "$@")
kill -0 "$pid" 2>/dev/null || die "no process $pid"
benchctl=$(dirname "$1")/benchctl
[ -x "$benchctl" ] || benchctl=$(command -v benchctl) || die "no benchctl beside $1 or on PATH"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
# Gone: no such process, or a zombie its parent has not reaped yet whose other threads
# have all exited too (a killed process's leader turns zombie first; its sockets close
# with its last thread, and the new benchd must find its ports free).
gone() {
  [ ! -e "/proc/$1" ] && return 0
  [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ] || return 1
  [ "$(ls "/proc/$1/task" 2>/dev/null | grep -cv "^$1\$")" -eq 0 ]
}

curl_tls=()
[ -n "${BENCH_TLS_CA:-}" ] && curl_tls=(--cacert "$BENCH_TLS_CA")
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "${curl_tls[@]}" "$readyz" 2>/dev/null)" = 200 ]; }
connected() {
  "$benchctl" agents --format json 2>/dev/null |
    python3 -c 'import json,sys; print(sum(1 for a in json.load(sys.stdin) if a.get("connected")))' 2>/dev/null ||
    echo 0
}

t0=$(now)
kill -9 "$pid"
deadline=$(($(date +%s) + timeout))
until gone "$pid"; do
  [ "$(date +%s)" -lt "$deadline" ] || die "benchd $pid still there ${timeout} s after kill -9"
  sleep 0.02
done
echo "restart_probe: killed benchd $pid (kill -9); gone after $(since "$t0") s"

setsid "$@" >>"$log" 2>&1 </dev/null &
new=$!
echo "restart_probe: started benchd $new (log $log)"

deadline=$(($(date +%s) + timeout))
until ready; do
  kill -0 "$new" 2>/dev/null || die "the new benchd exited; see $log"
  [ "$(date +%s)" -lt "$deadline" ] || die "/readyz not 200 within ${timeout} s"
  sleep 0.05
done
ready_s=$(since "$t0")
echo "restart_probe: /readyz 200 after $ready_s s"

until [ "$(connected)" -ge "$agents" ]; do
  kill -0 "$new" 2>/dev/null || die "the new benchd exited; see $log"
  [ "$(date +%s)" -lt "$deadline" ] || die "fewer than $agents agents connected within ${timeout} s ($(connected))"
  sleep 0.2
done
agents_s=$(since "$t0")
echo "restart_probe: $agents agents connected after $agents_s s"
[ -z "$json" ] || printf '{"ready_s":%s,"agents_s":%s,"pid":%s}\n' "$ready_s" "$agents_s" "$new" >"$json"
echo "ready_s=$ready_s agents_s=$agents_s pid=$new"
