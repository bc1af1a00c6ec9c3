#!/usr/bin/env bash
# Memory per live pod in `arbiter serve` (issue 27: 1,000,000 live pods under 4 GiB RSS): for each
# size, starts the real daemon with its defaults, adds 64 nodes of 256 CPUs, creates that many
# running pods (10m CPU each) with 64 keep-alive clients over HTTP, and prints the daemon's RSS
# after the fill, its peak RSS (VmHWM), and bytes per live pod ((RSS - RSS before the pods) / pods).
#
#   bench/serve_memory.sh [SIZES] [ARBITER...]     default 100000,200000 build/arbiter
#
# Several binaries are run alternately, size by size (old and new in the same period), e.g.
#   bench/serve_memory.sh 100000,200000 /tmp/arbiter-main build/arbiter
# Needs build/bench_serve_load (`locked-build build --target bench_serve_load`). Before a large
# size check `free -g`: about 4 KB a pod in the daemon, plus the clients.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${1:-100000,200000}
shift || true
BINS=("$@")
[[ ${#BINS[@]} -gt 0 ]] || BINS=(build/arbiter)
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-28s %9s %9s %9s %12s %9s %9s\n' binary pods rss_mb peak_mb bytes_per_pod creates/s failures
for size in ${SIZES//,/ }; do
  for bin in "${BINS[@]}"; do
    out=$(ARBITER_BENCH_BINARY=$(realpath "$bin") ARBITER_BENCH_MEMORY_PODS=$size \
      build/bench_serve_load --benchmark_filter='BM_ServeLivePodsMemory' \
      --benchmark_format=json 2>/dev/null)
    python3 -c '
import json, sys
b = json.loads(sys.argv[1])["benchmarks"][0]
if "live_pods" not in b:
    sys.exit("%s: %s" % (sys.argv[2], b.get("error_message", "no result")))
print("%-28s %9d %9.0f %9.0f %12.0f %9.0f %9d" % (sys.argv[2][-28:], b["live_pods"], b["rss_mb"],
      b["peak_rss_mb"], b["bytes_per_pod"], b["creates_per_s"], b["failures"]))
' "$out" "$bin"
  done
done
echo "# done $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
