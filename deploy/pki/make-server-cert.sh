#!/usr/bin/env bash
# benchd's certificate, signed by the fleet's CA in DIR: DIR/NAME.pem and DIR/NAME.key
# (0600), for benchd's --tls-cert and --tls-key. One certificate serves both of benchd's
# ports, gRPC (--listen) and HTTPS (--http). Extended key usage serverAuth; the subject
# alternative names are every name and address clients dial benchd by (they verify it).
#
# Usage: make-server-cert.sh DIR NAME SAN...
#   SAN: DNS:host or IP:address, several in one argument separated by commas, e.g.
#        make-server-cert.sh pki benchd DNS:benchd.example,DNS:benchd IP:10.0.0.5
#   env BENCH_PKI_DAYS: how long it is valid (default 365; below 0: already expired, for tests)
#
# Run it again to renew: the new pair replaces the old one (key first, then certificate),
# and benchd serves it within --cert-refresh, without a restart.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

USAGE="${0##*/} DIR NAME SAN...   (SAN: DNS:host or IP:address, comma-separated allowed)"
[ $# -ge 3 ] || usage_error "$USAGE"
DIR=$1
NAME=$2
shift 2
valid_name "$NAME" || usage_error "$USAGE   (NAME: 1-63 of [A-Za-z0-9._-], got '$NAME')"
DAYS=${BENCH_PKI_DAYS:-365}
valid_days "$DAYS" || usage_error "$USAGE   (BENCH_PKI_DAYS: a number of days, got '$DAYS')"

sans=()
for arg in "$@"; do
  IFS=, read -r -a parts <<<"$arg"
  [ ${#parts[@]} -gt 0 ] || usage_error "$USAGE   (an empty SAN)"
  for san in "${parts[@]}"; do
    [[ $san =~ ^DNS:[A-Za-z0-9*]([A-Za-z0-9.-]*[A-Za-z0-9])?$ || $san =~ ^IP:[0-9A-Fa-f:.]+$ ]] ||
      usage_error "$USAGE   (bad SAN '$san')"
    sans+=("$san")
  done
done
SAN_LIST=$(IFS=,; echo "${sans[*]}")

make_leaf "$DIR" "$NAME" "/CN=$NAME" "$DAYS" "basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = $SAN_LIST
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid"
