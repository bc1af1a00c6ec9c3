#!/usr/bin/env bash
# Sets everything up, builds, and runs every test. Used by the README and by .ci/run.
# The integration tests need real services (SERVICES.md): they are installed here, started and
# stopped by CTest fixtures, and stopped again on exit whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --with-browser
SERVICES=(slurm)
for s in "${SERVICES[@]}"; do ./scripts/services/$s.sh install; done
stop_services() { for s in "${SERVICES[@]}"; do ./scripts/services/$s.sh stop || true; done; }
trap stop_services EXIT
BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j2
ctest --test-dir "$BUILD" -j2 --output-on-failure --timeout 900
