#!/usr/bin/env bash
# cmake/WriteBuildInfo.cmake, the build id behind every binary's --version, run on
# throw-away trees: "unknown" outside git (and in a folder of someone else's
# repository), the 12-digit commit in a clean work tree, "-dirty" after a change to a
# tracked file but not for an untracked one, the same in a tree another user owns (as
# root), -DBUILD_ID winning over git, a bad id refused with a message naming it, and the
# generated files left untouched (mtime kept) when nothing changed, so that nothing
# recompiles.
#
# Usage: build_id_test.sh SOURCE_DIR   (the benchfleet tree holding cmake/)
# Needs cmake and git.
set -uo pipefail

script=${1:?usage: build_id_test.sh SOURCE_DIR}/cmake/WriteBuildInfo.cmake
[ -r "$script" ] || { echo "build_id_test: no $script" >&2; exit 2; }
git=$(command -v git) || { echo "build_id_test: git is not installed" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# write_info SOURCE [EXTRA -D...]: runs the script into $work/out; its output on stdout.
write_info() {
  local source=$1
  shift
  cmake -DSOURCE_DIR="$source" -DOUTPUT_DIR="$work/out" -DPROJECT_VERSION=1.2.3 \
    -DGIT_EXECUTABLE="$git" "$@" -P "$script" 2>&1
}
expect_id() {  # WHAT WANT
  local got
  got=$(cat "$work/out/build_id.txt")
  if [ "$got" = "$2" ]; then
    echo "ok: $1: $got"
  else
    echo "FAIL: $1: build id '$got', expected '$2'"
    failures=$((failures + 1))
  fi
}

mkdir -p "$work/plain" "$work/repo/sub"
write_info "$work/plain" >/dev/null
expect_id "not in git" unknown
if grep -qF 'const char* ProjectVersion() { return "1.2.3"; }' "$work/out/build_id.cc" &&
   grep -qF 'const char* BuildId() { return "unknown"; }' "$work/out/build_id.cc"; then
  echo "ok: build_id.cc defines ProjectVersion() and BuildId()"
else
  echo "FAIL: build_id.cc:"; cat "$work/out/build_id.cc"; failures=$((failures + 1))
fi

cd "$work/repo" || exit 2
git init -q . && echo one >tracked && echo x >sub/file
git add tracked sub/file && git -c user.name=t -c user.email=t@example.org commit -qm one
commit=$(git rev-parse --short=12 HEAD)
write_info "$work/repo" >/dev/null
expect_id "clean work tree" "$commit"

before=$(stat -c %y "$work/out/build_id.cc")  # nanoseconds
sleep 1.1
write_info "$work/repo" >/dev/null
after=$(stat -c %y "$work/out/build_id.cc")
if [ "$before" = "$after" ]; then
  echo "ok: unchanged id: build_id.cc not rewritten"
else
  echo "FAIL: build_id.cc rewritten though the id did not change"; failures=$((failures + 1))
fi

echo untracked >new-file
write_info "$work/repo" >/dev/null
expect_id "untracked file only" "$commit"

echo two >tracked
write_info "$work/repo" >/dev/null
expect_id "tracked file changed" "$commit-dirty"

if [ "$(id -u)" -eq 0 ]; then  # a checkout owned by someone else, built as root
  chown -R nobody "$work/repo"
  write_info "$work/repo" >/dev/null
  expect_id "work tree owned by another user" "$commit-dirty"
  chown -R root "$work/repo"
fi

write_info "$work/repo/sub" >/dev/null
expect_id "a folder inside another repository" unknown

write_info "$work/repo" -DBUILD_ID=1.2.3-4+deb12 >/dev/null
expect_id "BUILD_ID given" 1.2.3-4+deb12

if out=$(write_info "$work/repo" '-DBUILD_ID=a b'); then
  echo "FAIL: BUILD_ID 'a b' accepted"; failures=$((failures + 1))
elif grep -q 'BENCH_BUILD_ID "a b": only letters, digits' <<<"$out"; then
  echo "ok: BUILD_ID 'a b' refused, naming it"
else
  echo "FAIL: BUILD_ID 'a b' refused without naming it: $out"; failures=$((failures + 1))
fi

if [ "$failures" -ne 0 ]; then
  echo "build_id_test: $failures failure(s)"
  exit 1
fi
echo "build_id_test: OK"
