#!/usr/bin/env bash
# The test command: installs what is needed (Debian 12), builds, runs every test.
#   tests/run.sh            # all tests
#   tests/run.sh -R e2e     # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
bash deploy/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 1200 -j "${TEST_JOBS:-2}" "$@"
