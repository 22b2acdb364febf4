#!/usr/bin/env bash
# Tests tests/ci/checks.sh (ctest house.ci_checks) in fake environments, without a build:
# a PATH of stub tools with one removed at a time, a bench_components.txt with a component
# missing, a Chromium or a Python module that is not there, and real ctest runs over small
# CTestTestfile.cmake trees (a count below, at and above the expected one; a skipped test).
# Usage: tests/ci/checks_test.sh   (exit 0 = pass)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
checks=$here/checks.sh
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ci_checks_test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
failures=0
pass() { echo "PASS: $*"; }
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect NAME RC PATTERN -- COMMAND...: COMMAND exits RC and its output matches PATTERN.
expect() {
  local name=$1 want=$2 pattern=$3
  shift 4
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  if [[ $rc -ne $want ]]; then
    fail "$name: exit $rc, want $want"
    sed 's/^/    /' <<<"$out"
  elif ! grep -qE -- "$pattern" <<<"$out"; then
    fail "$name: output does not match /$pattern/"
    sed 's/^/    /' <<<"$out"
  else
    pass "$name"
  fi
}

# --- components: a fake PATH where every tool is a stub --------------------------------
bin=$TMP/bin
mkdir -p "$bin"
for tool in node npm kubectl prometheus promtool sbatch srun scontrol scancel sinfo \
  slurmctld slurmd munged mungekey systemd-analyze openssl dpkg-deb dpkg-shlibdeps file git \
  chromium; do
  printf '#!/bin/sh\nexit 0\n' >"$bin/$tool"
done
# python3 imports every module but the one named in $TMP/no-module.
cat >"$bin/python3" <<PY
#!/bin/bash
[[ -f $TMP/no-module && "\$*" == *"import \$(cat $TMP/no-module)" ]] && exit 1
exit 0
PY
chmod +x "$bin"/*
build=$TMP/build
mkdir -p "$build"
printf 'found\tlibjpeg (libjpeg62-turbo-dev)\te2e.DataEndToEndTest\nfound\tnode\tthe web.* tests\n' \
  >"$build/bench_components.txt"
env_ok=(env BENCH_CI_PATH="$bin" CHROMIUM="$bin/chromium" KUBECTL=kubectl)

expect "every component present" 0 'every optional component is present' -- \
  "${env_ok[@]}" bash "$checks" components "$build"

printf 'missing\tlibjpeg (libjpeg62-turbo-dev)\te2e.DataEndToEndTest\nfound\tnode\tx\n' \
  >"$TMP/missing.txt"
mkdir -p "$TMP/build-nojpeg" && cp "$TMP/missing.txt" "$TMP/build-nojpeg/bench_components.txt"
expect "a component CMake did not find" 1 \
  'missing component: libjpeg \(libjpeg62-turbo-dev\) \(CMake left out: e2e.DataEndToEndTest\)' -- \
  "${env_ok[@]}" bash "$checks" components "$TMP/build-nojpeg"

for hidden in kubectl promtool slurmd node munged; do
  mv "$bin/$hidden" "$TMP/hidden"
  expect "$hidden hidden" 1 "missing component: .*no $hidden on PATH" -- \
    "${env_ok[@]}" bash "$checks" components "$build"
  mv "$TMP/hidden" "$bin/$hidden"
done

expect "Chromium hidden" 1 'missing component: Chromium \(no executable /nowhere/chromium' -- \
  env BENCH_CI_PATH="$bin" CHROMIUM=/nowhere/chromium bash "$checks" components "$build"

echo torchvision >"$TMP/no-module"
expect "a Python module missing" 1 'python3 module torchvision .*bench.pytorch_ssd_reference' -- \
  "${env_ok[@]}" bash "$checks" components "$build"
rm "$TMP/no-module"

mv "$bin/git" "$TMP/hidden"
for pattern in 'libjpeg' 'no git on PATH' '2 component\(s\) missing'; do
  expect "two missing, both named: /$pattern/" 1 "$pattern" -- \
    "${env_ok[@]}" bash "$checks" components "$TMP/build-nojpeg"
done
mv "$TMP/hidden" "$bin/git"

expect "not configured" 1 'bench_components.txt does not exist' -- \
  "${env_ok[@]}" bash "$checks" components "$TMP/nowhere"

# --- count: real ctest over a tree of 3 tests ------------------------------------------
tree=$TMP/tree
mkdir -p "$tree"
cat >"$tree/CTestTestfile.cmake" <<'CT'
add_test(one "true")
add_test(two "true")
add_test(skipper "sh" "-c" "exit 77")
set_tests_properties(skipper PROPERTIES SKIP_RETURN_CODE 77)
CT
printf '# raised with each new test\n3\n' >"$TMP/count3"
printf '# raised with each new test\n2\n' >"$TMP/count2"
printf '# raised with each new test\n4\n' >"$TMP/count4"
printf '# raised with each new test\nthree\n' >"$TMP/count-bad"
expect "count as expected" 0 'ctest lists 3 tests, as' -- bash "$checks" count "$tree" "$TMP/count3"
expect "count above" 0 'more than the 2 .*raise it to 3' -- bash "$checks" count "$tree" "$TMP/count2"
expect "count below fails naming both" 1 'ctest lists 3 tests in .*, fewer than the 4 that' -- \
  bash "$checks" count "$tree" "$TMP/count4"
expect "count file not a number" 1 "want one number" -- bash "$checks" count "$tree" "$TMP/count-bad"
expect "count file missing" 1 "cannot read the expected test count" -- \
  bash "$checks" count "$tree" "$TMP/none"

# --- skips: real ctest output -----------------------------------------------------------
(cd "$tree" && ctest --output-on-failure >"$TMP/ctest.log" 2>&1) || true
if grep -q '\*\*\*Skipped' "$TMP/ctest.log"; then
  pass "ctest reports the skip"
else
  fail "ctest did not report a skip:"; sed 's/^/    /' "$TMP/ctest.log"
fi
expect "a skipped test fails" 1 'skipped, which CI does not allow: skipper' -- \
  bash "$checks" skips "$TMP/ctest.log"
expect "an allowed skip passes" 0 'no test skipped \(besides /\^skip/\)' -- \
  bash "$checks" skips "$TMP/ctest.log" '^skip'
(cd "$tree" && ctest -E skipper >"$TMP/ctest-clean.log" 2>&1)
expect "no skip passes" 0 'no test skipped' -- bash "$checks" skips "$TMP/ctest-clean.log"

expect "unknown command" 2 usage -- bash "$checks" frobnicate

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all passed"
