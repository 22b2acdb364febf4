#!/usr/bin/env bash
# deploy.debs: builds the three Debian packages of a build tree with CPack
# (cmake/Packaging.cmake) into a temporary folder and checks them:
#   - names, Version, Architecture, Maintainer, Description; Depends computed by
#     dpkg-shlibdeps (libc6 and each binary's own libraries: libtorch for the agent only)
#     and satisfied by the packages installed on this machine, as apt would need them;
#   - contents: each package's binaries (the agent's carries bench-train), units in
#     /lib/systemd/system identical to deploy/systemd/, /etc/default files as conffiles,
#     the Grafana and Prometheus files in /usr/share/benchfleet/; nothing outside /etc/default,
#     /lib/systemd/system and /usr; binaries stripped; maintainer scripts parse (sh -n);
#   - apt-get install -s of the three: apt finds every dependency installed here;
#   - installed with dpkg into an empty root: --instdir/--admindir name a fresh dpkg
#     database in a temporary folder, so dpkg itself unpacks, registers the conffiles and
#     runs the real maintainer scripts (--force-script-chrootless: an empty root has no
#     /bin/sh to chroot into; dpkg sets DPKG_ROOT, which the scripts honour by leaving
#     systemd alone) and catches files claimed by two packages; --force-depends because
#     that database lacks the base system (dpkg-deb -x would check none of this). Then
#     each installed binary's --version (version and build id) and --help
#     (check_binaries.sh), and remove (conffile kept) and purge (conffile gone).
#
# Usage: debs_test.sh BUILD_DIR SOURCE_DIR VERSION BUILD_ID_FILE
# Needs cpack, dpkg, dpkg-deb, dpkg-shlibdeps (dpkg-dev), file and readelf (binutils).
set -uo pipefail

if [ $# -ne 4 ]; then
  echo "usage: debs_test.sh BUILD_DIR SOURCE_DIR VERSION BUILD_ID_FILE" >&2
  exit 2
fi
build=$1 source=$2 version=$3 id_file=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ -r "$build/CPackConfig.cmake" ] || { echo "debs_test: no $build/CPackConfig.cmake" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
ok() { echo "ok: $*"; }

started=$(date +%s)
if ! cpack --config "$build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1; then
  cat "$work/cpack.log"
  echo "debs_test: cpack failed"
  exit 1
fi
ok "cpack built $(ls "$work/out"/*.deb | wc -l) packages in $(($(date +%s) - started)) s"

arch=$(dpkg --print-architecture)
declare -A deb
for package in controller agent cli; do
  deb[$package]=$work/out/benchfleet-${package}_${version}_${arch}.deb
  [ -f "${deb[$package]}" ] || fail "no $(basename "${deb[$package]}") in: $(ls "$work/out")"
done
[ "$(ls "$work/out"/*.deb | wc -l)" -eq 3 ] || fail "expected 3 .debs, got: $(ls "$work/out")"
[ "$failures" -eq 0 ] || exit 1

# Every Depends entry ("name (op version)", alternatives with |) installed here.
depends_satisfied() {  # PACKAGE DEPENDS
  local entry alternative name op want have satisfied
  IFS=',' read -ra entries <<<"$2"
  for entry in "${entries[@]}"; do
    satisfied=0
    IFS='|' read -ra alternatives <<<"$entry"
    for alternative in "${alternatives[@]}"; do
      read -r name op want <<<"$(sed -E 's/[()]/ /g' <<<"$alternative")"
      name=${name%:any}
      have=$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null |
        sed -n 's/^install ok installed //p')
      [ -n "$have" ] || continue
      if [ -z "${op:-}" ] || dpkg --compare-versions "$have" "$op" "$want"; then
        satisfied=1
        break
      fi
    done
    [ "$satisfied" -eq 1 ] ||
      fail "benchfleet-$1: Depends '$entry' is not satisfied on this machine"
  done
}

# PACKAGE: must-have paths and binaries, a library its Depends must name and one it must not.
declare -A files=(
  [controller]="./usr/bin/benchd ./lib/systemd/system/benchd.service ./etc/default/benchd
    ./usr/share/benchfleet/grafana/dashboards/benchfleet.json
    ./usr/share/benchfleet/grafana/provisioning/dashboards/benchfleet.yml
    ./usr/share/benchfleet/grafana/provisioning/datasources/prometheus.yml
    ./usr/share/benchfleet/prometheus/prometheus.yml
    ./usr/share/benchfleet/prometheus/prometheus-local.yml
    ./usr/share/benchfleet/prometheus/prometheus-secure.yml
    ./usr/share/doc/benchfleet-controller/security.md"
  [agent]="./usr/bin/bench-agent ./usr/bin/bench-train ./lib/systemd/system/bench-agent.service
    ./etc/default/bench-agent ./usr/share/doc/benchfleet-agent/agent.md"
  [cli]="./usr/bin/benchctl")
