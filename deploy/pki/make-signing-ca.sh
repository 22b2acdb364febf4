#!/usr/bin/env bash
# benchd's agent signing CA (issue 24's bootstrap): a sub-CA of the fleet's CA in DIR,
# DIR/NAME.pem and DIR/NAME.key (0600), for benchd's --agent-signing-cert and
# --agent-signing-key. benchd signs with it the short-lived certificates agents obtain with a
# join token (docs/security.md), so the fleet's CA key stays offline. It may sign nothing but
# TLS client certificates (extendedKeyUsage clientAuth, honoured along the chain), no further
# CA below it (pathlen:0), and only benchfleet URIs (nameConstraints permitted URI
# benchfleet). NAME.pem holds the sub-CA alone: benchd sends it with every certificate it
# issues; the fleet's CA is what --client-ca and --tls-ca already hold.
#
# Usage: make-signing-ca.sh DIR [NAME] [DAYS]
#   NAME: default agent-signer
#   DAYS: default $BENCH_PKI_DAYS, else 365; below 0: already expired, for tests
#
# The fleet's CA must allow a sub-CA: one made by make-ca.sh since the bootstrap
# (basicConstraints pathlen:1). An older CA (pathlen:0) is refused: make a new CA, or (less
# well) give benchd the CA's own ca.pem and ca.key as the signer. Run it again to renew the
# sub-CA (restart benchd to use it); agent certificates it signed stay valid while the CA is.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

USAGE="${0##*/} DIR [NAME] [DAYS]"
[ $# -ge 1 ] && [ $# -le 3 ] && [ -n "$1" ] || usage_error "$USAGE"
DIR=$1
NAME=${2:-agent-signer}
DAYS=${3:-${BENCH_PKI_DAYS:-365}}
valid_name "$NAME" || usage_error "$USAGE   (NAME: 1-63 of [A-Za-z0-9._-], got '$NAME')"
valid_days "$DAYS" || usage_error "$USAGE   (DAYS: a number of days, got '$DAYS')"
[ "$NAME" != ca ] || usage_error "$USAGE   (NAME 'ca' would overwrite the fleet's CA)"
[ -r "$DIR/ca.pem" ] && [ -r "$DIR/ca.key" ] ||
  die "no CA in $DIR (ca.pem and ca.key; make one with make-ca.sh $DIR)"
constraints=$(openssl x509 -in "$DIR/ca.pem" -noout -ext basicConstraints 2>/dev/null | tail -n +2)
if [[ $constraints =~ pathlen:0 ]]; then
  die "$DIR/ca.pem allows no sub-CA (pathlen:0: made before the agent bootstrap); make a new CA with make-ca.sh in another directory (docs/security.md, \"Rotation\")"
fi

make_leaf "$DIR" "$NAME" "/CN=benchfleet agent signer $NAME" "$DAYS" "basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
extendedKeyUsage = clientAuth
nameConstraints = critical, permitted;URI:benchfleet
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid"
