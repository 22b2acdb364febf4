#!/usr/bin/env bash
# The fleet simulator's PKI (issue 27), made with deploy/pki's scripts: DIR/ca.pem (the fleet
# CA), DIR/server.pem/.key (benchd, SAN IP:127.0.0.1 and DNS:localhost), DIR/node-0000 ...
# node-(NODES-1) .pem/.key (role agent, one per simulated node) and
# DIR/fleet-submitter.pem/.key (role submit: the simulator's job submitter) and
# DIR/fleet-viewer.pem/.key (role view, for benchctl and /metrics readers). Certificates that
# exist are kept, so a second run is quick; the node certificates are made JOBS at a time
# ($FLEET_PKI_JOBS, default: the number of CPUs).
#
# Usage: fleet_pki.sh DIR NODES
# benchd then runs with --tls-cert DIR/server.pem --tls-key DIR/server.key --client-ca DIR/ca.pem
# and fleet_sim with --ca DIR/ca.pem --cert_dir DIR.
set -euo pipefail
[ $# -eq 2 ] && [[ $2 =~ ^[0-9]+$ ]] || { echo "usage: ${0##*/} DIR NODES" >&2; exit 2; }
DIR=$1
NODES=$2
PKI=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../deploy/pki" && pwd)
JOBS=${FLEET_PKI_JOBS:-$(nproc)}
mkdir -p "$DIR"
[ -f "$DIR/ca.pem" ] || bash "$PKI/make-ca.sh" "$DIR" 2>/dev/null
[ -f "$DIR/server.pem" ] ||
  bash "$PKI/make-server-cert.sh" "$DIR" server IP:127.0.0.1 DNS:localhost 2>/dev/null
[ -f "$DIR/fleet-submitter.pem" ] ||
  bash "$PKI/make-client-cert.sh" "$DIR" submit fleet-submitter 2>/dev/null
[ -f "$DIR/fleet-viewer.pem" ] || bash "$PKI/make-client-cert.sh" "$DIR" view fleet-viewer 2>/dev/null
for ((i = 0; i < NODES; i++)); do
  name=$(printf 'node-%04d' "$i")
  [ -f "$DIR/$name.pem" ] && [ -f "$DIR/$name.key" ] || echo "$name"
done | xargs -r -P "$JOBS" -I{} bash "$PKI/make-client-cert.sh" "$DIR" agent {} 2>/dev/null
missing=0
for ((i = 0; i < NODES; i++)); do
  [ -f "$DIR/$(printf 'node-%04d' "$i").pem" ] || missing=$((missing + 1))
done
[ "$missing" = 0 ] || { echo "${0##*/}: $missing node certificates were not made" >&2; exit 1; }
echo "${0##*/}: $DIR holds the CA, server, fleet-submitter, fleet-viewer and $NODES node certificates" >&2
