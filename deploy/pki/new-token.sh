#!/usr/bin/env bash
# A new bearer token: 32 random bytes from openssl, written once, as 64 hex digits, on
# stdout, and never stored. Its hash goes into benchd's token file (--tokens) as the line
#   sha256:<hex SHA-256 of the token> ROLE NAME
# (server/auth/auth.h; benchd re-reads the file within --cert-refresh, no restart).
#
# Usage: new-token.sh ROLE NAME [TOKENS_FILE]
#   ROLE: view, submit, admin (benchctl, the web port, a Prometheus scrape) or agent
#   NAME: 1-63 of [A-Za-z0-9._-], starting with a letter or digit; who the token is
#   TOKENS_FILE: appended to (created 0600 if missing); without it the line is printed
#                on stderr, to be added by hand
#
#   new-token.sh submit alice /etc/benchfleet/tokens > alice.token
#
# To revoke a token, delete its line from the file.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

USAGE="${0##*/} view|submit|admin|agent NAME [TOKENS_FILE]"
[ $# -ge 2 ] && [ $# -le 3 ] || usage_error "$USAGE"
ROLE=$1
NAME=$2
FILE=${3:-}
case $ROLE in
  view | submit | admin | agent) ;;
  *) usage_error "$USAGE   (unknown role '$ROLE')" ;;
esac
valid_name "$NAME" ||
  usage_error "$USAGE   (NAME: 1-63 of [A-Za-z0-9._-] starting with a letter or digit, got '$NAME')"

TOKEN=$(openssl rand -hex 32)
# The hash of the token's bytes exactly as sent (no newline), lowercase hex: TokenTable::Hash.
HEX=$(printf '%s' "$TOKEN" | openssl dgst -sha256 -r | cut -d' ' -f1)
[[ $HEX =~ ^[0-9a-f]{64}$ ]] || die "openssl dgst gave an unexpected hash"
LINE="sha256:$HEX $ROLE $NAME"

if [ -n "$FILE" ]; then
  if [ ! -e "$FILE" ]; then
    (umask 077 && : >"$FILE") || die "cannot create $FILE"
  fi
  # A last line without its newline would be joined to ours into one bad line.
  if [ -s "$FILE" ] && [ -n "$(tail -c 1 "$FILE")" ]; then
    echo >>"$FILE"
  fi
  echo "$LINE" >>"$FILE" || die "cannot append to $FILE"
  echo "${0##*/}: added a $ROLE token for $NAME to $FILE" >&2
else
  echo "${0##*/}: add this line to benchd's --tokens file:" >&2
  echo "$LINE" >&2
fi
echo "$TOKEN"
