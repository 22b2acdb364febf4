#!/usr/bin/env bash
# A real two-node Slurm on this machine, for tests (Debian 12's slurmctld, slurmd,
# slurm-client and munge; run as root).
#
#   slurm_cluster.sh start DIR   brings the cluster up in DIR (created if missing) and, once
#                                `sinfo` shows both nodes idle, prints on stdout the
#                                environment its clients need, one KEY=VALUE a line:
#                                  SLURM_CONF=DIR/slurm.conf
#                                (sbatch, srun, squeue, scancel, sinfo then find the
#                                controller and munge's socket through that file). Exit 0;
#                                on failure it prints the daemons' logs, stops what it
#                                started and exits 1.
#   slurm_cluster.sh stop DIR    cancels every job, kills every job step and process
#                                launched in it, then the daemons; exits 1 if anything it
#                                started is still running afterwards. Safe to call twice,
#                                or after a start that failed halfway.
#
# The cluster: munged with its own key and socket in DIR; DIR/slurm.conf with free
# loopback ports; one slurmctld and two slurmd (`-N nodeA`, `-N nodeB`; Debian's Slurm
# is built with multiple-slurmd support, so both run on this host with their own port,
# spool and pid file) in one partition `bench` (the default). Each node offers
# BENCH_SLURM_CPUS (default 4) CPUs, more than this machine may have
# (SlurmdParameters=config_overrides), so a 4-rank job with 2 ranks per node fits on 2
# cores. ProctrackType=proctrack/pgid, TaskPlugin=task/none, no accounting; KillWait=10
# (SIGTERM, then SIGKILL 10 s later, at scancel or a time limit); finished jobs stay in
# `scontrol show job` for 10 minutes (MinJobAge). State, spool, pid and log files:
# DIR/state, DIR/spool/NODE, DIR/*.pid, DIR/log/*.log. Lines in BENCH_SLURM_EXTRA_CONF
# are appended to slurm.conf (a later line wins for most keys).
set -euo pipefail

readonly kNodes=(nodeA nodeB)

die() { echo "slurm_cluster.sh: $*" >&2; exit 1; }
usage() { die "usage: slurm_cluster.sh start|stop DIR"; }

