#!/usr/bin/env bash
# A certificate authority for one fleet: DIR/ca.pem (give it to benchd as --client-ca and
# to agents and benchctl as --tls-ca) and DIR/ca.key (0600; keep it off the fleet's
# machines: it signs every identity). ECDSA P-256, offline, openssl only.
#
# Usage: make-ca.sh DIR [DAYS]     DAYS: how long the CA is valid (default $BENCH_PKI_DAYS,
#                                  else 3650)
#
# Refuses a DIR that already holds ca.key: a new CA means new certificates for everyone.
# To rotate a CA, make the new one in another DIR (docs/security.md, "Rotation").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

USAGE="${0##*/} DIR [DAYS]"
[ $# -ge 1 ] && [ $# -le 2 ] && [ -n "$1" ] || usage_error "$USAGE"
DIR=$1
DAYS=${2:-${BENCH_PKI_DAYS:-3650}}
[[ $DAYS =~ ^[0-9]{1,5}$ ]] && [ "$DAYS" -gt 0 ] ||
  usage_error "$USAGE   (DAYS: a positive number of days, got '$DAYS')"

[ -e "$DIR/ca.key" ] && die "$DIR already holds a CA (ca.key); make a new one in another directory"
mkdir -p "$DIR"

# The subject names the time, so that an old and a new CA side by side in a bundle
# (rotation) are told apart.
CN="benchfleet CA $(date -u +%Y-%m-%dT%H:%M:%SZ)"
config=$(mktemp)
trap 'rm -f "$config" "$DIR/.ca.key.new" "$DIR/.ca.pem.new"' EXIT
cat >"$config" <<EOF
[req]
distinguished_name = dn
x509_extensions = ca
prompt = no
[dn]
CN = $CN
[ca]
basicConstraints = critical, CA:TRUE, pathlen:1
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
EOF
new_key "$DIR/.ca.key.new"
openssl req -x509 -new -config "$config" -key "$DIR/.ca.key.new" -days "$DAYS" -sha256 \
  -set_serial "0x$(openssl rand -hex 16)" -out "$DIR/.ca.pem.new" 2>/dev/null ||
  die "openssl could not make the CA certificate"
mv "$DIR/.ca.key.new" "$DIR/ca.key"
mv "$DIR/.ca.pem.new" "$DIR/ca.pem"
echo "${0##*/}: wrote $DIR/ca.pem ($CN, $DAYS days) and $DIR/ca.key (0600)" >&2
