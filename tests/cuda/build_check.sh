#!/usr/bin/env bash
# Builds bench-train against Debian 13's libtorch 2.x inside Debian 13 chroots, so that a
# Debian 12 host (libtorch 1.13, CPU) can check the trainer's CUDA + NCCL code and run its
# tests against libtorch 2.x. Not part of CI: the first run downloads about 3 GB from
# Debian's archive. docs/cuda-build-check.md says when to run it and records the results.
#
#   sudo tests/cuda/build_check.sh [--fresh] [--only cuda|cpu]
#
# What it does (as root; needs debootstrap):
#   1. creates ROOT/base, a minbase Debian 13 (trixie) with main, contrib, non-free and
#      non-free-firmware, from MIRROR (Debian's archive only), or reuses it;
#   2. creates or reuses two chroots copied from it, sharing one apt archive cache
#      (ROOT/apt-archives, bind-mounted) so that nothing downloads twice:
#        ROOT/cuda: libtorch-cuda-dev (contrib, 2.6) + libnccl-dev + nvidia-cuda-toolkit
#                   + libgloo-cuda-dev;
#        ROOT/cpu:  libtorch-dev (main, 2.6, CPU) + libgloo-dev;
#      nvidia-cudnn's licence question is preseeded to "I Decline": cuDNN is fetched from
#      outside Debian otherwise, and nothing may be. libcudnn.so.9 is therefore absent, so
#      the CUDA build links with -Wl,--allow-shlib-undefined and is never run;
#   3. bind-mounts this checkout read-only at /src in each chroot and builds the trainer
#      alone (-DBENCH_TRAINER_ONLY=ON) in /build/<flavour> inside the chroot (kept between
#      runs for incremental builds; --fresh wipes it);
#   4. CUDA: builds bench-train and fails unless CMake reports cuda=ON, gloo=1 and nccl=ON,
#      the binary links libtorch_cuda and references c10d::ProcessGroupNCCL (it is never
#      run: no GPU, no cuDNN). CPU: builds everything and runs `ctest -L train` (gloo=1
#      required).
# Prints one summary line per flavour and a Markdown row for docs/cuda-build-check.md.
# Exit status: 0 if every step passed, 1 otherwise. Mounts are always undone (trap).
#
# Environment: BENCH_CHROOT_ROOT (/var/lib/benchfleet-chroot), BENCH_DEBIAN_MIRROR
# (http://deb.debian.org/debian), BENCH_CHECK_JOBS (ninja -j, default: nproc),
# ONEDNN_MAX_CPU_ISA (passed to the CPU tests; see "oneDNN on this VM" in the doc).
set -euo pipefail

ROOT=${BENCH_CHROOT_ROOT:-/var/lib/benchfleet-chroot}
MIRROR=${BENCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=trixie
COMPONENTS=main,contrib,non-free,non-free-firmware
JOBS=${BENCH_CHECK_JOBS:-$(nproc)}
REPO=$(cd "$(dirname "$0")/../.." && pwd)

# Gloo's headers come from libgloo-dev, or libgloo-cuda-dev with the CUDA libtorch (the
# two conflict).
COMMON_PACKAGES="build-essential cmake ninja-build libgtest-dev libgmock-dev libjpeg62-turbo-dev nlohmann-json3-dev"
CUDA_PACKAGES="$COMMON_PACKAGES libtorch-cuda-dev libnccl-dev nvidia-cuda-toolkit libgloo-cuda-dev"
CPU_PACKAGES="$COMMON_PACKAGES libtorch-dev libgloo-dev"

FRESH=0
ONLY=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --fresh) FRESH=1 ;;
    --only) ONLY=${2:?--only needs cuda or cpu}; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "build_check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
case "$ONLY" in ""|cuda|cpu) ;; *) echo "build_check.sh: --only cuda|cpu" >&2; exit 2 ;; esac

die() { echo "build_check.sh: FAIL: $*" >&2; exit 1; }
log() { echo "build_check.sh: $(date -u +%H:%M:%S) $*"; }

