#!/usr/bin/env bash
# Packs benchd, bench-agent and benchctl as built here (Debian 12) with the shared
# libraries a GPU machine may lack (gRPC, protobuf, Abseil, SQLite, prometheus-cpp, re2,
# c-ares, OpenSSL, ...) into one folder to carry to the GPU machine, where
# tests/cuda/first_light.sh runs them (docs/first-light.md). bench-train is not packed:
# it is built there, against that machine's PyTorch.
#
# Usage: deploy/gpu/bundle.sh [DEST]     (DEST default .gpu-bundle, ignored by git)
#   env BIN: where the binaries are (default build/bin; built by deploy/build.sh)
#
# DEST/bin/NAME      a wrapper: LD_LIBRARY_PATH=DEST/lib, then exec DEST/libexec/NAME
# DEST/libexec/NAME  the stripped binaries
# DEST/lib           their libraries, found with ldd, stripped; glibc, libstdc++ and
#                    libgcc_s are left to the machine
# DEST/compat        this host's glibc, libstdc++ and libgcc_s, for a machine whose own
#                    are older than the binaries need (see MANIFEST): with
#                    BENCH_BUNDLE_COMPAT=1 the wrappers run the binaries through
#                    DEST/compat's dynamic loader instead of the machine's
# DEST/MANIFEST      build host, commit, sizes, the newest GLIBC_/GLIBCXX_ versions needed
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=${BIN:-$ROOT/build/bin}
DEST=${1:-$ROOT/.gpu-bundle}
PROGRAMS=(benchd bench-agent benchctl)

for p in "${PROGRAMS[@]}"; do
  [ -x "$BIN/$p" ] || { echo "bundle: $BIN/$p is missing (run deploy/build.sh)" >&2; exit 1; }
done
command -v strip >/dev/null || { echo "bundle: strip (binutils) is missing" >&2; exit 1; }

# glibc's own libraries stay with the machine (they must match its dynamic loader), as do
# the compiler's runtime libraries; they go to compat/ only.
is_system_lib() {
  case "$1" in
    ld-linux*|libc.so.*|libm.so.*|libmvec.so.*|libpthread.so.*|libdl.so.*|librt.so.*|\
    libutil.so.*|libresolv.so.*|libanl.so.*|libnsl.so.*|libnss_*|libthread_db.so.*|\
    libBrokenLocale.so.*|libc_malloc_debug.so.*|libmemusage.so|libstdc++.so.*|libgcc_s.so.*|\
    linux-vdso.so.*|linux-gate.so.*) return 0 ;;
  esac
  return 1
}

tmp=$(mktemp -d "${DEST%/}.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/libexec" "$tmp/lib" "$tmp/compat"

declare -A libs=() compat=()
for p in "${PROGRAMS[@]}"; do
  cp "$BIN/$p" "$tmp/libexec/$p"
  strip --strip-all "$tmp/libexec/$p"
  while read -r name _ path _; do
    case "$path" in /*) ;; *) continue ;; esac
    if is_system_lib "$name"; then compat[$name]=$path; else libs[$name]=$path; fi
  done < <(ldd "$BIN/$p" | awk '$2 == "=>" {print $1, $2, $3, $4}')
  if ldd "$BIN/$p" | grep -q 'not found'; then
    echo "bundle: $p has unresolved libraries:" >&2; ldd "$BIN/$p" | grep 'not found' >&2; exit 1
  fi
done
for name in "${!libs[@]}"; do
  cp -L "${libs[$name]}" "$tmp/lib/$name"
  chmod u+w "$tmp/lib/$name"
  strip --strip-unneeded "$tmp/lib/$name"
done

# compat: the loader and every glibc piece the binaries use, plus what name lookups load.
loader=$(readlink -f /lib64/ld-linux-x86-64.so.2)
cp -L "$loader" "$tmp/compat/ld-linux-x86-64.so.2"
for name in "${!compat[@]}"; do
  case "$name" in ld-linux*) continue ;; esac
  cp -L "${compat[$name]}" "$tmp/compat/$name"
done
multiarch=$(dirname "$(readlink -f "$(ldd "$BIN/benchd" | awk '$1 == "libc.so.6" {print $3}')")")
for extra in libnss_files.so.2 libnss_dns.so.2 libresolv.so.2 libgcc_s.so.1 libstdc++.so.6; do
  [ -e "$tmp/compat/$extra" ] || [ ! -e "$multiarch/$extra" ] || cp -L "$multiarch/$extra" "$tmp/compat/$extra"
done
chmod -R u+w "$tmp/compat"
strip --strip-unneeded "$tmp/compat"/lib{stdc++,gcc_s}.so.* 2>/dev/null || true

for p in "${PROGRAMS[@]}"; do
  cat >"$tmp/bin/$p" <<'EOF'
#!/bin/sh
# Runs the bundled program of the same name with the bundle's libraries
# (deploy/gpu/bundle.sh). BENCH_BUNDLE_COMPAT=1: through the bundle's own glibc.
here=$(cd "$(dirname "$0")/.." && pwd)
name=$(basename "$0")
if [ "${BENCH_BUNDLE_COMPAT:-0}" = 1 ]; then
  exec "$here/compat/ld-linux-x86-64.so.2" --library-path "$here/lib:$here/compat" \
    "$here/libexec/$name" "$@"
fi
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/libexec/$name" "$@"
EOF
  chmod 755 "$tmp/bin/$p"
done

newest() {  # PREFIX FILES... -> the newest symbol version with that prefix they need
  objdump -T "${@:2}" 2>/dev/null | grep -o "$1[0-9.]*" | sort -uV | tail -1
}
{
  echo "benchfleet GPU bundle (deploy/gpu/bundle.sh)"
  echo "built on: $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
  echo "commit: $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- 2>/dev/null || echo +dirty)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "needs: $(newest GLIBC_ "$tmp"/libexec/* "$tmp"/lib/*) $(newest GLIBCXX_ "$tmp"/libexec/* "$tmp"/lib/*) $(newest CXXABI_ "$tmp"/libexec/* "$tmp"/lib/*)"
  echo "programs:"; (cd "$tmp" && du -b libexec/* | sort -k2)
  echo "lib:"; (cd "$tmp" && du -b lib/* | sort -k2)
  echo "compat:"; (cd "$tmp" && du -b compat/* | sort -k2)
  echo "total bytes: $(du -sb "$tmp" | cut -f1)"
} >"$tmp/MANIFEST"

rm -rf "$DEST"
mv "$tmp" "$DEST"
trap - EXIT
echo "bundle: $DEST ($(du -sh "$DEST" | cut -f1)): ${#libs[@]} libraries, $(grep '^needs:' "$DEST/MANIFEST")"