declare -A binaries=([controller]="benchd" [agent]="bench-agent bench-train" [cli]="benchctl")
declare -A unit=([controller]=benchd [agent]=bench-agent [cli]=)
# Space-separated: the controller links jemalloc as its allocator (server/heap_policy.h).
declare -A needs=([controller]="libsqlite3-0 libjemalloc2" [agent]=libtorch [cli]=libgrpc++)
declare -A not_needs=([controller]=libtorch [agent]=libsqlite3 [cli]=libtorch)

for package in controller agent cli; do
  file=${deb[$package]}
  name=benchfleet-$package
  field() { dpkg-deb -f "$file" "$1"; }
  [ "$(field Package)" = "$name" ] || fail "$name: Package is '$(field Package)'"
  [ "$(field Version)" = "$version" ] || fail "$name: Version is '$(field Version)', not $version"
  [ "$(field Architecture)" = "$arch" ] || fail "$name: Architecture is '$(field Architecture)'"
  [[ $(field Maintainer) =~ ^.+\ \<[^@\ ]+@[^@\ ]+\>$ ]] ||
    fail "$name: Maintainer '$(field Maintainer)' is not 'Name <mail>'"
  description=$(field Description)
  [[ $(head -1 <<<"$description") == benchfleet* ]] && [ "$(wc -l <<<"$description")" -ge 2 ] ||
    fail "$name: Description lacks a synopsis and a long description: $description"
  wide=$(sed 's/^ *//' <<<"$description" | awk 'length > 79')
  [ -z "$wide" ] || fail "$name: Description lines over 79 columns: $wide"
  depends=$(field Depends)
  for library in libc6 ${needs[$package]}; do
    grep -qF "$library" <<<"$depends" || fail "$name: Depends lacks $library: $depends"
  done
  grep -qF "${not_needs[$package]}" <<<"$depends" &&
    fail "$name: Depends names ${not_needs[$package]}: $depends"
  depends_satisfied "$package" "$depends"

  listing=$(dpkg-deb -c "$file")
  for path in ${files[$package]}; do
    grep -qE " $(sed 's/[.]/[.]/g' <<<"$path")\$" <<<"$listing" || fail "$name: no $path"
  done
  for binary in ${binaries[$package]}; do
    grep -qE "^-rwxr-xr-x root/root .* \./usr/bin/$binary\$" <<<"$listing" ||
      fail "$name: /usr/bin/$binary is not 0755 root/root"
  done
  shipped_binaries=$(awk '$6 ~ /^\.\/usr\/bin\/./ {sub("./usr/bin/", "", $6); print $6}' \
    <<<"$listing" | sort | tr '\n' ' ')
  want_binaries=$(tr ' ' '\n' <<<"${binaries[$package]}" | sort | tr '\n' ' ')
  [ "$shipped_binaries" = "$want_binaries" ] ||
    fail "$name: ships binaries '$shipped_binaries', expected '$want_binaries'"
  stray=$(awk '$1 !~ /^d/ {print $6}' <<<"$listing" |
    grep -vE '^\./(etc/default|lib/systemd/system|usr/(bin|share))/' || true)
  [ -z "$stray" ] || fail "$name: files outside /etc/default, /lib/systemd/system, /usr: $stray"

  mkdir -p "$work/control/$package"
  dpkg-deb -e "$file" "$work/control/$package"
  if [ -n "${unit[$package]}" ]; then
    conffiles=$(cat "$work/control/$package/conffiles" 2>/dev/null)
    [ "$conffiles" = "/etc/default/${unit[$package]}" ] ||
      fail "$name: conffiles is not exactly /etc/default/${unit[$package]}"
    for script in postinst prerm postrm; do
      if [ ! -x "$work/control/$package/$script" ]; then
        fail "$name: no executable $script"
      elif ! sh -n "$work/control/$package/$script"; then
        fail "$name: $script does not parse"
      elif ! grep -q "${unit[$package]}.service" "$work/control/$package/$script"; then
        fail "$name: $script does not name ${unit[$package]}.service"
      fi
    done
  else
    extra=$(ls "$work/control/$package" | grep -vxE 'control|md5sums' || true)
    [ -z "$extra" ] || fail "$name: unexpected control files: $extra"
  fi
  ok "$name: fields, Depends ($(tr ',' '\n' <<<"$depends" | wc -l) entries), contents," \
    "control files"
