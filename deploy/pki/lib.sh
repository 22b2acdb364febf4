# What the deploy/pki scripts share (sourced, not run): key generation, signing a leaf
# with the fleet's CA, and installing files so that a reader (benchd and the agents
# re-read their certificates when the files change) never sees half of a new pair.
# Offline: openssl only. Keys are ECDSA P-256, written 0600.

# $BENCH_PKI_DAYS, when set, is the validity of a certificate whose DAYS is not given.

die() {
  echo "${0##*/}: $*" >&2
  exit 1
}

# usage TEXT: prints TEXT and exits 2 (a usage error).
usage_error() {
  echo "usage: $1" >&2
  exit 2
}

# A principal's or a file's name: 1-63 bytes of [A-Za-z0-9._-], starting with a letter or
# digit. The rule agents' node names follow (server/core/inventory_validation.cc) and benchd's
# URI SAN and token names too (server/auth/auth.cc).
valid_name() {
  [[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$ ]]
}

valid_days() {
  [[ $1 =~ ^-?[0-9]{1,5}$ ]] && [ "$1" -ne 0 ]
}

# new_key FILE: a fresh ECDSA P-256 private key (PKCS#8 PEM), mode 0600 from the start.
new_key() {
  (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
    -out "$1" 2>/dev/null) || die "cannot write a key to $1"
  chmod 600 "$1"
}

# sign_leaf CA_DIR KEY OUT SUBJECT DAYS EXTENSIONS: a certificate for KEY signed by
# CA_DIR/ca.pem and ca.key, with a random serial. EXTENSIONS are openssl x509v3 lines.
# DAYS < 0 makes one that expired: valid from now to DAYS days ago (for tests of refusal).
sign_leaf() {
  local ca_dir=$1 key=$2 out=$3 subject=$4 days=$5 extensions=$6
  local csr ext
  csr=$(mktemp) ext=$(mktemp)
  printf '%s\n' "$extensions" >"$ext"
  if ! openssl req -new -key "$key" -subj "$subject" -out "$csr" 2>/dev/null ||
    ! openssl x509 -req -in "$csr" -CA "$ca_dir/ca.pem" -CAkey "$ca_dir/ca.key" \
      -set_serial "0x$(openssl rand -hex 16)" -days "$days" -sha256 \
      -extfile "$ext" -out "$out" 2>/dev/null; then
    rm -f "$csr" "$ext"
    die "openssl could not sign $out"
  fi
  rm -f "$csr" "$ext"
}

# make_leaf DIR NAME SUBJECT DAYS EXTENSIONS: DIR/NAME.key and DIR/NAME.pem, signed by
# DIR's CA. Both are made beside their final names and moved into place, the key first,
# so a file watcher sees either the old pair or the new one settle within one refresh.
make_leaf() {
  local dir=$1 name=$2 subject=$3 days=$4 extensions=$5
  local key=$dir/.$name.key.new pem=$dir/.$name.pem.new
  [ -r "$dir/ca.pem" ] && [ -r "$dir/ca.key" ] ||
    die "no CA in $dir (ca.pem and ca.key; make one with make-ca.sh $dir)"
  trap "rm -f $(printf '%q %q' "$key" "$pem")" EXIT
  new_key "$key"
  sign_leaf "$dir" "$key" "$pem" "$subject" "$days" "$extensions"
  mv -f "$key" "$dir/$name.key"
  mv -f "$pem" "$dir/$name.pem"
  trap - EXIT
  echo "${0##*/}: wrote $dir/$name.pem and $dir/$name.key (0600)" >&2
}