[[ $(id -u) -eq 0 ]] || die "must run as root (debootstrap, chroot, mount)"
command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
case "$MIRROR" in
  http://deb.debian.org/*|https://deb.debian.org/*) ;;
  *) echo "build_check.sh: note: mirror $MIRROR is not deb.debian.org; it must be a Debian archive mirror" ;;
esac

mkdir -p "$ROOT" "$ROOT/apt-archives/partial" "$ROOT/logs"
exec 9>"$ROOT/.lock"
flock -n 9 || die "another build_check.sh holds $ROOT/.lock"

START_S=$(date +%s)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
LOG="$ROOT/logs/build_check-$STAMP.log"
exec > >(tee "$LOG") 2>&1
log "log: $LOG; source: $REPO ($(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null || echo '?'))"

# --- Mounts, always undone -------------------------------------------------------------
MOUNTS=()  # mounted paths, unmounted in reverse order
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null ||
      echo "build_check.sh: could not unmount ${MOUNTS[i]}" >&2
  done
  MOUNTS=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mount_into() {  # mount_into CHROOT: /proc, the shared apt cache, the source (read-only)
  local c=$1
  mountpoint -q "$c/proc" || { mount -t proc proc "$c/proc"; MOUNTS+=("$c/proc"); }
  mkdir -p "$c/var/cache/apt/archives" "$c/src" "$c/build"
  if ! mountpoint -q "$c/var/cache/apt/archives"; then
    mount --bind "$ROOT/apt-archives" "$c/var/cache/apt/archives"
    MOUNTS+=("$c/var/cache/apt/archives")
  fi
  if ! mountpoint -q "$c/src"; then
    mount --bind "$REPO" "$c/src"
    MOUNTS+=("$c/src")
    mount -o remount,bind,ro "$c/src"
  fi
}

