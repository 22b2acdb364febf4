#!/usr/bin/env bash
# deploy/pki's scripts (ctest deploy.pki_scripts): usage errors exit 2, a CA refuses to be
# overwritten, certificates carry exactly the SANs, key usages and extended key usage
# benchd expects and chain to the CA, keys are 0600, a negative DAYS makes an expired
# certificate, and a token's line holds the SHA-256 of the printed token (as
# TokenTable::Hash computes it) and is appended to the file. Needs bash and openssl.
#
# Usage: tests/pki_test.sh [ROOT]   (ROOT: the source tree, default this repository)
set -uo pipefail

ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
PKI=$ROOT/deploy/pki
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
# expect RC TEXT COMMAND...: COMMAND exits RC and its stderr+stdout holds TEXT.
expect() {
  local want=$1 text=$2 out rc
  shift 2
  out=$("$@" 2>&1)
  rc=$?
  [ "$rc" -eq "$want" ] || fail "$* exited $rc, not $want: $out"
  grep -qF -- "$text" <<<"$out" || fail "$*: output lacks '$text': $out"
}
mode() { stat -c %a "$1"; }
ext() { openssl x509 -in "$1" -noout -ext "$2" 2>/dev/null | tail -n +2 | sed 's/^ *//'; }

# Usage errors: exit 2 and a usage line, nothing written.
expect 2 "usage: make-ca.sh" bash "$PKI/make-ca.sh"
expect 2 "usage: make-ca.sh" bash "$PKI/make-ca.sh" ca 10 extra
expect 2 "DAYS" bash "$PKI/make-ca.sh" ca soon
expect 2 "usage: make-server-cert.sh" bash "$PKI/make-server-cert.sh" ca benchd
expect 2 "bad SAN 'benchd.example'" bash "$PKI/make-server-cert.sh" ca benchd benchd.example
expect 2 "bad SAN 'URI:x'" bash "$PKI/make-server-cert.sh" ca benchd DNS:a,URI:x
expect 2 "usage: make-client-cert.sh" bash "$PKI/make-client-cert.sh" ca agent
expect 2 "unknown role 'root'" bash "$PKI/make-client-cert.sh" ca root alice
expect 2 "NAME" bash "$PKI/make-client-cert.sh" ca agent "dgx 01"
expect 2 "NAME" bash "$PKI/make-client-cert.sh" ca agent -dgx
expect 2 "NAME" bash "$PKI/make-client-cert.sh" ca agent ../etc
expect 2 "NAME" bash "$PKI/make-client-cert.sh" ca agent "$(printf 'a%.0s' {1..64})"
expect 2 "DAYS" bash "$PKI/make-client-cert.sh" ca agent node-a 0
expect 2 "usage: new-token.sh" bash "$PKI/new-token.sh" view
expect 2 "unknown role 'root'" bash "$PKI/new-token.sh" root ops tokens
expect 2 "NAME" bash "$PKI/new-token.sh" view "a/b" tokens
[ -e ca ] || [ -e tokens ] && fail "a usage error wrote something: $(ls)"
# A leaf needs a CA.
expect 1 "no CA in nowhere" bash "$PKI/make-client-cert.sh" nowhere agent node-a

# The CA: basic constraints and key usage of a CA, key 0600, never overwritten.
expect 0 "wrote ca/ca.pem" bash "$PKI/make-ca.sh" ca 30
[ "$(mode ca/ca.key)" = 600 ] || fail "ca.key is mode $(mode ca/ca.key)"
[ "$(ext ca/ca.pem basicConstraints)" = "CA:TRUE, pathlen:1" ] || fail "CA basic constraints"
[ "$(ext ca/ca.pem keyUsage)" = "Certificate Sign, CRL Sign" ] || fail "CA key usage"
openssl x509 -in ca/ca.pem -noout -text | grep -q "ASN1 OID: prime256v1" || fail "CA is not P-256"
before=$(cat ca/ca.key)
expect 1 "already holds a CA" bash "$PKI/make-ca.sh" ca
[ "$(cat ca/ca.key)" = "$before" ] || fail "make-ca.sh overwrote ca.key"

# A client certificate: exactly one SAN, the URI; clientAuth only; chains to the CA.
expect 0 "wrote ca/node-a.pem" bash "$PKI/make-client-cert.sh" ca agent node-a
[ "$(ext ca/node-a.pem subjectAltName)" = "URI:spiffe://benchfleet/agent/node-a" ] ||
  fail "node-a SAN: $(ext ca/node-a.pem subjectAltName)"
[ "$(ext ca/node-a.pem extendedKeyUsage)" = "TLS Web Client Authentication" ] ||
  fail "node-a EKU: $(ext ca/node-a.pem extendedKeyUsage)"
