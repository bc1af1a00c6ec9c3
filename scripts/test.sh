#!/usr/bin/env bash
# Sets everything up, builds, and runs every test. Used by the README and by .ci/run.
# The integration tests need real services (Prometheus, ClickHouse, PostgreSQL, Slurm): they are
# installed here (Debian packages, only the missing ones) and started and stopped by CTest
# fixtures (scripts/services/<name>.sh); the trap below stops any left running, by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --with-browser
SERVICES=(prometheus clickhouse postgres slurm)
for s in "${SERVICES[@]}"; do ./scripts/services/$s.sh install; done
stop_services() { for s in "${SERVICES[@]}"; do ./scripts/services/$s.sh stop >/dev/null 2>&1 || true; done; }
trap stop_services EXIT
BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j2
ctest --test-dir "$BUILD" -j2 --output-on-failure --timeout 900
