#!/usr/bin/env bash
# Installs what benchfleet needs to build and test on Debian 12 (apt-get as root, or
# through sudo). Packages already present are left as they are.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libsqlite3-dev libgtest-dev libgmock-dev prometheus-cpp-dev
  libcli11-dev  # benchctl's command line (ctl/args.cc)
  libcivetweb-dev  # benchd's web port (httpd/http_server.cc); prometheus-cpp-dev pulls it too
  libjemalloc-dev  # benchd's allocator (server/heap_policy.h)
  libtorch-dev libgloo-dev libjpeg62-turbo-dev
  nlohmann-json3-dev  # bench-train's COCO annotations reader (worker/train/coco_annotations.cc)
  # Debian's libtorch calls the system BLAS for some layers (1x1 convolutions at small
  # batch on one thread); the reference BLAS makes fp32 ResNet-50 ~3.5x slower there.
  # OpenBLAS takes over the libblas.so.3 alternative.
  libopenblas0-pthread
  sqlite3
  # TLS: benchd's web port and token hashes link OpenSSL (httpd/tls_front.cc, auth.cc);
  # deploy/pki's scripts, which operators and the security tests run, call openssl.
  libssl-dev openssl
  # Tests: a real Prometheus (and promtool) scrapes benchd; python3 checks the dashboard.
  prometheus python3
  # tests/e2e/probes_test.py: issue 15's probes from a client apart from the project
  # (Debian's gRPC and protobuf for Python; messages from the v1 API's descriptor set).
  python3-grpcio python3-protobuf
  # ctest bench.pytorch_ssd_reference: tests/bench/pytorch_eager_ssd.py --check (the SSD
  # reference model beside which bench-train's ssd_resnet34 is measured), on the same libtorch.
  python3-torch python3-torchvision
  # The web page's tests drive Debian's Chromium with playwright-core (tests/web/).
  chromium
  # A real two-node Slurm for the Slurm tests (tests/slurm/slurm_cluster.sh): the
  # controller, the node daemon, the clients (sbatch, srun, sinfo, scancel) and munge.
  slurmctld slurmd slurm-client munge
  # systemd-analyze verify and security --offline on deploy/systemd's units
  # (tests/systemd_units_test.sh); systemd need not run.
  systemd
  # The Debian packages (cmake/Packaging.cmake, tests/packages/): CPack's DEB generator
  # computes Depends with dpkg-shlibdeps (dpkg-dev), finding the ELF files with file;
  # git gives --version its build id (cmake/WriteBuildInfo.cmake).
  dpkg-dev file git
  # The fuzzers CI runs (tests/fuzz/run_fuzzers.sh, from tests/run.sh with CI=true):
  # clang 14 with libFuzzer and its sanitizer runtimes (-fsanitize=fuzzer,address,undefined).
  clang-14 libclang-rt-14-dev
)
# No ccache here: CI's machine starts with an empty cache, and its three builds (build/,
# build-asan/, build-fuzz/) use different flags, so it would only add its own overhead.
# Where ccache is installed, tests/run.sh, sanitize.sh and run_fuzzers.sh use it.
# node and npm: benchd embeds uPlot from web/node_modules (npm ci below) and the web tests
# run on node. Where node is already installed (another packaging of it, with its own npm)
# it is used as it is; otherwise Debian's nodejs and npm.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi
# kubectl renders deploy/k8s's kustomizations for tests/k8s (kustomize is built in): any
# kubectl already installed (e.g. the Kubernetes project's own package, also named
# kubectl, which conflicts with Debian's), else Debian's kubernetes-client (1.20).
if ! command -v kubectl >/dev/null 2>&1; then
  packages+=(kubernetes-client)
fi

# node_modules as each package-lock.json pins it: web/ (uplot, playwright-core) and
# tests/k8s/ (kubernetes-models, yaml: the manifests' schema check); npm ci unless npm ls
# finds exactly those versions already there.
install_web_modules() {
  local root dir
  root="$(cd "$(dirname "$0")/.." && pwd)"
  for dir in web tests/k8s; do
    if npm ls --prefix "$root/$dir" >/dev/null 2>&1; then
      echo "install-deps: $dir/node_modules present"
    else
      echo "install-deps: npm ci --prefix $dir"
      npm ci --prefix "$root/$dir" --no-audit --no-fund
    fi
  done
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  install_web_modules
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
install_web_modules
