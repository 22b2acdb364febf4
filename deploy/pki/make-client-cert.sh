#!/usr/bin/env bash
# A client certificate, signed by the fleet's CA in DIR: DIR/NAME.pem and DIR/NAME.key
# (0600). Its one subject alternative name, the URI spiffe://benchfleet/ROLE/NAME, is the
# identity benchd gives the caller; extended key usage clientAuth.
#
# Usage: make-client-cert.sh DIR ROLE NAME [DAYS]
#   ROLE: agent (a node's bench-agent: NAME is the node, its --name), view, submit or admin
#         (a person or a program using benchctl, the web port or /metrics)
#   NAME: 1-63 of [A-Za-z0-9._-], starting with a letter or digit (the node-name rule)
#   DAYS: how long it is valid (default $BENCH_PKI_DAYS, else 365; below 0: already
#         expired, for tests)
#
# Run it again to renew; bench-agent and benchctl re-read their certificate files.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

USAGE="${0##*/} DIR agent|view|submit|admin NAME [DAYS]"
[ $# -ge 3 ] && [ $# -le 4 ] || usage_error "$USAGE"
DIR=$1
ROLE=$2
NAME=$3
DAYS=${4:-${BENCH_PKI_DAYS:-365}}
case $ROLE in
  agent | view | submit | admin) ;;
  *) usage_error "$USAGE   (unknown role '$ROLE')" ;;
esac
valid_name "$NAME" ||
  usage_error "$USAGE   (NAME: 1-63 of [A-Za-z0-9._-] starting with a letter or digit, got '$NAME')"
valid_days "$DAYS" || usage_error "$USAGE   (DAYS: a number of days, got '$DAYS')"

make_leaf "$DIR" "$NAME" "/CN=$NAME" "$DAYS" "basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectAltName = URI:spiffe://benchfleet/$ROLE/$NAME
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid"
