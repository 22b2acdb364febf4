#!/usr/bin/env bash
# Issue 27 item 1's check: the fleet simulator's per-agent RPC mix and upload batch sizes
# against real bench-agents running the same jobs. Two runs of DURATION each against a fresh
# benchd (plaintext: the policies compared do not depend on TLS):
#   real: NODES bench-agents x 8 GPUs (the fake NVML, tests/fake_nvml; bench-sim-train as the
#         trainer, stepping at about 10 iterations/s), jobs from `fleet_sim --submit_only`;
#   sim:  fleet_sim with NODES simulated agents x 8 GPUs at 10 iterations/s, its own submitter.
# Both submitters draw the same job sequence (--job_mix, seed fixed). Every agent RPC goes
# through tests/bench/rpc_count_proxy.py, which counts calls per method and each
# UploadSamples request's iterations and readings on the wire: the same instrument for both;
# benchd's own counters (/metrics: bench_agent_rpcs_total, bench_upload_batch_samples) are
# read at the end of each side as a second count.
# Prints a markdown table of both sides and their differences (docs/PERFORMANCE.md, "The
# simulator against a real bench-agent"), and writes it to $OUT_DIR/rpc_mix.md.
#
# Usage: tests/bench/fleet_rpc_mix.sh [DURATION_S]   (default 120)
# Environment: BUILD_DIR (build), NODES (4), JOB_MIX (1:4,8:3,32:1), JOB_ITERATIONS (100),
# OUT_DIR (.run/fleet-rpc-mix), PORT_BASE (17700), AGENT_SPOOL (1; 0: the real agents run
# without --state-dir, their samples queue in memory instead of the fsync'ed spool). Needs benchd, bench-agent,
# bench-sim-train, fleet_sim, fake_nvml and bench_proto_descriptor_set built.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DURATION=${1:-120}
BUILD=$ROOT/${BUILD_DIR:-build}
BIN=$BUILD/bin
NODES=${NODES:-4}
JOB_MIX=${JOB_MIX:-1:4,8:3,32:1}
JOB_ITERATIONS=${JOB_ITERATIONS:-100}
OUT_DIR=${OUT_DIR:-$ROOT/.run/fleet-rpc-mix}
PORT_BASE=${PORT_BASE:-17700}
FAKE_NVML=$(find "$BUILD" -name libfake_nvml.so -print -quit)
DESC=$(find "$BUILD" -name benchfleet_v1.desc -print -quit)
for f in "$BIN/benchd" "$BIN/bench-agent" "$BIN/bench-sim-train" "$BIN/fleet_sim" "$FAKE_NVML" "$DESC"; do
  [ -n "$f" ] && [ -e "$f" ] || { echo "fleet_rpc_mix: missing $f (build the targets first)" >&2; exit 1; }
done
rm -rf "$OUT_DIR" && mkdir -p "$OUT_DIR"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

# bench-sim-train stepping at about 10 iterations/s (sim_model.h: step = 0.0002 + s x 1.02,
# or x 1.06 with an all-reduce), noise off.
TRAINER=$OUT_DIR/trainer-10its.sh
printf '#!/bin/sh\nexec %q "$@" --sim-step-s 0.096 --sim-noise 0\n' "$BIN/bench-sim-train" >"$TRAINER"
chmod +x "$TRAINER"

wait_port() {
  for _ in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "fleet_rpc_mix: nothing listens on $1" >&2
  return 1
}

