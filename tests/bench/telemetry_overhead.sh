#!/usr/bin/env bash
# Telemetry overhead: bench-train alone vs the same run under benchd + bench-agent with
# iteration streaming and NVML sampling at 10 Hz. Without a GPU the agent loads the fake
# NVML (tests/fake_nvml) and runs its one "GPU" rank on the CPU (--gpu-ranks-on-cpu), so
# the sampling thread, the uploads and benchd all share the cores with the trainer.
# Runs alternate (alone, agent, alone, ...) so that drift hits both sides; each figure is
# bench-train's own measured throughput (images after warm-up / window).
# Usage: tests/bench/telemetry_overhead.sh [REPEATS] (env MODEL, SIZE, BS, ITERS, WARMUP)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/bin}
FAKE_NVML=${FAKE_NVML:-build/tests/fake_nvml/libfake_nvml.so}
REPEATS=${1:-5}
MODEL=${MODEL:-resnet18}
SIZE=${SIZE:-64}
BS=${BS:-16}
ITERS=${ITERS:-60}
WARMUP=${WARMUP:-10}
THREADS=$(nproc)
HZ=${HZ:-10}

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
grpc=$(free_port)
http=$(free_port)
benchd_pid=
"$BIN/benchd" --listen "127.0.0.1:$grpc" --http "127.0.0.1:$http" --db "$work/bench.db" \
  >"$work/benchd.log" 2>&1 &
benchd_pid=$!
pids+=($!)
FAKE_NVML_GPUS=1 "$BIN/bench-agent" --controller "127.0.0.1:$grpc" --name overhead \
  --nvml-library "$FAKE_NVML" --gpu-ranks-on-cpu --gpu-sample-hz "$HZ" \
  --bench-train "$BIN/bench-train" >"$work/agent.log" 2>&1 &
agent_pid=$!
pids+=($!)
ctl() { "$BIN/benchctl" --server "127.0.0.1:$grpc" "$@"; }
for _ in $(seq 100); do ctl agents 2>/dev/null | grep -q overhead && break; sleep 0.1; done

alone() {
  OMP_NUM_THREADS=$THREADS "$BIN/bench-train" --model "$MODEL" --image-size "$SIZE" --bs "$BS" \
    --iters "$ITERS" --warmup "$WARMUP" --threads "$THREADS" 2>/dev/null |
    grep '"event":"summary"' | sed 's/.*"images_per_second":\([0-9.]*\).*/\1/'
}
under_agent() {
  local out job
  out=$(ctl submit --gpus 1 --model "$MODEL" --image-size "$SIZE" --bs "$BS" --iters "$ITERS" \
    --warmup "$WARMUP" --wait 2>/dev/null)
  job=${out%%$'\n'*}
  ctl status "$job" --format json | sed 's/.*"images_per_second":\([0-9.]*\).*/\1/'
  for _ in $(seq 50); do  # the GPU readings are joined just after the job ends
    ctl status "$job" --format json | grep -q '"samples":"[1-9]' && return 0
    sleep 0.1
  done
  echo "telemetry_overhead: job $job has no GPU samples" >&2
  exit 1
}
# CPU seconds from /proc/PID/stat: own (utime + stime) and reaped children's (cutime +
# cstime). The agent reaps its trainers, so their CPU lands in its children's share.
cpu_self() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }
cpu_children() { awk -v hz="$(getconf CLK_TCK)" '{print ($16 + $17) / hz}' "/proc/$1/stat"; }
median() { sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]}'; }

: >"$work/alone" && : >"$work/agent"
agent0=$(cpu_self "$agent_pid"); benchd0=$(cpu_self "$benchd_pid"); train0=$(cpu_children "$agent_pid")
for _ in $(seq "$REPEATS"); do
  alone >>"$work/alone"
  under_agent >>"$work/agent"
done
agent1=$(cpu_self "$agent_pid"); benchd1=$(cpu_self "$benchd_pid"); train1=$(cpu_children "$agent_pid")
a=$(median <"$work/alone")
b=$(median <"$work/agent")
echo "| $MODEL ${SIZE}px bs$BS fp32, $THREADS threads | alone img/s | under agent (${HZ} Hz NVML, streaming) img/s | ratio |"
echo "|---|---:|---:|---:|"
echo "| median of $REPEATS | $a | $b | $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b / a}') |"
echo "runs alone: $(tr '\n' ' ' <"$work/alone")"
echo "runs under agent: $(tr '\n' ' ' <"$work/agent")"
awk -v a0="$agent0" -v a1="$agent1" -v b0="$benchd0" -v b1="$benchd1" -v t0="$train0" -v t1="$train1" \
  'BEGIN {printf "CPU while under the agent: trainers %.1f s, bench-agent %.2f s (%.2f%%), benchd %.2f s (%.2f%%)\n",
          t1 - t0, a1 - a0, 100 * (a1 - a0) / (t1 - t0), b1 - b0, 100 * (b1 - b0) / (t1 - t0)}'
