#!/usr/bin/env bash
# One command, fresh Debian 12: install, build the four programs it runs (not the tests),
# start benchd and a local agent (its GPUs where NVML finds them, else CPU slots), run a
# small benchmark grid, print it, then keep the web page up until Ctrl-C (when run from a
# terminal; otherwise stop).
#
# Tunables (environment): DEMO_GPUS ("1 2"), DEMO_PRECISIONS ("fp32 amp"),
# DEMO_BS ("4 8" on CPU, "128 256" on GPU), DEMO_ITERS (8 on CPU, 100 on GPU), DEMO_WARMUP,
# DEMO_IMAGE_SIZE (32 on CPU, where AMP's bf16 runs at a tenth of fp32's rate; 224 on GPU),
# DEMO_SLOTS (CPU slots of the local agent), SKIP_BUILD=1, DEMO_KEEP=1|0 (keep benchd and
# the agent serving the web page after the grid until Ctrl-C, or stop; default: 1 when
# stdin is a terminal, else 0).
#
# `demo.sh --simulated-fleet` instead shows diagnosis without a GPU: a simulated fleet of
# four nodes × eight GPUs with planted faults, screened and diagnosed
# (deploy/local/simulated_fleet.sh; every figure simulated and marked so).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = --simulated-fleet ]; then exec bash deploy/local/simulated_fleet.sh; fi
[ $# = 0 ] || { echo "usage: demo.sh [--simulated-fleet]"; exit 2; }
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-build}

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  bash deploy/install-deps.sh
  bash deploy/build.sh benchd bench-agent bench-train benchctl
fi
BIN=$ROOT/$BUILD_DIR/bin

RUN_DIR=$ROOT/.run/demo
mkdir -p "$RUN_DIR"
rm -rf "$RUN_DIR"/bench.db* "$RUN_DIR"/agent-state  # a fresh database, and an agent spool for it
port_free() { ! (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }
GRPC_PORT=${GRPC_PORT:-7600}
HTTP_PORT=${HTTP_PORT:-7601}
port_free "$GRPC_PORT" || { echo "demo: port $GRPC_PORT is taken (set GRPC_PORT)"; exit 1; }
export BENCH_SERVER=127.0.0.1:$GRPC_PORT

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

"$BIN/benchd" --listen "$BENCH_SERVER" --http 127.0.0.1:$HTTP_PORT \
  --db "$RUN_DIR/bench.db" 2>"$RUN_DIR/benchd.log" &
pids+=($!)

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  mode=gpu
  gpu_count=$(nvidia-smi -L | wc -l)
  "$BIN/bench-agent" --controller "$BENCH_SERVER" --name local \
    --state-dir "$RUN_DIR/agent-state" 2>"$RUN_DIR/agent.log" &
  default_gpus="1 $gpu_count"; [ "$gpu_count" = 1 ] && default_gpus=1
  default_bs="128 256"; default_size=224; default_iters=100; default_warmup=20
else
  mode=cpu
  slots=${DEMO_SLOTS:-2}
  "$BIN/bench-agent" --controller "$BENCH_SERVER" --name local --cpu-slots "$slots" \
    --state-dir "$RUN_DIR/agent-state" 2>"$RUN_DIR/agent.log" &
  default_gpus="1 $slots"; [ "$slots" = 1 ] && default_gpus=1
  default_bs="4 8"; default_size=32; default_iters=8; default_warmup=2
fi
pids+=($!)

for _ in $(seq 100); do
  "$BIN/benchctl" agents 2>/dev/null | grep -q local && break
  sleep 0.1
done
"$BIN/benchctl" agents
echo "demo: the web page is at http://127.0.0.1:$HTTP_PORT/ (fleet, jobs, results, live charts)"

echo
echo "demo: running the grid on $mode (ResNet-50, synthetic data, image ${DEMO_IMAGE_SIZE:-$default_size}px)"
for gpus in ${DEMO_GPUS:-$default_gpus}; do
  for precision in ${DEMO_PRECISIONS:-fp32 amp}; do
    for bs in ${DEMO_BS:-$default_bs}; do
      echo "demo: --gpus $gpus --precision $precision --bs $bs"
      "$BIN/benchctl" submit --gpus "$gpus" --precision "$precision" --bs "$bs" \
        --iters "${DEMO_ITERS:-$default_iters}" --warmup "${DEMO_WARMUP:-$default_warmup}" \
        --image-size "${DEMO_IMAGE_SIZE:-$default_size}" --wait \
        || echo "demo: that job did not succeed (see: benchctl list; $RUN_DIR/agent.log)"
    done
  done
done

echo
echo "images/s (ResNet-50 v1.5; devices are $( [ $mode = gpu ] && echo GPUs || echo CPU slots )):"
"$BIN/benchctl" results --format markdown
echo
echo "demo: database $RUN_DIR/bench.db; logs in $RUN_DIR"
echo "demo: the results page: http://127.0.0.1:$HTTP_PORT/#/results"
keep=${DEMO_KEEP:-$([ -t 0 ] && echo 1 || echo 0)}
if [ "$keep" = 1 ]; then
  echo "demo: serving the page until Ctrl-C (DEMO_KEEP=0 stops after the grid)"
  wait "${pids[0]}"
else
  echo "demo: stopping benchd and the agent (DEMO_KEEP=1 keeps the page up)"
fi
