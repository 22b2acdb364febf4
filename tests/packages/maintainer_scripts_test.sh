#!/usr/bin/env bash
# The packages' maintainer scripts (deploy/debian/*.in, as configured into
# BUILD_DIR/debian/{controller,agent}/) run against a stand-in systemctl that records its
# arguments, in a private mount namespace whose /run is a fresh tmpfs: with
# /run/systemd/system present (systemd "running") and without it, with and without
# DPKG_ROOT, for each dpkg action. Checks which systemctl calls each makes, that each
# exits 0, and that a failing systemctl does not fail the package operation.
#
# Usage: maintainer_scripts_test.sh BUILD_DIR   (as root: unshare and mount)
set -uo pipefail

if [ "${1:-}" != --inside ]; then
  [ $# -eq 1 ] || { echo "usage: maintainer_scripts_test.sh BUILD_DIR" >&2; exit 2; }
  if [ ! -d "$1/debian/controller" ]; then
    echo "maintainer_scripts_test: no $1/debian/controller (configure the build first)" >&2
    exit 2
  fi
  exec unshare --mount --propagation private bash "${BASH_SOURCE[0]}" --inside "$1"
fi
build=$2
if ! mount -t tmpfs tmpfs /run; then
  echo "maintainer_scripts_test: cannot mount a tmpfs on /run (needs root)" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
cat >"$work/bin/systemctl" <<STUB
#!/bin/sh
echo "\$*" >>"$work/calls"
exit \${SYSTEMCTL_EXIT:-0}
STUB
chmod +x "$work/bin/systemctl"
export PATH=$work/bin:$PATH
failures=0

# expect COMPONENT SCRIPT "ARGS" "CALLS" [ENV=VALUE...]: CALLS joined with ';'.
expect() {
  local component=$1 script=$2 args=$3 want=$4 got rc
  shift 4
  : >"$work/calls"
  # shellcheck disable=SC2086  # ARGS are words
  env "$@" sh "$build/debian/$component/$script" $args >/dev/null 2>&1
  rc=$?
  got=$(paste -sd';' "$work/calls")
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: $component $script $args ($*): exit $rc"
    failures=$((failures + 1))
  elif [ "$got" != "$want" ]; then
    echo "FAIL: $component $script $args ($*): systemctl '$got', expected '$want'"
    failures=$((failures + 1))
  else
    echo "ok: $component $script $args ${*:+($*) }-> '${got}'"
  fi
}

for pair in controller:benchd.service agent:bench-agent.service; do
  component=${pair%%:*} unit=${pair#*:}
  mkdir -p /run/systemd/system
  expect "$component" postinst "configure" "--system daemon-reload"
  expect "$component" postinst "configure 0.0.9" "--system daemon-reload;--system try-restart $unit"
  expect "$component" postinst "abort-upgrade 0.2.0" ""
  expect "$component" prerm "remove" "--system disable --now $unit"
  expect "$component" prerm "upgrade 0.2.0" ""
  expect "$component" postrm "remove" "--system daemon-reload"
  expect "$component" postrm "purge" "--system daemon-reload"
  expect "$component" postrm "upgrade 0.2.0" ""
  # systemctl failing (e.g. a unit that cannot restart) fails no package operation.
  expect "$component" postinst "configure 0.0.9" \
    "--system daemon-reload;--system try-restart $unit" SYSTEMCTL_EXIT=1
  expect "$component" prerm "remove" "--system disable --now $unit" SYSTEMCTL_EXIT=1
  # dpkg working on another root: the host's systemd is left alone.
  expect "$component" postinst "configure 0.0.9" "" DPKG_ROOT=/srv/image
  expect "$component" prerm "remove" "" DPKG_ROOT=/srv/image
  expect "$component" postrm "purge" "" DPKG_ROOT=/srv/image
  # No systemd running (a container, a chroot).
  rm -rf /run/systemd
  expect "$component" postinst "configure 0.0.9" ""
  expect "$component" prerm "remove" ""
  expect "$component" postrm "remove" ""
done

if [ "$failures" -ne 0 ]; then
  echo "maintainer_scripts_test: $failures failure(s)"
  exit 1
fi
echo "maintainer_scripts_test: OK"