[ "$(ext ca/node-a.pem basicConstraints)" = "CA:FALSE" ] || fail "node-a basic constraints"
[ "$(mode ca/node-a.key)" = 600 ] || fail "node-a.key is mode $(mode ca/node-a.key)"
openssl verify -CAfile ca/ca.pem -purpose sslclient ca/node-a.pem >/dev/null 2>&1 ||
  fail "node-a does not verify as a TLS client against the CA"
openssl verify -CAfile ca/ca.pem -purpose sslserver ca/node-a.pem >/dev/null 2>&1 &&
  fail "node-a verifies as a TLS server"
[ "$(openssl pkey -in ca/node-a.key -pubout)" = "$(openssl x509 -in ca/node-a.pem -noout -pubkey)" ] ||
  fail "node-a.key is not node-a.pem's key"
expect 0 "wrote ca/alice.pem" bash "$PKI/make-client-cert.sh" ca submit alice 7
[ "$(ext ca/alice.pem subjectAltName)" = "URI:spiffe://benchfleet/submit/alice" ] ||
  fail "alice SAN: $(ext ca/alice.pem subjectAltName)"
BENCH_PKI_DAYS=2 bash "$PKI/make-client-cert.sh" ca view short 2>/dev/null || fail "a 2-day certificate"
openssl x509 -in ca/short.pem -noout -checkend $((3 * 86400)) >/dev/null &&
  fail "BENCH_PKI_DAYS=2 made a certificate valid for 3 days or more"
ls -a ca | grep -q '\.new$' && fail "temporary files left behind: $(ls -a ca)"

# benchd's certificate: every SAN given, serverAuth only.
expect 0 "wrote ca/benchd.pem" bash "$PKI/make-server-cert.sh" ca benchd \
  DNS:benchd.example,IP:10.0.0.5 DNS:localhost
[ "$(ext ca/benchd.pem subjectAltName)" = \
  "DNS:benchd.example, IP Address:10.0.0.5, DNS:localhost" ] ||
  fail "benchd SAN: $(ext ca/benchd.pem subjectAltName)"
[ "$(ext ca/benchd.pem extendedKeyUsage)" = "TLS Web Server Authentication" ] ||
  fail "benchd EKU: $(ext ca/benchd.pem extendedKeyUsage)"
[ "$(mode ca/benchd.key)" = 600 ] || fail "benchd.key is mode $(mode ca/benchd.key)"
openssl verify -CAfile ca/ca.pem -purpose sslserver ca/benchd.pem >/dev/null 2>&1 ||
  fail "benchd does not verify as a TLS server against the CA"

# Renewal replaces the pair; a negative DAYS is already expired; another CA's leaf does
# not chain to this one.
serial=$(openssl x509 -in ca/benchd.pem -noout -serial)
BENCH_PKI_DAYS=30 bash "$PKI/make-server-cert.sh" ca benchd DNS:localhost 2>/dev/null ||
  fail "renewing benchd's certificate"
[ "$(openssl x509 -in ca/benchd.pem -noout -serial)" != "$serial" ] || fail "renewal kept the serial"
bash "$PKI/make-client-cert.sh" ca admin old -1 2>/dev/null || fail "an expired certificate"
verified=$(openssl verify -CAfile ca/ca.pem ca/old.pem 2>&1)
grep -q "certificate has expired" <<<"$verified" ||
  fail "old.pem is not expired: $(openssl x509 -in ca/old.pem -noout -dates)"
bash "$PKI/make-ca.sh" foreign 2>/dev/null && bash "$PKI/make-client-cert.sh" foreign admin ops 2>/dev/null ||
  fail "a foreign CA and its leaf"
openssl verify -CAfile ca/ca.pem foreign/ops.pem >/dev/null 2>&1 && fail "foreign/ops.pem chains to ca"

# The agent signing sub-CA (make-signing-ca.sh): a CA below the fleet's that signs client
# certificates only, benchfleet URIs only, and no CA below it; a leaf it signs verifies as a
# TLS client against the fleet's CA (the sub-CA as intermediate), not as a server, and a
# non-benchfleet URI breaks its name constraint. A CA that allows no sub-CA is refused.
expect 2 "usage: make-signing-ca.sh" bash "$PKI/make-signing-ca.sh"
expect 2 "NAME 'ca'" bash "$PKI/make-signing-ca.sh" ca ca
expect 1 "no CA in nowhere" bash "$PKI/make-signing-ca.sh" nowhere
expect 0 "wrote ca/agent-signer.pem" bash "$PKI/make-signing-ca.sh" ca
[ "$(ext ca/agent-signer.pem basicConstraints)" = "CA:TRUE, pathlen:0" ] ||
  fail "signer basic constraints: $(ext ca/agent-signer.pem basicConstraints)"
