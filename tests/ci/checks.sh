#!/usr/bin/env bash
# CI's checks that the test run did not shrink (issue 24, item 8; tests/run.sh runs them
# with CI=true, docs/ARCHITECTURE.md). Each fails naming what is wrong:
#
#   checks.sh components BUILD_DIR   every optional component is there: the ones CMake
#       detects (BUILD_DIR/bench_components.txt, cmake/Components.cmake) and the tools and
#       Python modules the tests run (node, npm, Chromium, kubectl, Prometheus, Slurm,
#       munge, systemd-analyze, openssl, dpkg-dev, git, python3's grpc, protobuf, torch,
#       torchvision). Exit 1 naming every missing one.
#   checks.sh count BUILD_DIR FILE   `ctest -N` in BUILD_DIR lists at least the number of
#       tests FILE (tests/expected_test_count) says the repository has. Exit 1 naming both
#       numbers when it lists fewer.
#   checks.sh skips LOG [REGEX]      no test was skipped in the ctest output LOG, except
#       those whose name matches REGEX (extended). Exit 1 naming the others.
#
# Environment: BENCH_CI_PATH, the PATH the tools are looked up on (default $PATH);
# CHROMIUM (default /usr/bin/chromium, as tests/web/ read it); KUBECTL (default kubectl,
# as tests/k8s/ reads it); BENCH_CI_PYTHON3 (default: python3 on BENCH_CI_PATH, /usr/bin
# first, as tests/CMakeLists.txt finds it). tests/ci/checks_test.sh runs each check in a
# fake environment.
set -euo pipefail

ci_fail() {
  echo "CI check failed: $*" >&2
}

# ci_find TOOL: the tool's path on BENCH_CI_PATH, or nothing (status 1).
ci_find() {
  PATH="${BENCH_CI_PATH:-$PATH}" command -v "$1" 2>/dev/null
}