done
[ "$failures" -eq 0 ] || { echo "debs_test: $failures failure(s)"; exit 1; }

# apt's view, as an operator installs them (docs/deploy-packages.md): simulated, nothing
# is installed; every dependency is found among this machine's packages.
if apt-get install -s --no-install-recommends "${deb[controller]}" "${deb[agent]}" \
     "${deb[cli]}" >"$work/apt.log" 2>&1 &&
   [ "$(grep -c '^Inst benchfleet-' "$work/apt.log")" -eq 3 ] &&
   ! grep -v '^Inst benchfleet-' "$work/apt.log" | grep -q '^Inst '; then
  ok "apt-get install -s: the 3 packages and nothing else to install"
else
  cat "$work/apt.log"
  fail "apt-get install -s of the three packages"
fi

# An empty root with a fresh dpkg database.
root=$work/root admin=$work/root/var/lib/dpkg
mkdir -p "$admin/info" "$admin/updates"
touch "$admin/status" "$admin/available"
dpkg_root() {
  dpkg --instdir="$root" --admindir="$admin" --force-script-chrootless --force-depends \
    --log=/dev/null "$@" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; return 1; }
}
status_of() { dpkg-query --admindir="$admin" -W -f='${Status}' "$1" 2>/dev/null; }

dpkg_root -i "${deb[controller]}" "${deb[agent]}" "${deb[cli]}" || fail "dpkg -i into $root failed"
for package in controller agent cli; do
  [ "$(status_of "benchfleet-$package")" = "install ok installed" ] ||
    fail "benchfleet-$package: status '$(status_of "benchfleet-$package")' after dpkg -i"
done
for pair in controller:benchd agent:bench-agent; do
  package=${pair%%:*} name=${pair#*:}
  dpkg-query --admindir="$admin" -W -f='${Conffiles}' "benchfleet-$package" |
    grep -q "^ /etc/default/$name [0-9a-f]\{32\}$" ||
    fail "benchfleet-$package: /etc/default/$name is not a registered conffile"
  cmp -s "$root/lib/systemd/system/$name.service" "$source/deploy/systemd/$name.service" ||
    fail "installed $name.service differs from deploy/systemd/$name.service"
  cmp -s "$root/etc/default/$name" "$source/deploy/systemd/$name.default" ||
    fail "installed /etc/default/$name differs from deploy/systemd/$name.default"
done
for binary in benchd bench-agent bench-train benchctl; do
  if readelf -S "$root/usr/bin/$binary" | grep -qE '\.debug_|\.symtab'; then
    fail "/usr/bin/$binary is not stripped"
  fi
done
[ "$failures" -eq 0 ] && ok "installed into an empty root: 3 packages configured, conffiles" \
  "registered, units and defaults as in deploy/systemd/, binaries stripped"

bash "$here/check_binaries.sh" "$root/usr/bin" "$version" "$id_file" ||
  fail "installed binaries' --version/--help"

dpkg_root -r benchfleet-controller || fail "dpkg -r benchfleet-controller failed"
[ "$(status_of benchfleet-controller)" = "deinstall ok config-files" ] ||
  fail "after dpkg -r: status '$(status_of benchfleet-controller)'"
[ ! -e "$root/usr/bin/benchd" ] || fail "after dpkg -r: /usr/bin/benchd is still there"
[ -f "$root/etc/default/benchd" ] || fail "after dpkg -r: the conffile /etc/default/benchd is gone"
dpkg_root -P benchfleet-controller || fail "dpkg -P benchfleet-controller failed"
[ ! -e "$root/etc/default/benchd" ] || fail "after dpkg -P: /etc/default/benchd is still there"
[ -x "$root/usr/bin/bench-agent" ] || fail "removing the controller took bench-agent with it"
[ "$failures" -eq 0 ] &&
  ok "dpkg -r keeps /etc/default/benchd, dpkg -P removes it, the other packages stay"

if [ "$failures" -ne 0 ]; then
  echo "debs_test: $failures failure(s)"
  exit 1
fi
echo "debs_test: OK ($(($(date +%s) - started)) s)"
