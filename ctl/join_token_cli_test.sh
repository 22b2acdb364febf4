#!/usr/bin/env bash
# benchctl join-token against a real benchd over TLS, both real processes (ctest
# ctl.cli.join_token_over_tls): an admin's token creates a join token (the token alone on
# stdout, its id and uses on stderr), lists it without its secret and revokes it; a
# submit token may not list; the join token itself may not read jobs; a restarted benchd
# still lists it revoked. The PKI comes from deploy/pki's scripts.
#
# Usage: ctl/join_token_cli_test.sh BENCHD BENCHCTL PKI_DIR
set -uo pipefail
BENCHD=$1 BENCHCTL=$2 PKI=$3
WORK=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

export BENCH_PKI_DAYS=2
bash "$PKI/make-ca.sh" "$WORK/pki" 2>/dev/null &&
  bash "$PKI/make-server-cert.sh" "$WORK/pki" server DNS:localhost,IP:127.0.0.1 2>/dev/null &&
  bash "$PKI/make-signing-ca.sh" "$WORK/pki" 2>/dev/null || { echo "FAIL: the PKI"; exit 1; }
admin=$(bash "$PKI/new-token.sh" admin root "$WORK/tokens" 2>/dev/null)
alice=$(bash "$PKI/new-token.sh" submit alice "$WORK/tokens" 2>/dev/null)

# start_benchd: benchd on a free port; sets pid and BENCH_SERVER once it serves (waits for
# its log line, up to 60 s).
start_benchd() {
  : >"$WORK/benchd.log"
  "$BENCHD" --listen 127.0.0.1:0 --http= --db "$WORK/bench.db" \
    --tls-cert "$WORK/pki/server.pem" --tls-key "$WORK/pki/server.key" \
    --client-ca "$WORK/pki/ca.pem" --tokens "$WORK/tokens" \
    --agent-signing-cert "$WORK/pki/agent-signer.pem" \
    --agent-signing-key "$WORK/pki/agent-signer.key" 2>"$WORK/benchd.log" &
  pid=$!
  local port= deadline=$((SECONDS + 60))
  while [ -z "$port" ] && [ $SECONDS -lt $deadline ] && kill -0 "$pid" 2>/dev/null; do
    port=$(grep -o 'serving gRPC on 127.0.0.1:[0-9]*' "$WORK/benchd.log" | grep -o '[0-9]*$')
    [ -n "$port" ] || sleep 0.1
  done
  [ -n "$port" ] || { echo "FAIL: benchd did not serve: $(cat "$WORK/benchd.log")"; exit 1; }
  export BENCH_SERVER=127.0.0.1:$port
}
export BENCH_TLS_CA=$WORK/pki/ca.pem
start_benchd

token=$(BENCH_TOKEN=$admin "$BENCHCTL" join-token create --uses 2 --ttl 10m \
  --description "rack 4" 2>"$WORK/err") || fail "join-token create: $(cat "$WORK/err")"
[[ $token =~ ^bj1\.([0-9a-f]{16})\.[0-9a-f]{64}$ ]] || fail "stdout is not the token alone: '$token'"
id=${BASH_REMATCH[1]:-none}
grep -q "join token $id: 2 uses, expires .* (in 10m)" "$WORK/err" ||
  fail "stderr lacks the id, uses and expiry: $(cat "$WORK/err")"
grep -qF "$token" "$WORK/err" && fail "the token was printed on stderr too"

list=$(BENCH_TOKEN=$admin "$BENCHCTL" join-token list 2>&1) || fail "join-token list: $list"
grep -qE "^$id +0/2 +[0-9T:Z-]+ +active +no +rack 4$" <<<"$list" || fail "list: $list"
grep -qF "${token##*.}" <<<"$list" && fail "list shows the secret"

out=$(BENCH_TOKEN=$alice "$BENCHCTL" join-token list 2>&1) && fail "a submit token listed: $out"
grep -q "PERMISSION_DENIED" <<<"$out" || fail "a submit token's refusal: $out"
out=$(BENCH_TOKEN=$token "$BENCHCTL" list 2>&1) && fail "the join token read jobs: $out"
grep -q "PERMISSION_DENIED" <<<"$out" || fail "the join token's refusal: $out"

out=$(BENCH_TOKEN=$admin "$BENCHCTL" join-token revoke "$id" 2>&1) || fail "revoke: $out"
[ "$out" = "revoked join token $id" ] || fail "revoke printed: $out"
out=$(BENCH_TOKEN=$admin "$BENCHCTL" join-token revoke ffffffffffffffff 2>&1) &&
  fail "revoking an unknown id succeeded: $out"
grep -q "no join token with id" <<<"$out" || fail "unknown id: $out"

# A restarted benchd keeps it, revoked.
kill "$pid" && wait "$pid" 2>/dev/null
pid=
start_benchd
list=$(BENCH_TOKEN=$admin "$BENCHCTL" join-token list --format json 2>&1) || fail "list: $list"
grep -qF "\"id\":\"$id\"" <<<"$list" && grep -qF '"revoked":true' <<<"$list" ||
  fail "after a restart: $list"

if [ "$failures" -gt 0 ]; then
  echo "join_token_cli_test: $failures failure(s)"
  exit 1
fi
echo "join_token_cli_test: all checks pass"