check_components() {
  local build=${1:?usage: checks.sh components BUILD_DIR}
  local file=$build/bench_components.txt
  local missing=()
  if [[ ! -f $file ]]; then
    ci_fail "$file does not exist (configure $build with cmake first)"
    return 1
  fi
  local state name what
  while IFS=$'\t' read -r state name what; do
    [[ -n $state ]] || continue
    [[ $state == missing ]] && missing+=("$name (CMake left out: $what)")
  done <"$file"

  # Tools the tests run; each entry: "name|commands separated by spaces|tests that need it".
  local tools=(
    "node|node npm|web.*, deploy.k8s_manifests"
    "kubectl|${KUBECTL:-kubectl}|deploy.k8s_manifests"
    "Prometheus|prometheus promtool|metrics.dashboard_checker, metrics.secure_scrape"
    "Slurm|sbatch srun scontrol scancel sinfo slurmctld slurmd|e2e.slurm_agents, e2e.slurm_allocate"
    "munge|munged mungekey|e2e.slurm_agents, e2e.slurm_allocate"
    "systemd-analyze|systemd-analyze|deploy.systemd_units"
    "openssl|openssl|deploy.pki_scripts, e2e.*Security*, metrics.secure_scrape, web.browser_security"
    "dpkg-dev|dpkg-deb dpkg-shlibdeps file|deploy.debs"
    "git|git|deploy.build_id"
  )
  local entry tool absent tests
  for entry in "${tools[@]}"; do
    IFS='|' read -r name what tests <<<"$entry"
    absent=()
    for tool in $what; do
      ci_find "$tool" >/dev/null || absent+=("$tool")
    done
    ((${#absent[@]} == 0)) || missing+=("$name (no ${absent[*]} on PATH; needed by $tests)")
  done

  local chromium=${CHROMIUM:-/usr/bin/chromium}
  [[ -x $chromium ]] || missing+=("Chromium (no executable $chromium; needed by web.browser, web.browser_security)")

  local python=${BENCH_CI_PYTHON3:-}
  if [[ -z $python ]]; then
    if [[ -x /usr/bin/python3 && -z ${BENCH_CI_PATH:-} ]]; then
      python=/usr/bin/python3
    else
      python=$(ci_find python3) || python=""
    fi
  fi
  if [[ -z $python ]]; then
    missing+=("python3 (not on PATH; needed by e2e.probes, e2e.slurm_*, bench.pytorch_ssd_reference)")
  else
    local module
    for entry in "grpc|e2e.probes (python3-grpcio)" "google.protobuf|e2e.probes (python3-protobuf)" \
      "torch|bench.pytorch_ssd_reference (python3-torch)" \
      "torchvision|bench.pytorch_ssd_reference (python3-torchvision)"; do
      IFS='|' read -r module tests <<<"$entry"
      "$python" -c "import $module" >/dev/null 2>&1 ||
        missing+=("python3 module $module ($python cannot import it; needed by $tests)")
    done
  fi

  if ((${#missing[@]})); then
    local m
    for m in "${missing[@]}"; do ci_fail "missing component: $m"; done
    ci_fail "${#missing[@]} component(s) missing; with CI=true every test must run" \
      "(deploy/install-deps.sh installs them)"
    return 1
  fi
  echo "CI check: every optional component is present"
}

check_count() {
  local build=${1:?usage: checks.sh count BUILD_DIR FILE} file=${2:?usage: checks.sh count BUILD_DIR FILE}
  local expected listing actual
  if [[ ! -r $file ]]; then
    ci_fail "cannot read the expected test count $file"
    return 1
  fi
  expected=$(grep -v '^[[:space:]]*#' "$file" | tr -d '[:space:]')
  if [[ ! $expected =~ ^[0-9]+$ ]]; then
    ci_fail "$file: want one number besides # comment lines, found '${expected:0:40}'"
    return 1
  fi
  if ! listing=$(ctest --test-dir "$build" -N 2>&1); then
    ci_fail "ctest -N in $build failed: $(tail -n 3 <<<"$listing")"
    return 1
  fi
  actual=$(sed -n 's/^Total Tests: *\([0-9][0-9]*\)$/\1/p' <<<"$listing")
  if [[ -z $actual ]]; then
    ci_fail "ctest -N in $build printed no 'Total Tests:' line"
    return 1
  fi
  if ((actual < expected)); then
    ci_fail "ctest lists $actual tests in $build, fewer than the $expected that $file says" \
      "the repository has (a test or a component was dropped; or lower the file with the" \
      "commit that removes tests on purpose)"
    return 1
  fi
  if ((actual > expected)); then
    echo "CI check: ctest lists $actual tests, more than the $expected of $file: raise it to $actual"
  else
    echo "CI check: ctest lists $actual tests, as $file says"
  fi
}

check_skips() {
  local log=${1:?usage: checks.sh skips LOG [REGEX]} allowed=${2:-}
  local skipped=() name
  if [[ ! -r $log ]]; then
    ci_fail "cannot read the ctest output $log"
    return 1
  fi
  # ctest's lines: "  3/12 Test  #7: server.Foo.Bar ........***Skipped   0.01 sec"
  while read -r name; do
    [[ -n $allowed && $name =~ $allowed ]] && continue
    skipped+=("$name")
  done < <(sed -n 's/^.*Test *#[0-9]*: \([^ ]*\) .*\*\*\*Skipped.*$/\1/p' "$log")
  if ((${#skipped[@]})); then
    ci_fail "${#skipped[@]} test(s) skipped, which CI does not allow: ${skipped[*]}"
    return 1
  fi
  echo "CI check: no test skipped${allowed:+ (besides /$allowed/)}"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  command=${1:-}
  shift || true
  case $command in
    components) check_components "$@" ;;
    count) check_count "$@" ;;
    skips) check_skips "$@" ;;
    *)
      echo "usage: $0 components BUILD_DIR | count BUILD_DIR FILE | skips LOG [REGEX]" >&2
      exit 2
      ;;
  esac
fi
