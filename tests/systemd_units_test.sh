#!/usr/bin/env bash
# deploy/systemd's units and default files (ctest deploy.systemd_units):
#  - `systemd-analyze verify` on each unit passes with no message at all. verify checks
#    that ExecStart's program exists and is executable; the units name /usr/bin (where
#    the packages install the binaries), so it runs on a temporary copy whose /usr/bin/X
#    is replaced by the built binary's path, nothing else changed (--root does not apply
#    to that check in systemd 252).
#  - `systemd-analyze security --offline=true` on each unit as shipped gives an overall
#    exposure at or below the level the unit reaches today (BENCHD_MAX, AGENT_MAX), so a
#    change that weakens the hardening fails here.
#  - what the units promise: Type=notify, the watchdog, the state directories, the
#    default files, no PrivateDevices for the agent and its NVIDIA devices allowed.
#  - every --flag in the default files (commented examples included) is one the binary's
#    --help lists.
#  - self-checks: a unit with a misspelled key fails verify here, and one without its
#    CapabilityBoundingSet= line scores above the limit.
# Needs bash, grep, sed and systemd (for systemd-analyze; systemd need not be running).
#
# Usage: tests/systemd_units_test.sh ROOT BENCHD BENCH_AGENT
set -uo pipefail

if [ $# -ne 3 ]; then
  echo "usage: $0 ROOT BENCHD BENCH_AGENT" >&2
  exit 2
fi
ROOT=$1
BENCHD=$(realpath "$2")
AGENT=$(realpath "$3")
UNITS=$ROOT/deploy/systemd
BENCHD_MAX=1.1
AGENT_MAX=1.6
command -v systemd-analyze >/dev/null || { echo "FAIL: systemd-analyze not found (apt-get install systemd)"; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# verify_copy UNIT_FILE BINARY_NAME BINARY_PATH DIR: verifies a copy made in DIR; prints
# verify's messages; fails when verify fails or prints anything.
verify_copy() {
  local unit=$1 name=$2 binary=$3 copy out rc
  mkdir -p "$4"
  copy=$4/$(basename "$unit")
  sed "s|/usr/bin/$name |$binary |" "$unit" >"$copy"
  grep -qF "ExecStart=$binary " "$copy" || { echo "ExecStart=/usr/bin/$name not found"; return 1; }
  out=$(systemd-analyze verify --man=no "$copy" 2>&1)
  rc=$?
  [ -n "$out" ] && echo "$out"
  [ "$rc" -eq 0 ] && [ -z "$out" ]
}

# exposure UNIT_FILE: the overall exposure level systemd-analyze gives it, e.g. 1.1
exposure() {
  systemd-analyze security --offline=true "$1" 2>&1 |
    sed -n 's/^→ Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p'
}

# at_most A B: A <= B for decimals
at_most() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }

check_unit() {
  local unit=$1 name=$2 binary=$3 max=$4 out score
  [ -f "$unit" ] || { fail "$unit missing"; return; }
  if out=$(verify_copy "$unit" "$name" "$binary" "$WORK/verify"); then
    echo "ok: $(basename "$unit") verifies"
  else
    fail "systemd-analyze verify $(basename "$unit"): $out"
  fi
  score=$(exposure "$unit")
  if [ -z "$score" ]; then
    fail "systemd-analyze security --offline=true $(basename "$unit") printed no overall exposure"
  elif ! at_most "$score" "$max"; then
    fail "$(basename "$unit"): exposure $score, above $max"
  else
    echo "ok: $(basename "$unit") exposure $score (limit $max)"
  fi
}

check_unit "$UNITS/benchd.service" benchd "$BENCHD" "$BENCHD_MAX"
check_unit "$UNITS/bench-agent.service" bench-agent "$AGENT" "$AGENT_MAX"

# has UNIT LINE: the unit has exactly this line.
has() { grep -qxF -- "$2" "$UNITS/$1" || fail "$1 lacks the line '$2'"; }
for unit in benchd.service bench-agent.service; do
  has $unit "Type=notify"
  has $unit "NotifyAccess=main"
  has $unit "Restart=on-failure"
  has $unit "DynamicUser=yes"
  has $unit "ProtectSystem=strict"
done
has benchd.service "EnvironmentFile=-/etc/default/benchd"
has benchd.service "ExecStart=/usr/bin/benchd --db %S/benchfleet/benchfleet.db \$BENCHD_ARGS"
has benchd.service "StateDirectory=benchfleet"
has benchd.service "WatchdogSec=30s"
has bench-agent.service "EnvironmentFile=-/etc/default/bench-agent"
has bench-agent.service "ExecStart=/usr/bin/bench-agent \$BENCH_AGENT_ARGS"
has bench-agent.service "StateDirectory=bench-agent"
has bench-agent.service "DeviceAllow=char-nvidia* rw"
has bench-agent.service "ReadWritePaths=/dev/shm"
grep -qE '^PrivateDevices=(yes|true|1|on)' "$UNITS/bench-agent.service" &&
  fail "bench-agent.service sets PrivateDevices: the ranks need /dev/nvidia*"

# The default files: the variable set, and only flags the binaries know.
grep -qE '^BENCHD_ARGS="[^"]*"$' "$UNITS/benchd.default" || fail "benchd.default sets no BENCHD_ARGS"
grep -qE '^BENCH_AGENT_ARGS="[^"]*"$' "$UNITS/bench-agent.default" ||
  fail "bench-agent.default sets no BENCH_AGENT_ARGS"
check_flags() {
  local file=$1 binary=$2 help flag
  help=$("$binary" --help 2>&1)
  for flag in $(grep -E '^#?[A-Z_]+_ARGS=' "$file" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
    # absl lists --state_dir, CLI11 --state-dir: both spellings are accepted.
    grep -qE -- "(${flag}|${flag//-/_})([^a-z_-]|$)" <<<"$help" ||
      fail "$(basename "$file"): $flag is not in $(basename "$binary") --help"
  done
}
check_flags "$UNITS/benchd.default" "$BENCHD"
check_flags "$UNITS/bench-agent.default" "$AGENT"

# Self-checks: the checks above can fail.
mkdir -p "$WORK/typo" "$WORK/weak"
sed 's/^ProtectHome=yes$/ProtectHom=yes/' "$UNITS/benchd.service" >"$WORK/typo/benchd.service"
out=$(verify_copy "$WORK/typo/benchd.service" benchd "$BENCHD" "$WORK/typo/verify") &&
  fail "verify accepted a unit with the key ProtectHom"
grep -q "Unknown key 'ProtectHom'" <<<"$out" || fail "verify of the misspelled unit said: $out"
grep -v '^CapabilityBoundingSet=' "$UNITS/benchd.service" >"$WORK/weak/benchd.service"
weak=$(exposure "$WORK/weak/benchd.service")
at_most "${weak:-0}" "$BENCHD_MAX" &&
  fail "without CapabilityBoundingSet= benchd.service still scores ${weak:-nothing}"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all systemd unit checks passed"
