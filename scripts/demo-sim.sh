#!/usr/bin/env bash
# Sets everything up, builds the arbiter binary, and runs the main job on the embedded default:
# validate the example pool, simulate it (schedule, preempt, bill) with JSON and HTML reports,
# and compare BestFit with FGD on the vendored Alibaba GPU trace.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j2 --target arbiter
echo "== arbiter validate -f examples/pool.yaml"
"$BUILD/arbiter" validate -f examples/pool.yaml
echo "== arbiter sim -f examples/pool.yaml"
"$BUILD/arbiter" sim -f examples/pool.yaml --report-json "$BUILD/report.json" --report-html "$BUILD/report.html"
echo "== arbiter sim compare (Alibaba cluster-trace-gpu-v2023, saturate to 130 %, 3 seeds)"
"$BUILD/arbiter" sim compare --nodes data/openb/openb_node_list_gpu_node.csv \
  --pods data/openb/openb_pod_list_default.csv --policies bestfit,fgd --seeds 42-44 \
  --report-html "$BUILD/compare.html"
