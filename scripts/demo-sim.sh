#!/usr/bin/env bash
# The simulation demo (README, second command): sets everything up, builds the arbiter binary,
# validates the example pool, simulates it (schedule, preempt, bill) with JSON and HTML reports,
# and compares BestFit with FGD on the vendored Alibaba GPU trace. scripts/demo.sh runs it after
# the live daemon demo.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
if [ "${ARBITER_DEMO_BUILT:-0}" != "1" ]; then  # scripts/demo.sh has done both
  ./scripts/setup.sh
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD" -j2 --target arbiter
fi
echo "== arbiter validate -f examples/pool.yaml"
"$BUILD/arbiter" validate -f examples/pool.yaml
echo "== arbiter sim -f examples/pool.yaml"
"$BUILD/arbiter" sim -f examples/pool.yaml --report-json "$BUILD/report.json" --report-html "$BUILD/report.html"
echo "== arbiter sim compare (Alibaba cluster-trace-gpu-v2023, saturate to 130 %, 3 seeds)"
"$BUILD/arbiter" sim compare --nodes data/openb/openb_node_list_gpu_node.csv \
  --pods data/openb/openb_pod_list_default.csv --policies bestfit,fgd --seeds 42-44 \
  --report-html "$BUILD/compare.html"
