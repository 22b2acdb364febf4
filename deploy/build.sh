#!/usr/bin/env bash
# Configures and builds into ${BUILD_DIR:-build}: everything (benchd, bench-agent,
# bench-train, benchctl, tests), or only the targets named as arguments
# (deploy/build.sh benchd benchctl). Binaries land in $BUILD_DIR/bin.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
cmake --build "$BUILD_DIR" -j "$JOBS" ${1:+--target "$@"}
