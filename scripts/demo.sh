#!/usr/bin/env bash
# Sets everything up, builds the arbiter binary, and runs the main job on the embedded default:
# validate the example pool and simulate it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j2 --target arbiter
"$BUILD/arbiter" validate -f examples/pool.yaml
"$BUILD/arbiter" sim -f examples/pool.yaml --report-json "$BUILD/report.json"
