#!/usr/bin/env bash
# Installs what benchfleet needs to build and test on Debian 12 (apt-get as root, or
# through sudo). Packages already present are left as they are.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libsqlite3-dev libgtest-dev libgmock-dev prometheus-cpp-dev
  libcli11-dev  # benchctl's command line (ctl/args.cc)
  libtorch-dev libgloo-dev libjpeg62-turbo-dev
  # Debian's libtorch calls the system BLAS for some layers (1x1 convolutions at small
  # batch on one thread); the reference BLAS makes fp32 ResNet-50 ~3.5x slower there.
  # OpenBLAS takes over the libblas.so.3 alternative.
  libopenblas0-pthread
  sqlite3
  # Tests: a real Prometheus (and promtool) scrapes benchd; python3 checks the dashboard.
  prometheus python3
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