[ $# -eq 2 ] || usage
action=$1
[ -n "$2" ] || die "DIR is empty"
mkdir -p "$2"
dir=$(cd "$2" && pwd)
conf="$dir/slurm.conf"
# A Unix socket path holds at most 107 bytes.
[ ${#dir} -le 80 ] || die "DIR '$dir' is too long for munge's socket path (80 bytes at most)"

# Whether pid `pid` is one of this cluster's processes: a Slurm daemon, step daemon or
# job process has SLURM_CONF=DIR/slurm.conf in its environment; munged has DIR in its
# command line. (Pid files can be stale; a reused pid is not ours.)
is_ours() {
  local pid=$1
  proc_lines "$pid" environ | grep -qxF "SLURM_CONF=$conf" && return 0
  proc_lines "$pid" cmdline | grep -qxF -- "--key-file=$dir/munge.key"
}

# /proc/PID/FILE (environ, cmdline), one entry a line; nothing if the process is gone.
proc_lines() { { tr '\0' '\n' <"/proc/$1/$2"; } 2>/dev/null || true; }

# Whether pid `pid` runs (a zombie has exited: only its parent's wait is missing).
alive() {
  local stat
  stat=$({ cat "/proc/$1/stat"; } 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat:0:1}" != Z ]
}

# This cluster's step daemons (slurmstepd, which clears its environment, works in
# DIR/log) and the processes its jobs launched (SLURM_CONF=DIR/slurm.conf and a
# SLURM_JOB_ID in their environment; the caller of this script has no SLURM_JOB_ID).
job_processes() {
  local pid_dir pid cwd
  for pid_dir in /proc/[0-9]*; do
    pid=${pid_dir#/proc/}
    if [ "$pid" = "$$" ] || ! alive "$pid"; then continue; fi
    if [[ "$(readlink "$pid_dir/exe" 2>/dev/null)" == */slurmstepd* ]]; then
      cwd=$(readlink "$pid_dir/cwd" 2>/dev/null || true)
      [[ "$cwd/" == "$dir/"* ]] && echo "$pid"
    elif proc_lines "$pid" environ | grep -qxF "SLURM_CONF=$conf" &&
         proc_lines "$pid" environ | grep -q '^SLURM_JOB_ID='; then
      echo "$pid"
    fi
  done
  return 0
}

daemon_pid_files() {
  local node
  for node in "${kNodes[@]}"; do echo "$dir/slurmd-$node.pid"; done
  echo "$dir/slurmctld.pid"
  echo "$dir/munged.pid"
}

# The live daemons of this cluster, by their pid files.
daemon_pids() {
  local file pid
  while read -r file; do
    [ -s "$file" ] || continue
    pid=$(tr -dc '0-9' <"$file")
    [ -n "$pid" ] && alive "$pid" && is_ours "$pid" && echo "$pid"
  done < <(daemon_pid_files)
  return 0
}

# Sends SIGTERM to `pids`, waits up to `grace` seconds, then SIGKILLs what is left.
terminate() {
  local grace=$1; shift
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  local deadline=$((SECONDS + grace)) pid running
  while :; do
    running=()
    for pid in "$@"; do alive "$pid" && running+=("$pid"); done
    [ ${#running[@]} -gt 0 ] || return 0
    [ $SECONDS -lt $deadline ] || break
    sleep 0.2
  done
  kill -KILL "${running[@]}" 2>/dev/null || true
  sleep 0.5
}

free_ports() {
  python3 - "$1" <<'EOF'
import socket, sys
sockets = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in sockets))
EOF
}

write_conf() {
  local host ports
  host=$(hostname -s)
  read -r -a ports <<<"$(free_ports $((1 + ${#kNodes[@]})))"
  local cpus=${BENCH_SLURM_CPUS:-4}
  [[ "$cpus" =~ ^[1-9][0-9]*$ ]] || die "BENCH_SLURM_CPUS must be a positive integer, not '$cpus'"
  {
    cat <<EOF
# Written by tests/slurm/slurm_cluster.sh: a two-node test cluster on loopback.
ClusterName=benchtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=${ports[0]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=10
MinJobAge=600
InactiveLimit=0
MailProg=/bin/true
EOF
    local i
    for i in "${!kNodes[@]}"; do
      echo "NodeName=${kNodes[$i]} NodeHostname=$host NodeAddr=127.0.0.1 Port=${ports[$((i + 1))]} CPUs=$cpus State=UNKNOWN"
    done
    echo "PartitionName=bench Nodes=$(IFS=,; echo "${kNodes[*]}") Default=YES MaxTime=INFINITE State=UP"
    if [ -n "${BENCH_SLURM_EXTRA_CONF:-}" ]; then printf '%s\n' "$BENCH_SLURM_EXTRA_CONF"; fi
  } >"$conf"
}

print_logs() {
  local log
  for log in "$dir"/log/*.log; do
    [ -f "$log" ] || continue
    echo "--- $log (last 30 lines)" >&2
    tail -n 30 "$log" >&2
  done
}

# Polls `sinfo` until every node is idle, up to `timeout` seconds.
wait_idle() {
  local timeout=$1 deadline=$((SECONDS + $1)) states
  while [ $SECONDS -lt $deadline ]; do
    states=$(SLURM_CONF=$conf sinfo --noheader --Node --format='%N %t' 2>/dev/null | sort -u || true)
    if [ "$(grep -c ' idle$' <<<"$states")" -eq ${#kNodes[@]} ]; then return 0; fi
    sleep 0.5
  done
  echo "slurm_cluster.sh: nodes not idle after ${timeout}s: ${states:-sinfo did not answer}" >&2
  return 1
}

start() {
  [ "$(id -u)" -eq 0 ] || die "start must run as root (slurmd and munged run as root here)"
  local program
  for program in munged mungekey slurmctld slurmd sinfo python3; do
    command -v "$program" >/dev/null || die "$program not found (run deploy/install-deps.sh)"
  done
  [ -z "$(daemon_pids)" ] || die "a cluster already runs in $dir (stop it first)"
  rm -rf "$dir/state" "$dir/spool" "$dir/log"
  mkdir -p "$dir/state" "$dir/log" "$dir/munge"
  local node
  for node in "${kNodes[@]}"; do mkdir -p "$dir/spool/$node"; done
  chmod 700 "$dir/munge"
  # munged refuses a socket in a directory that not everyone may enter, up to /.
  chmod go+rx "$dir"
  local parent=$dir
  while [ "$parent" != / ]; do
    parent=$(dirname "$parent")
    [ "$(( 0$(stat -c %a "$parent") & 01 ))" -ne 0 ] ||
      die "munged needs every directory above DIR searchable by all: chmod o+x $parent"
  done

  mungekey --create --force --bits=1024 --keyfile="$dir/munge.key" >/dev/null
  munged --key-file="$dir/munge.key" --socket="$dir/munge.sock" \
    --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/seed" ||
    { print_logs; stop_quietly; die "munged did not start"; }

  write_conf
  export SLURM_CONF=$conf
  slurmctld -f "$conf" -i || { print_logs; stop_quietly; die "slurmctld did not start"; }
  for node in "${kNodes[@]}"; do
    slurmd -f "$conf" -N "$node" || { print_logs; stop_quietly; die "slurmd -N $node did not start"; }
  done
  if ! wait_idle 60; then
    print_logs
    stop_quietly
    exit 1
  fi
  echo "SLURM_CONF=$conf"
}

# Cancels the jobs, kills the job processes and step daemons, then the Slurm daemons
# and munged. Returns 1 if any of them is still alive.
stop() {
  if [ -f "$conf" ] && [ -n "$(daemon_pids)" ]; then
    SLURM_CONF=$conf timeout 10 scancel --full --quiet --partition=bench 2>/dev/null || true
    # Give steps the SIGTERM grace a test would expect, bounded.
    local deadline=$((SECONDS + 15))
    while [ -n "$(job_processes)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.5; done
  fi
  # shellcheck disable=SC2046  # pids, one a word
  terminate 3 $(job_processes)
  local pids=() pid
  while read -r pid; do pids+=("$pid"); done < <(daemon_pids)
  terminate 10 "${pids[@]}"
  # Steps that a dying slurmd left behind, and their processes.
  # shellcheck disable=SC2046
  terminate 1 $(job_processes)
  local left
  left="$(daemon_pids) $(job_processes)"
  if [ -n "${left// /}" ]; then
    echo "slurm_cluster.sh: still running after stop:" >&2
    # shellcheck disable=SC2086
    ps -o pid,args -p "$(echo $left | tr ' ' ',')" >&2 || true
    return 1
  fi
  return 0
}

stop_quietly() { stop >/dev/null 2>&1 || true; }

case "$action" in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
