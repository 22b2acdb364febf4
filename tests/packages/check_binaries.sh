#!/usr/bin/env bash
# The command-line contract every benchfleet binary keeps, checked on the four in BINDIR
# (a build's bin/, or /usr/bin of an installed package):
#   <binary> --version   exits 0 and prints exactly "<binary> VERSION (build ID)" on stdout
#   <binary> --help      exits 0 and prints its usage (a line naming the binary and a flag
#                        of its own)
#
# Usage: check_binaries.sh BINDIR VERSION BUILD_ID_FILE
#   BUILD_ID_FILE: the build's generated/build_info/build_id.txt (cmake/WriteBuildInfo.cmake)
# Exit status: 0 when all hold; 1 naming each binary and what it did wrong; 2 on bad usage.
set -uo pipefail

if [ $# -ne 3 ]; then
  echo "usage: check_binaries.sh BINDIR VERSION BUILD_ID_FILE" >&2
  exit 2
fi
bindir=$1 version=$2 id_file=$3
if [ ! -r "$id_file" ]; then
  echo "check_binaries: cannot read the build id file $id_file" >&2
  exit 2
fi
build_id=$(cat "$id_file")
if ! [[ $build_id =~ ^[A-Za-z0-9._+-]+$ ]]; then
  echo "check_binaries: $id_file holds no build id: '$build_id'" >&2
  exit 2
fi

err_file=$(mktemp)
trap 'rm -f "$err_file"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# BINARY and a flag its --help must show.
for pair in benchd:--listen bench-agent:--controller bench-train:--model benchctl:--server; do
  name=${pair%%:*} flag=${pair#*:}
  binary=$bindir/$name
  if [ ! -x "$binary" ]; then
    fail "$binary: missing or not executable"
    continue
  fi

  out=$("$binary" --version 2>"$err_file")
  rc=$?
  err=$(cat "$err_file")
  want="$name $version (build $build_id)"
  if [ "$rc" -ne 0 ]; then
    fail "$name --version exited $rc: $out $err"
  elif [ "$out" != "$want" ]; then
    fail "$name --version printed '$out', expected '$want'"
  else
    echo "ok: $out"
  fi

  out=$("$binary" --help 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "$name --help exited $rc"
  elif ! grep -q -- "$name" <<<"$out" || ! grep -q -- "$flag" <<<"$out"; then
    fail "$name --help does not name $name and $flag: $(head -3 <<<"$out")"
  else
    echo "ok: $name --help ($(wc -l <<<"$out") lines)"
  fi
done

if [ "$failures" -ne 0 ]; then
  echo "check_binaries: $failures failure(s) in $bindir"
  exit 1
fi
echo "check_binaries: --version and --help of 4 binaries in $bindir: OK"
