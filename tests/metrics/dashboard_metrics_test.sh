#!/usr/bin/env bash
# Self-test of tests/metrics/dashboard_metrics.py and of the observability files in
# deploy/, without benchd:
#  - the real dashboard against an exposition holding every metric benchd documents
#    (docs/observability.md): passes;
#  - the same without bench_gpu_power_watts: fails (exit 1) and names it;
#  - --allow-absent, a wrong uid, a missing variable, a panel without target, a
#    dashboard naming no bench_ metric, unreadable input: the exit status each documents;
#  - promtool check config on deploy/prometheus/*.yml (promtool missing is a failure:
#    Debian's `prometheus` package ships it);
#  - the dashboard, the Grafana provisioning files and the compose file agree on the
#    datasource uid and the dashboards folder.
# Usage: tests/metrics/dashboard_metrics_test.sh   (from anywhere; exit 0 = pass)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${PYTHON:-}" ]; then
  if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
CHECK="$ROOT/tests/metrics/dashboard_metrics.py"
DASH="$ROOT/deploy/grafana/dashboards/benchfleet.json"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dashboard_metrics_test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run NAME EXPECTED_RC [GREP_PATTERN] -- ARGS...: runs the checker, checks its exit
# status and, when given, that its output matches GREP_PATTERN (extended regex).
run() {
  local name=$1 want=$2 pattern=$3
  shift 4
  local out rc
  out=$("$PYTHON" "$CHECK" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "$name: exit $rc, expected $want"
    printf '%s\n' "$out" | sed 's/^/    /'
    return
  fi
  if [ -n "$pattern" ] && ! printf '%s\n' "$out" | grep -Eq -- "$pattern"; then
    fail "$name: output does not match /$pattern/"
    printf '%s\n' "$out" | sed 's/^/    /'
    return
  fi
  pass "$name (exit $rc)"
}

# Every metric benchd exports, as prometheus-cpp writes them (Prometheus text format 0.0.4).
cat >"$TMP/full.prom" <<'EOF'
# HELP bench_jobs Jobs known to benchd, by state.
# TYPE bench_jobs gauge
bench_jobs{state="queued"} 1
bench_jobs{state="running"} 1
bench_jobs{state="succeeded"} 7
bench_jobs{state="failed"} 0
bench_jobs{state="cancelled"} 0
# HELP bench_queue_length Jobs waiting to be placed.
# TYPE bench_queue_length gauge
bench_queue_length 1
# HELP bench_agents_connected Agents with a live stream.
# TYPE bench_agents_connected gauge
bench_agents_connected 1
# HELP bench_devices Devices an agent offers.
# TYPE bench_devices gauge
bench_devices{kind="cuda",node="node-1"} 8
# HELP bench_devices_busy Devices running a rank.
# TYPE bench_devices_busy gauge
bench_devices_busy{kind="cuda",node="node-1"} 2
# HELP bench_samples_ingested_total Iteration samples newly stored.
# TYPE bench_samples_ingested_total counter
bench_samples_ingested_total 1200
# HELP bench_gpu_samples_ingested_total GPU telemetry samples newly stored.
# TYPE bench_gpu_samples_ingested_total counter
bench_gpu_samples_ingested_total 600
# HELP bench_sample_duplicates_total Samples received again and not stored twice.
# TYPE bench_sample_duplicates_total counter
bench_sample_duplicates_total 3
# HELP bench_ingest_errors_total Rejected uploads.
# TYPE bench_ingest_errors_total counter
bench_ingest_errors_total{reason="unknown_job"} 0
# HELP bench_job_images_per_second Throughput of a job, all ranks.
# TYPE bench_job_images_per_second gauge
bench_job_images_per_second{batch_size="256",bench_job="j-1",devices="2",model="resnet50",precision="amp"} 2790.5
# HELP bench_job_rank_images_per_second Throughput of one rank.
# TYPE bench_job_rank_images_per_second gauge
bench_job_rank_images_per_second{bench_job="j-1",model="resnet50",node="node-1",precision="amp",rank="0"} 1396.1
bench_job_rank_images_per_second{bench_job="j-1",model="resnet50",node="node-1",precision="amp",rank="1"} 1394.4
# HELP bench_job_energy_per_image_joules GPU energy per image of a finished job.
# TYPE bench_job_energy_per_image_joules gauge
bench_job_energy_per_image_joules{bench_job="j-0",model="resnet50",precision="amp"} 0.21
# HELP bench_gpu_power_watts GPU power draw.
# TYPE bench_gpu_power_watts gauge
bench_gpu_power_watts{bench_job="j-1",gpu="0",model="resnet50",node="node-1",precision="amp",rank="0",uuid="GPU-0"} 295.2
# HELP bench_gpu_sm_clock_hertz GPU SM clock.
# TYPE bench_gpu_sm_clock_hertz gauge
bench_gpu_sm_clock_hertz{bench_job="j-1",gpu="0",model="resnet50",node="node-1",precision="amp",rank="0",uuid="GPU-0"} 1410000000
# HELP bench_gpu_memory_clock_hertz GPU memory clock.
# TYPE bench_gpu_memory_clock_hertz gauge
bench_gpu_memory_clock_hertz{bench_job="j-1",gpu="0",model="resnet50",node="node-1",precision="amp",rank="0",uuid="GPU-0"} 1593000000
# HELP bench_gpu_temperature_celsius GPU temperature.
# TYPE bench_gpu_temperature_celsius gauge
bench_gpu_temperature_celsius{bench_job="j-1",gpu="0",model="resnet50",node="node-1",precision="amp",rank="0",uuid="GPU-0"} 61
# HELP bench_gpu_utilization_ratio GPU utilization, 0..1.
# TYPE bench_gpu_utilization_ratio gauge
bench_gpu_utilization_ratio{bench_job="j-1",gpu="0",model="resnet50",node="node-1",precision="amp",rank="0",uuid="GPU-0"} 0.98
# HELP bench_gpu_memory_used_bytes GPU memory in use.
# TYPE bench_gpu_memory_used_bytes gauge
bench_gpu_memory_used_bytes{bench_job="j-1",gpu="0",model="resnet50",node="node-1",precision="amp",rank="0",uuid="GPU-0"} 30000000000
# HELP bench_gpu_energy_joules_total NVML total energy.
# TYPE bench_gpu_energy_joules_total counter
bench_gpu_energy_joules_total{bench_job="j-1",gpu="0",model="resnet50",node="node-1",precision="amp",rank="0",uuid="GPU-0"} 123456.7
# HELP bench_gpu_throttle_reasons NVML clocks throttle reasons bit mask.
# TYPE bench_gpu_throttle_reasons gauge
bench_gpu_throttle_reasons{bench_job="j-1",gpu="0",model="resnet50",node="node-1",precision="amp",rank="0",uuid="GPU-0"} 0
EOF
grep -v '^bench_gpu_power_watts\|^# [A-Z]* bench_gpu_power_watts ' "$TMP/full.prom" >"$TMP/no_power.prom"
if grep -q bench_gpu_power_watts "$TMP/no_power.prom"; then fail "test setup: power not removed"; fi

# The checker against the real dashboard.
run "every documented metric present" 0 'OK: [0-9]+ metrics checked' -- "$DASH" "$TMP/full.prom"
run "bench_gpu_power_watts removed" 1 'missing metric bench_gpu_power_watts' -- "$DASH" "$TMP/no_power.prom"
if out=$("$PYTHON" "$CHECK" "$DASH" "$TMP/no_power.prom" 2>&1); [ "$(printf '%s\n' "$out" | grep -c 'missing metric')" = 1 ]; then
  pass "only bench_gpu_power_watts reported"
else
  fail "expected exactly one missing metric"; printf '%s\n' "$out" | sed 's/^/    /'
fi
run "allowed absent" 0 'absent but allowed: bench_gpu_power_watts' -- \
  --allow-absent 'bench_gpu_.*' "$DASH" "$TMP/no_power.prom"
run "metrics from stdin" 0 'OK:' -- "$DASH" - <"$TMP/full.prom"
# OpenMetrics-style counters (TYPE without _total) provide the _total name.
sed -e 's/^# TYPE bench_samples_ingested_total counter/# TYPE bench_samples_ingested counter/' \
    -e 's/^# HELP bench_samples_ingested_total .*//' "$TMP/full.prom" \
  | grep -v '^bench_samples_ingested_total' >"$TMP/openmetrics.prom"
run "counter named by its TYPE line only" 0 'OK:' -- "$DASH" "$TMP/openmetrics.prom"
printf '' >"$TMP/empty.prom"
run "empty exposition" 1 'missing metric bench_queue_length' -- "$DASH" "$TMP/empty.prom"

# Structural checks and input errors, on edited copies of the dashboard.
edit() {  # edit OUT PYTHON_STATEMENTS (d is the dashboard)
  "$PYTHON" - "$DASH" "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
PY
}
edit "$TMP/uid.json" 'd["uid"] = "other"'
run "wrong uid" 1 'uid is .other.' -- "$TMP/uid.json" "$TMP/full.prom"
edit "$TMP/novar.json" 'd["templating"]["list"] = [v for v in d["templating"]["list"] if v["name"] != "gpu"]'
run "gpu variable missing" 1 "no template variable 'gpu'" -- "$TMP/novar.json" "$TMP/full.prom"
edit "$TMP/notarget.json" '[p for p in d["panels"] if p["type"] != "row"][0]["targets"] = []'
run "panel without target" 1 'has no target' -- "$TMP/notarget.json" "$TMP/full.prom"
edit "$TMP/nods.json" '[p for p in d["panels"] if p["type"] != "row"][0].pop("datasource")'
run "panel without datasource" 1 'has no datasource' -- "$TMP/nods.json" "$TMP/full.prom"
edit "$TMP/typo.json" '[p for p in d["panels"] if p["type"] != "row"][0]["targets"][0]["expr"] = "sum(bench_agents_conected)"'
run "misspelt metric" 1 'missing metric bench_agents_conected' -- "$TMP/typo.json" "$TMP/full.prom"
edit "$TMP/nometric.json" '
for p in d["panels"]:
    for t in p.get("targets", []): t["expr"] = "up"
for v in d["templating"]["list"]:
    if v["type"] == "query": v["query"] = {"query": "label_values(up, instance)"}; v["definition"] = ""'
run "dashboard names no bench_ metric" 2 'names no bench_ metric' -- "$TMP/nometric.json" "$TMP/full.prom"
printf '{"uid": ' >"$TMP/broken.json"
run "dashboard not JSON" 2 'not JSON' -- "$TMP/broken.json" "$TMP/full.prom"
run "dashboard unreadable" 2 'cannot read dashboard' -- "$TMP/missing.json" "$TMP/full.prom"
run "metrics unreadable" 2 'cannot read metrics' -- "$DASH" "$TMP/missing.prom"
printf 'bench_x{ 1\n!!! not a sample\n' >"$TMP/garbage.prom"
run "metrics not an exposition" 2 'not a sample' -- "$DASH" "$TMP/garbage.prom"

# Prometheus configuration.
if command -v promtool >/dev/null 2>&1; then
  for cfg in "$ROOT"/deploy/prometheus/prometheus.yml "$ROOT"/deploy/prometheus/prometheus-local.yml; do
    if out=$(promtool check config "$cfg" 2>&1); then
      pass "promtool check config ${cfg#"$ROOT"/}"
    else
      fail "promtool check config ${cfg#"$ROOT"/}"; printf '%s\n' "$out" | sed 's/^/    /'
    fi
  done
else
  fail "promtool not found (Debian package 'prometheus' provides it; deploy/install-deps.sh installs it)"
fi
if grep -q '"benchd:7601"' "$ROOT/deploy/prometheus/prometheus.yml" &&
   grep -q '"127.0.0.1:7601"' "$ROOT/deploy/prometheus/prometheus-local.yml"; then
  pass "scrape targets benchd:7601 (compose) and 127.0.0.1:7601 (bare metal)"
else
  fail "scrape targets"
fi

# The pieces agree: datasource uid, dashboards folder, mounts.
ds_uid=$(sed -n 's/^ *uid: *\([A-Za-z0-9_-]*\).*/\1/p' "$ROOT/deploy/grafana/provisioning/datasources/prometheus.yml" | head -1)
dash_ds=$("$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print([v for v in d["templating"]["list"] if v["type"]=="datasource"][0]["current"]["value"])' "$DASH")
if [ -n "$ds_uid" ] && [ "$ds_uid" = "$dash_ds" ]; then
  pass "datasource uid $ds_uid provisioned and the dashboard's default"
else
  fail "datasource uid: provisioned '$ds_uid', dashboard default '$dash_ds'"
fi
dash_dir=$(sed -n 's/^ *path: *\(\/[^ ]*\).*/\1/p' "$ROOT/deploy/grafana/provisioning/dashboards/benchfleet.yml" | head -1)
compose="$ROOT/deploy/compose/docker-compose.yml"
if [ -n "$dash_dir" ] && grep -q "grafana/dashboards:$dash_dir" "$compose" &&
   grep -q 'grafana/provisioning:/etc/grafana/provisioning' "$compose" &&
   grep -q 'prometheus/prometheus.yml:/etc/prometheus/prometheus.yml' "$compose"; then
  pass "compose mounts the dashboards at $dash_dir, the provisioning and prometheus.yml"
else
  fail "compose mounts (dashboards provider path '$dash_dir')"
fi
# YAML syntax, where PyYAML is installed (python3-yaml; not needed by the checker).
if "$PYTHON" -c 'import yaml' 2>/dev/null; then
  for y in "$compose" "$ROOT"/deploy/grafana/provisioning/*/*.yml; do
    if out=$("$PYTHON" -c 'import sys,yaml; yaml.safe_load(open(sys.argv[1]))' "$y" 2>&1); then
      pass "YAML parses: ${y#"$ROOT"/}"
    else
      fail "YAML: ${y#"$ROOT"/}"; printf '%s\n' "$out" | sed 's/^/    /'
    fi
  done
else
  echo "note: PyYAML not installed; YAML syntax of compose and provisioning files not checked"
fi

if [ "$failures" -ne 0 ]; then
  echo "dashboard_metrics_test: $failures failure(s)"
  exit 1
fi
echo "dashboard_metrics_test: all passed"