in_chroot() {  # in_chroot CHROOT COMMAND...: a clean environment, no host variables
  local c=$1
  shift
  chroot "$c" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

# --- 1. The base chroot ----------------------------------------------------------------
if [[ ! -f "$ROOT/base/etc/os-release" ]]; then
  log "creating $ROOT/base (debootstrap $SUITE from $MIRROR)"
  rm -rf "$ROOT/base.tmp"
  debootstrap --variant=minbase --components="$COMPONENTS" "$SUITE" "$ROOT/base.tmp" "$MIRROR"
  mv "$ROOT/base.tmp" "$ROOT/base"
fi
grep -q 'VERSION_CODENAME=trixie' "$ROOT/base/etc/os-release" || die "$ROOT/base is not Debian 13"
# Keep the archive's packages for the flavour chroots (debootstrap's own cache).
cp -n "$ROOT"/base/var/cache/apt/archives/*.deb "$ROOT/apt-archives/" 2>/dev/null || true

# --- 2. The flavour chroots --------------------------------------------------------------
prepare_chroot() {  # prepare_chroot NAME PACKAGES
  local name=$1 packages=$2 c="$ROOT/$1"
  if [[ ! -d "$c" ]]; then
    log "creating $c from $ROOT/base"
    rm -rf "$c.tmp"
    cp -a "$ROOT/base" "$c.tmp"
    mv "$c.tmp" "$c"
  fi
  mount_into "$c"
  if [[ -f "$c/.benchfleet-packages" && "$(cat "$c/.benchfleet-packages")" == "$packages" ]]; then
    log "reusing $c (packages already installed)"
    return
  fi
  log "installing into $c: $packages"
  cp /etc/resolv.conf "$c/etc/resolv.conf"
  # Only Debian's archive: the one source line debootstrap wrote.
  printf 'deb %s %s %s\n' "$MIRROR" "$SUITE" "${COMPONENTS//,/ }" >"$c/etc/apt/sources.list"
  rm -f "$c"/etc/apt/sources.list.d/*
  # No services in a chroot.
  printf '#!/bin/sh\nexit 101\n' >"$c/usr/sbin/policy-rc.d"
  chmod +x "$c/usr/sbin/policy-rc.d"
  # Licences: decline cuDNN's downloader (it fetches from outside Debian).
  in_chroot "$c" debconf-set-selections <<'EOF'
nvidia-cudnn nvidia-cudnn/question select I Decline
EOF
  in_chroot "$c" apt-get update || die "$name: apt-get update failed"
  # shellcheck disable=SC2086
  in_chroot "$c" apt-get install -y --no-install-recommends $packages ||
    die "$name: apt-get install failed"
  # nvidia-cudnn leaves a dangling libcudnn.so link when declined; a real file means it
  # downloaded cuDNN from outside Debian.
  if [[ -n "$(find "$c/usr/lib/x86_64-linux-gnu" -maxdepth 1 -name 'libcudnn*.so*' -type f)" ]]; then
    die "$c has cuDNN's libraries: nothing may be fetched from outside Debian"
  fi
  echo "$packages" >"$c/.benchfleet-packages"
  rm -rf "${c:?}"/build/*  # CMake caches what it found: new packages, fresh builds
}

# --- 3/4. Configure, build, check --------------------------------------------------------
SUMMARY=()
ROW_TORCH="" ROW_FLAGS="" ROW_TESTS="" ROW_ISA=""

# The trainer-only configuration every CUDA build of bench-train uses (the GPU machine's,
# the GPU container's): deploy/gpu/build-trainer.sh, against Debian 13's libtorch.
configure() {  # configure CHROOT BUILD_DIR EXTRA_CMAKE_ARGS...; prints CMake's bench-train line
  local c=$1 dir=$2
  shift 2
  if [[ $FRESH -eq 1 ]]; then rm -rf "${c:?}$dir"; fi
  in_chroot "$c" TORCH_CMAKE_PREFIX=/usr/lib/x86_64-linux-gnu/cmake \
    bash /src/deploy/gpu/build-trainer.sh --configure-only "$dir" "$@" \
    | tee "$c$dir.configure.log"
}

torch_line() {  # torch_line CONFIGURE_LOG: "torch 2.6.0 cuda=ON gloo=1 nccl=ON"
  sed -n 's/.*bench-train: \(torch .*\)$/\1/p' "$1" | tail -n 1
}

check_cuda() {
  local c="$ROOT/cuda" dir=/build/cuda line
  prepare_chroot cuda "$CUDA_PACKAGES"
  log "cuda: versions: $(in_chroot "$c" dpkg-query -W -f '${Package} ${Version}; ' \
    libtorch-cuda-dev libnccl-dev nvidia-cuda-toolkit 2>/dev/null)"
  log "cuda: configure"
  # No libcudnn.so.9 (declined): let the linker accept libtorch_cuda's unresolved symbols.
  # Tests are listed at ctest time, not after linking: the test binaries cannot start here.
  configure "$c" "$dir" -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined \
    -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--allow-shlib-undefined \
    -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST || die "cuda: configure failed"
  line=$(torch_line "$c$dir.configure.log")
  [[ -n "$line" ]] || die "cuda: CMake printed no 'bench-train: torch ...' line"
  log "cuda: $line"
  [[ "$line" == *" cuda=ON "* ]] || die "cuda: CUDA is compiled out ($line)"
  [[ "$line" == *" nccl=ON"* ]] || die "cuda: NCCL is compiled out ($line)"
  [[ "$line" == *" gloo=1 "* ]] || die "cuda: Gloo is compiled out ($line)"
  # Only bench-train: the code that CUDA and NCCL change. The tests compile against the
  # same libtorch 2.6 headers in the CPU build, where they also run.
  log "cuda: build bench-train (link-checked, not run)"
  in_chroot "$c" ninja -C "$dir" -j "$JOBS" bench-train || die "cuda: build failed"
  # The NCCL path is really in the binary (not only configured).
  in_chroot "$c" sh -c "nm -C $dir/bin/bench-train | grep -q 'c10d::ProcessGroupNCCL::ProcessGroupNCCL'" ||
    die "cuda: bench-train does not reference c10d::ProcessGroupNCCL"
  in_chroot "$c" sh -c "readelf -d $dir/bin/bench-train | grep -q 'libtorch_cuda'" ||
    die "cuda: bench-train is not linked against libtorch_cuda"
  SUMMARY+=("cuda: OK: $line; bench-train links libtorch_cuda and ProcessGroupNCCL")
  ROW_FLAGS=$line
}

check_cpu() {
  local c="$ROOT/cpu" dir=/build/cpu line ctest_log counts isa_env=()
  prepare_chroot cpu "$CPU_PACKAGES"
  log "cpu: versions: $(in_chroot "$c" dpkg-query -W -f '${Package} ${Version}; ' \
    libtorch-dev 'libdnnl[0-9]*' 2>/dev/null || true)"
  log "cpu: configure"
  configure "$c" "$dir" || die "cpu: configure failed"
  line=$(torch_line "$c$dir.configure.log")
  [[ -n "$line" ]] || die "cpu: CMake printed no 'bench-train: torch ...' line"
  log "cpu: $line"
  [[ "$line" == *" gloo=1 "* ]] || die "cpu: Gloo is compiled out ($line)"
  log "cpu: build"
  in_chroot "$c" ninja -C "$dir" -j "$JOBS" || die "cpu: build failed"
  # oneDNN 3.7 sizes its brgemm convolution blocks (AVX2 and newer) from the CPU cache
  # sizes in CPUID; on a VM that reports none (no /sys/devices/system/cpu/cpu0/cache)
  # resnet50's convolution backward divides by zero (SIGFPE; docs/cuda-build-check.md).
  # There, cap oneDNN at AVX (no brgemm convolutions) unless the caller chose a cap.
  if [[ -n "${ONEDNN_MAX_CPU_ISA:-}" ]]; then
    isa_env=(ONEDNN_MAX_CPU_ISA="$ONEDNN_MAX_CPU_ISA")
  elif [[ ! -d /sys/devices/system/cpu/cpu0/cache ]]; then
    isa_env=(ONEDNN_MAX_CPU_ISA=AVX)
    log "cpu: this machine reports no CPU caches; running the tests with ${isa_env[*]}"
  fi
  ROW_ISA=${isa_env[*]:-}
  log "cpu: ctest -L train"
  ctest_log="$c$dir.ctest.log"
  set +e
  in_chroot "$c" ${isa_env[@]+"${isa_env[@]}"} ctest --test-dir "$dir" -L train \
    --output-on-failure -j 1 2>&1 | tee "$ctest_log"
  local rc=${PIPESTATUS[0]}
  set -e
  counts=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$ctest_log" | tail -n 1)
  [[ -n "$counts" ]] || counts="no ctest summary"
  ROW_TORCH=$line
  ROW_TESTS=$counts
  if [[ $rc -ne 0 ]]; then
    SUMMARY+=("cpu: FAIL: $line; $counts")
    return 1
  fi
  SUMMARY+=("cpu: OK: $line; $counts")
}

status=0
if [[ -z "$ONLY" || "$ONLY" == cuda ]]; then check_cuda || status=1; fi
cleanup
if [[ -z "$ONLY" || "$ONLY" == cpu ]]; then check_cpu || status=1; fi
cleanup

DURATION=$(( $(date +%s) - START_S ))
echo
echo "=== build_check.sh summary ($(date -u +%Y-%m-%d) UTC, $((DURATION / 60)) min $((DURATION % 60)) s) ==="
for s in "${SUMMARY[@]}"; do echo "  $s"; done
echo "  Markdown row for docs/cuda-build-check.md:"
echo "  | $(date -u +%Y-%m-%d) | $(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null || echo '?')$(git -C "$REPO" diff --quiet HEAD -- worker/train 2>/dev/null || echo '+dirty') | ${ROW_FLAGS:-not run} | ${ROW_TORCH:-not run} | ${ROW_TESTS:-not run} | ${ROW_ISA:-none} | $((DURATION / 60)) min $((DURATION % 60)) s | $([[ $status -eq 0 ]] && echo pass || echo FAIL) |"
exit $status