[ "$(ext ca/agent-signer.pem extendedKeyUsage)" = "TLS Web Client Authentication" ] ||
  fail "signer EKU: $(ext ca/agent-signer.pem extendedKeyUsage)"
[ "$(mode ca/agent-signer.key)" = 600 ] || fail "agent-signer.key is mode $(mode ca/agent-signer.key)"
openssl verify -CAfile ca/ca.pem ca/agent-signer.pem >/dev/null 2>&1 ||
  fail "agent-signer does not chain to the CA"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out leaf.key 2>/dev/null
openssl req -new -key leaf.key -subj /CN=node-b -out leaf.csr 2>/dev/null
# sub_leaf OUT URI: a client leaf for URI signed by the sub-CA.
sub_leaf() {
  printf 'basicConstraints=critical,CA:FALSE\nextendedKeyUsage=clientAuth\nsubjectAltName=URI:%s\n' \
    "$2" >leaf.ext
  openssl x509 -req -in leaf.csr -CA ca/agent-signer.pem -CAkey ca/agent-signer.key \
    -set_serial 7 -days 1 -extfile leaf.ext -out "$1" 2>/dev/null || fail "signing $1 with agent-signer"
}
sub_leaf good.pem spiffe://benchfleet/agent/node-b
sub_leaf evil.pem spiffe://elsewhere/agent/node-b
openssl verify -CAfile ca/ca.pem -untrusted ca/agent-signer.pem -purpose sslclient good.pem \
  >/dev/null 2>&1 || fail "a leaf of agent-signer does not verify as a TLS client"
openssl verify -CAfile ca/ca.pem -untrusted ca/agent-signer.pem -purpose sslserver good.pem \
  >/dev/null 2>&1 && fail "a leaf of agent-signer verifies as a TLS server"
openssl verify -CAfile ca/ca.pem -untrusted ca/agent-signer.pem evil.pem >/dev/null 2>&1 &&
  fail "agent-signer signed a non-benchfleet URI that verifies"
# A CA of before the bootstrap (pathlen:0) cannot have a sub-CA.
mkdir -p old
printf '[req]\ndistinguished_name=dn\nx509_extensions=ca\nprompt=no\n[dn]\nCN=old\n[ca]\nbasicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign\n' >old.cnf
openssl req -x509 -new -config old.cnf -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout old/ca.key -out old/ca.pem -days 2 2>/dev/null || fail "an old-style CA"
expect 1 "allows no sub-CA" bash "$PKI/make-signing-ca.sh" old

# Tokens: the token once on stdout; the line's hash is SHA-256 of exactly those bytes.
token=$(bash "$PKI/new-token.sh" submit alice tokens 2>stderr) || fail "new-token.sh: $(cat stderr)"
[[ $token =~ ^[0-9a-f]{64}$ ]] || fail "token '$token' is not 64 hex digits"
want="sha256:$(printf '%s' "$token" | sha256sum | cut -d' ' -f1) submit alice"
[ "$(cat tokens)" = "$want" ] || fail "tokens file: '$(cat tokens)', want '$want'"
[ "$(mode tokens)" = 600 ] || fail "a new tokens file is mode $(mode tokens)"
[ -n "$token" ] && grep -qF "$token" stderr tokens && fail "the token itself was written besides stdout"
# Appended after a last line without its newline, kept whole; the existing mode kept.
printf '# grafana\nsha256:%064d view grafana' 0 >tokens2
chmod 640 tokens2
token2=$(bash "$PKI/new-token.sh" view prometheus tokens2 2>/dev/null)
[ "$(wc -l <tokens2)" = 3 ] || fail "tokens2 has $(wc -l <tokens2) lines: $(cat tokens2)"
[ "$(sed -n 2p tokens2)" = "sha256:$(printf '%064d' 0) view grafana" ] || fail "line 2 changed"
[ "$(sed -n 3p tokens2)" = "sha256:$(printf '%s' "$token2" | sha256sum | cut -d' ' -f1) view prometheus" ] ||
  fail "tokens2 line 3: $(sed -n 3p tokens2)"
[ "$(mode tokens2)" = 640 ] || fail "new-token.sh changed an existing file's mode"
# Without a file: the line on stderr, only the token on stdout.
out=$(bash "$PKI/new-token.sh" admin ops 2>stderr)
[ "$(grep -c . <<<"$out")" = 1 ] || fail "stdout holds more than the token: $out"
grep -qF "sha256:$(printf '%s' "$out" | sha256sum | cut -d' ' -f1) admin ops" stderr ||
  fail "no token line on stderr: $(cat stderr)"
[ "$token" != "$token2" ] || fail "two tokens alike"

if [ "$failures" -gt 0 ]; then
  echo "pki_test: $failures failure(s)"
  exit 1
fi
echo "pki_test: all checks pass"