# run SIDE: benchd, the counting proxy, then the side's agents and submitter.
run() {
  local side=$1 dir=$OUT_DIR/$1 grpc=$((PORT_BASE + ${2})) proxy=$((PORT_BASE + ${2} + 1))
  mkdir -p "$dir"
  "$BIN/benchd" --listen 127.0.0.1:$grpc --http 127.0.0.1:$((grpc + 2)) --db "$dir/bench.db" \
    2>"$dir/benchd.log" &
  local benchd=$!
  pids+=("$benchd")
  wait_port $grpc
  /usr/bin/python3 "$ROOT/tests/bench/rpc_count_proxy.py" --listen 127.0.0.1:$proxy \
    --target 127.0.0.1:$grpc --descriptor-set "$DESC" --out "$dir/proxy.json" 2>"$dir/proxy.log" &
  local proxy_pid=$!
  pids+=("$proxy_pid")
  wait_port $proxy
  local agents=()
  local sim_args=(--nodes "$NODES" --gpus_per_node 8 --duration "${DURATION}s" --iter_rate 10
    --reading_hz 10 --job_mix "$JOB_MIX" --job_iterations "$JOB_ITERATIONS" --report_interval 30s
    --summary_json "$dir/summary.json")
  if [ "$side" = real ]; then
    for ((i = 0; i < NODES; i++)); do
      local node
      node=$(printf 'node-%04d' "$i")
      FAKE_NVML_GPUS=8 FAKE_NVML_UUID_PREFIX=GPU-$node FAKE_NVML_NAME="NVIDIA H100 80GB HBM3 (simulated)" \
        "$BIN/bench-agent" --controller 127.0.0.1:$proxy --name "$node" --address 127.0.0.1 \
        --nvml-library "$FAKE_NVML" --bench-train "$TRAINER" --gpu-sample-hz 10 \
        $([ "${AGENT_SPOOL:-1}" = 0 ] || echo --state-dir "$dir/state-$node") \
        2>"$dir/agent-$node.log" &
      agents+=($!)
      pids+=($!)
    done
    "$BIN/fleet_sim" --target 127.0.0.1:$grpc --submit_only "${sim_args[@]}" >"$dir/fleet_sim.log" 2>&1
  else
    "$BIN/fleet_sim" --target 127.0.0.1:$proxy "${sim_args[@]}" >"$dir/fleet_sim.log" 2>&1
  fi
  # benchd's own count of the same calls (bench_agent_rpcs_total, bench_upload_batch_samples).
  /usr/bin/python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=30).read().decode())' \
    "http://127.0.0.1:$((grpc + 2))/metrics" >"$dir/metrics.txt" || echo "fleet_rpc_mix: no /metrics" >&2
  for pid in "${agents[@]}"; do kill -TERM "$pid"; done
  for pid in "${agents[@]}"; do wait "$pid" || true; done
  kill -TERM "$proxy_pid" && wait "$proxy_pid" || true
  kill -TERM "$benchd" && wait "$benchd" || true
  echo "fleet_rpc_mix: $side done ($(uptime | sed 's/.*load average/load average/'))" >&2
}

echo "fleet_rpc_mix: $NODES real bench-agents x 8 GPUs for ${DURATION} s" >&2
run real 0
echo "fleet_rpc_mix: $NODES simulated agents x 8 GPUs for ${DURATION} s" >&2
run sim 10

/usr/bin/python3 - "$OUT_DIR" "$NODES" <<'PY' | tee "$OUT_DIR/rpc_mix.md"
import json, math, sys
out, nodes = sys.argv[1], int(sys.argv[2])
sides = {s: json.load(open(f"{out}/{s}/proxy.json")) for s in ("real", "sim")}

def quantile(values, q):
    if not values:
        return 0
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)]

rows = []
def row(name, real, sim, fmt="{:.3f}"):
    diff = (sim - real) / real * 100 if real else float("nan")
    rows.append(f"| {name} | {fmt.format(real)} | {fmt.format(sim)} | {diff:+.1f} % |")

window = {s: d["last_s"] - d["first_s"] for s, d in sides.items()}
samples = {s: sum(a + b for a, b in d["upload_batches"]) for s, d in sides.items()}
print(f"Per agent ({nodes} agents x 8 GPUs each side; window real {window['real']:.0f} s, "
      f"sim {window['sim']:.0f} s; samples uploaded real {samples['real']}, sim {samples['sim']})\n")
