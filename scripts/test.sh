#!/usr/bin/env bash
# Sets everything up, builds, and runs every test. Used by the README and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --with-browser
BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j2
ctest --test-dir "$BUILD" -j2 --output-on-failure --timeout 900
