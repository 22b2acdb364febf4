#!/usr/bin/env bash
# `demo.sh --simulated-fleet`: diagnosis at work without a GPU. Starts benchd and four
# bench-agents of eight simulated GPUs each (the fake NVML, tests/fake_nvml, and the
# simulated trainer bench-sim-train, both driven by deploy/local/simulated-fleet.scenario),
# screens the fleet with `benchctl screen` (five planted faulty GPUs), then runs one 32-rank
# job across the four nodes with a planted straggler and prints its status with the
# diagnosis. Every figure is simulated and marked so (docs/diagnosis.md).
#
# Tunables (environment): SKIP_BUILD=1, BUILD_DIR (build), GRPC_PORT (7610), HTTP_PORT (7611),
# DEMO_SCENARIO (the scenario file), DEMO_KEEP=1|0 (keep the page up until Ctrl-C; default:
# 1 when stdin is a terminal).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-build}
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  bash deploy/install-deps.sh
  bash deploy/build.sh benchd bench-agent bench-sim-train benchctl fake_nvml
fi
BIN=$ROOT/$BUILD_DIR/bin
FAKE_NVML=$(find "$ROOT/$BUILD_DIR" -name 'libfake_nvml.so' -print -quit)
[ -n "$FAKE_NVML" ] || { echo "simulated fleet: libfake_nvml.so was not built"; exit 1; }
SCENARIO=$(realpath "${DEMO_SCENARIO:-deploy/local/simulated-fleet.scenario}")

RUN_DIR=$ROOT/.run/simulated-fleet
rm -rf "$RUN_DIR" && mkdir -p "$RUN_DIR"
port_free() { ! (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }
GRPC_PORT=${GRPC_PORT:-7610}
HTTP_PORT=${HTTP_PORT:-7611}
port_free "$GRPC_PORT" || { echo "simulated fleet: port $GRPC_PORT is taken (set GRPC_PORT)"; exit 1; }
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
nodes=(sim-1 sim-2 sim-3 sim-4)
for node in "${nodes[@]}"; do
  FAKE_NVML_GPUS=8 FAKE_NVML_SCENARIO=$SCENARIO FAKE_NVML_NODE=$node \
    FAKE_NVML_UUID_PREFIX=GPU-$node FAKE_NVML_NAME="NVIDIA H100 80GB HBM3 (simulated)" \
    "$BIN/bench-agent" --controller "$BENCH_SERVER" --name "$node" --address 127.0.0.1 \
    --nvml-library "$FAKE_NVML" --bench-train "$BIN/bench-sim-train" \
    --fault-scenario "$SCENARIO" --state-dir "$RUN_DIR/state-$node" \
    2>"$RUN_DIR/agent-$node.log" &
  pids+=($!)
done
for _ in $(seq 200); do
  [ "$("$BIN/benchctl" agents 2>/dev/null | grep -c '^sim-')" = 4 ] && break
  sleep 0.1
done
"$BIN/benchctl" agents
echo "simulated fleet: the web page is at http://127.0.0.1:$HTTP_PORT/ (every figure simulated)"

echo
echo "simulated fleet: screening all 32 GPUs (one single-GPU job each, all at once)"
screen_rc=0
"$BIN/benchctl" screen --iters 200 --wait || screen_rc=$?
echo "simulated fleet: benchctl screen exited $screen_rc (3: a GPU was flagged)"

echo
echo "simulated fleet: a 32-rank job over the four nodes; rank 11 is planted 10 % slow in iterations 120-180"
job_rc=0
"$BIN/benchctl" submit --gpus 32 --nodes 4 --gpus-per-node 8 --bs 256 --iters 300 \
  --warmup 20 --name "simulated straggler" --wait >"$RUN_DIR/job.txt" || job_rc=$?
job=$(head -1 "$RUN_DIR/job.txt")
if [ -n "$job" ]; then
  "$BIN/benchctl" status "$job"
  echo
  echo "simulated fleet: the job's diagnosis (benchctl diagnose $job; status shows it once stored)"
  "$BIN/benchctl" diagnose "$job" || true
else
  echo "simulated fleet: the submit failed (see $RUN_DIR/benchd.log)"
fi
[ "$job_rc" = 0 ] || echo "simulated fleet: the job did not succeed (see $RUN_DIR/agent-*.log)"
echo
echo "simulated fleet: the screening page: http://127.0.0.1:$HTTP_PORT/#/screening"
echo "simulated fleet: database $RUN_DIR/bench.db; logs in $RUN_DIR"
keep=${DEMO_KEEP:-$([ -t 0 ] && echo 1 || echo 0)}
if [ "$keep" = 1 ]; then
  echo "simulated fleet: serving the page until Ctrl-C (DEMO_KEEP=0 stops here)"
  wait "${pids[0]}"
fi