print("| figure | real bench-agent | fleet_sim | sim vs real |")
print("|---|---|---|---|")
for method in ("Register", "Heartbeat", "StreamAssignments", "ReportStatus", "UploadSamples"):
    r = sides["real"]["methods"].get(method, {}).get("calls", 0) / nodes / window["real"]
    s = sides["sim"]["methods"].get(method, {}).get("calls", 0) / nodes / window["sim"]
    row(f"{method} calls/s per agent", r, s)
def per_1000(side, method):
    return sides[side]["methods"].get(method, {}).get("calls", 0) / max(1, samples[side]) * 1000
for method in ("ReportStatus", "UploadSamples"):
    row(f"{method} calls per 1,000 samples", per_1000("real", method), per_1000("sim", method))
for label, pick in (("samples", lambda b: b[0] + b[1]), ("iterations", lambda b: b[0]),
                    ("readings", lambda b: b[1])):
    r = [pick(b) for b in sides["real"]["upload_batches"]]
    s = [pick(b) for b in sides["sim"]["upload_batches"]]
    row(f"{label} per upload, mean", sum(r) / max(1, len(r)), sum(s) / max(1, len(s)), "{:.2f}")
    row(f"{label} per upload, p50", quantile(r, 0.5), quantile(s, 0.5), "{:.0f}")
    row(f"{label} per upload, p99", quantile(r, 0.99), quantile(s, 0.99), "{:.0f}")
import re
def metrics(side):
    calls, batch = {}, {}
    try:
        text = open(f"{out}/{side}/metrics.txt").read()
    except OSError:
        return calls, batch
    labels = lambda text: dict(re.findall(r'(\w+)="([^"]*)"', text))
    for m in re.finditer(r'^bench_agent_rpcs_total\{([^}]*)\} (\S+)$', text, re.M):
        method = labels(m.group(1))["method"]
        calls[method] = calls.get(method, 0) + float(m.group(2))
    for m in re.finditer(r'^bench_upload_batch_samples_(sum|count)\{([^}]*)\} (\S+)$', text, re.M):
        batch[(labels(m.group(2))["kind"], m.group(1))] = float(m.group(3))
    return calls, batch
(rc, rb), (sc, sb) = metrics("real"), metrics("sim")
if rc and sc:
    # benchd's counters run from its start to the scrape after the submitter's end.
    for method in ("Register", "Heartbeat", "StreamAssignments", "ReportStatus", "UploadSamples"):
        row(f"{method} calls (benchd's bench_agent_rpcs_total, all agents)", rc.get(method, 0),
            sc.get(method, 0), "{:.0f}")
    for kind in ("iteration", "gpu"):
        r = rb.get((kind, "sum"), 0) / max(1, rb.get((kind, "count"), 0))
        s = sb.get((kind, "sum"), 0) / max(1, sb.get((kind, "count"), 0))
        row(f"{kind} samples per upload carrying them, mean (benchd's bench_upload_batch_samples)",
            r, s, "{:.2f}")
r_rate = samples["real"] / nodes / window["real"]
s_rate = samples["sim"] / nodes / window["sim"]
row("samples uploaded/s per agent", r_rate, s_rate, "{:.1f}")
print("\n".join(rows))
for side in ("real", "sim"):
    print(f"\n{side}: ReportStatus by kind {dict(sorted(sides[side]['reports'].items()))}")
    jobs = json.load(open(f"{out}/{side}/summary.json"))["jobs"]
    print(f"{side}: jobs submitted {jobs['submitted']}, ended {jobs['finished'] + jobs['ended_by_poll']}")
for side in ("real", "sim"):
    errors = {m: c["errors"] for m, c in sides[side]["methods"].items() if c["errors"]}
    if errors:
        print(f"\n{side}: failed calls {errors}")
PY
