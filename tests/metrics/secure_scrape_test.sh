#!/usr/bin/env bash
# A real Prometheus scrapes a benchd whose security is on, with
# deploy/prometheus/prometheus-secure.yml as an operator would install it: HTTPS verified
# against the fleet's CA and a `view` token, both made by deploy/pki. Passes when
#  - promtool accepts the installed configuration;
#  - the benchd target is up and its bench_* series are in Prometheus;
#  - a second job scraping the same port without the token is down with a 401.
# Usage: tests/metrics/secure_scrape_test.sh BENCHD   (exit 0 = pass)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BENCHD=${1:?usage: $0 BENCHD}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/secure_scrape_test.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for log in "$TMP"/*.log; do echo "--- $log"; tail -n 30 "$log"; done
  exit 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

PKI=$TMP/pki
"$ROOT/deploy/pki/make-ca.sh" "$PKI" 2 2>/dev/null
BENCH_PKI_DAYS=2 "$ROOT/deploy/pki/make-server-cert.sh" "$PKI" benchd DNS:localhost,IP:127.0.0.1 2>/dev/null
"$ROOT/deploy/pki/new-token.sh" view prometheus "$TMP/tokens" >"$TMP/benchfleet.token" 2>/dev/null

GRPC=$(free_port)
HTTP=$(free_port)
PROM=$(free_port)
"$BENCHD" --listen "127.0.0.1:$GRPC" --http "127.0.0.1:$HTTP" --db "$TMP/bench.db" \
  --tls-cert "$PKI/benchd.pem" --tls-key "$PKI/benchd.key" --client-ca "$PKI/ca.pem" \
  --tokens "$TMP/tokens" >"$TMP/benchd.log" 2>&1 &
pids+=($!)

# The operator's file, installed with this run's paths and ports, plus one job without
# the token.
sed -e "s#/etc/prometheus/benchfleet-ca.pem#$PKI/ca.pem#" \
  -e "s#/etc/prometheus/benchfleet.token#$TMP/benchfleet.token#" \
  -e "s#localhost:7601#localhost:$HTTP#" -e "s#localhost:9090#127.0.0.1:$PROM#" \
  "$ROOT/deploy/prometheus/prometheus-secure.yml" >"$TMP/prometheus.yml"
cat >>"$TMP/prometheus.yml" <<EOF
  - job_name: benchd-without-token
    scrape_interval: 1s
    scrape_timeout: 1s
    scheme: https
    tls_config:
      ca_file: $PKI/ca.pem
    static_configs:
      - targets: ["localhost:$HTTP"]
EOF
sed -i "s#scrape_interval: 5s#scrape_interval: 1s#; s#scrape_timeout: 4s#scrape_timeout: 1s#" "$TMP/prometheus.yml"
promtool check config "$TMP/prometheus.yml" >"$TMP/promtool.log" 2>&1 || fail "promtool check config"
echo "PASS: promtool accepts prometheus-secure.yml as installed"

prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/data" \
  --web.listen-address="127.0.0.1:$PROM" >"$TMP/prometheus.log" 2>&1 &
pids+=($!)

# Polls Prometheus until both targets have been scraped; prints "health lastError" of each.
python3 - "$PROM" >"$TMP/targets.txt" 2>"$TMP/poll.log" <<'EOF' || fail "targets were not scraped in 60 s"
import json, sys, time, urllib.request
port = sys.argv[1]
deadline = time.time() + 60
while time.time() < deadline:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/targets", timeout=2) as r:
            targets = json.load(r)["data"]["activeTargets"]
        by_job = {t["labels"]["job"]: t for t in targets}
        ours = [by_job.get("benchd"), by_job.get("benchd-without-token")]
        if all(t and t["health"] != "unknown" for t in ours):
            for job, t in zip(["benchd", "benchd-without-token"], ours):
                print(job, t["health"], t.get("lastError", ""))
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.3)
sys.exit(1)
EOF
cat "$TMP/targets.txt"
grep -q '^benchd up' "$TMP/targets.txt" || fail "the benchd target is not up"
echo "PASS: Prometheus scrapes benchd over HTTPS with a view token"
grep -Eq '^benchd-without-token down .*401' "$TMP/targets.txt" ||
  fail "the target without a token is not down with a 401"
echo "PASS: without the token the scrape is refused with 401"

python3 - "$PROM" <<'EOF' || fail "no bench_ series from the benchd job in Prometheus"
import json, sys, time, urllib.parse, urllib.request
query = urllib.parse.quote('count({job="benchd",__name__=~"bench_.+"})')
deadline = time.time() + 30
while time.time() < deadline:
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/api/v1/query?query={query}", timeout=2) as r:
        result = json.load(r)["data"]["result"]
    if result and float(result[0]["value"][1]) > 0:
        print(f"PASS: {result[0]['value'][1]} bench_ series stored from the secured scrape")
        sys.exit(0)
    time.sleep(0.5)
sys.exit(1)
EOF
